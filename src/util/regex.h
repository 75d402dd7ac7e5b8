// util/regex.h — a compiled PCRE2 regular expression (UTF-8 off, so any bytes match).
//
// std::regex is not used: it recurses per character and overflows the stack on
// multi-megabyte step output; PCRE2 has match limits instead.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "orch/error.h"

namespace orch {

class Regex {
 public:
  // Compiles `pattern` (Perl syntax). The error names the pattern, the offset and PCRE2's message.
  static Expected<Regex> compile(std::string_view pattern);
  // True when the pattern matches somewhere in `subject`. A match that exceeds
  // PCRE2's limits is an error, not a silent false.
  Expected<bool> search(std::string_view subject) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::shared_ptr<Code> code_;
  std::string pattern_;
};

}  // namespace orch
