// flows/checklist.h — TriggerJob's first signal: an enumerated checklist in a request.
//
// Lines starting "1." / "1)" / "(1)" numbered 1, 2, ... in order (the longest
// such run), else "- " / "* " / "+ " / "• " bullets ("- [ ]" checkboxes too),
// else an inline "(1) ... (2) ..." / "1) ... 2) ..." sequence. Markers inside ```
// fences are not read; "1." inside "v1.2" or prose is not a marker (a marker
// starts a line and is followed by a space). Pure and thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace orch::flows {

// The items' text, in order: two or more, or none (one item is no checklist).
std::vector<std::string> checklist_items(std::string_view request);

}  // namespace orch::flows
