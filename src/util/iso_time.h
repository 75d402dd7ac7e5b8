// util/iso_time.h — times as ISO-8601 UTC text, both ways.
//
// orch keeps times as milliseconds since the Unix epoch (the ledger, the memory)
// and shows them as ISO-8601 UTC text (reports, traces, lesson notes).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace orch {

// "2026-07-11T09:30:00.123Z" (milliseconds), or "2026-07-11T09:30:00Z" with
// Precision::Seconds.
enum class TimePrecision { Milliseconds, Seconds };
std::string iso8601_utc(std::int64_t ms, TimePrecision precision = TimePrecision::Milliseconds);

// Reads "YYYY-MM-DDTHH:MM:SS" with an optional fraction and a zone ("Z",
// "+02:00", "-0500"; none means UTC); a space may stand for the "T". nullopt for
// anything else.
std::optional<std::int64_t> parse_iso8601_ms(std::string_view text);

}  // namespace orch
