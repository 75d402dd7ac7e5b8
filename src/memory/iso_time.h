// memory/iso_time.h — times as ISO-8601 UTC text, both ways.
//
// Traces stamp their transitions in ISO-8601 ("2026-07-11T09:30:00.123Z"); the
// memory stores milliseconds since the Unix epoch and shows them back as text.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace orch::memory {

// "2026-07-11T09:30:00Z" (seconds precision).
std::string iso8601_utc(std::int64_t ms);

// Reads "YYYY-MM-DDTHH:MM:SS" with an optional fraction and a zone ("Z",
// "+02:00", "-0500"; none means UTC); a space may stand for the "T". nullopt for
// anything else.
std::optional<std::int64_t> parse_iso8601_ms(std::string_view text);

}  // namespace orch::memory
