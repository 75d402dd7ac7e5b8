// util/regex.cc — PCRE2 (8-bit, no UTF) behind orch::Regex.
//
// The compiled code is shared (immutable, safe to use from several threads);
// match data and the match context are per thread, so a Regex can be used from
// several threads at once without locks. Limits bound the work of one match: a
// catastrophic pattern on big input ends with an error instead of hanging.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "util/regex.h"

#include <fmt/format.h>
#include <pcre2.h>

#include <array>

namespace orch {

namespace {

// Limits on one search(). kMatchLimit bounds backtracking steps (10M is well under
// a second) and catches catastrophic patterns. The JIT's nesting depth is bounded
// by its stack (kJitStackMax); the interpreter's (used when JIT is unavailable) by
// kDepthLimit and kHeapLimitKib. Both let a group repeated once per line run over
// 100k lines of output, which a 10k depth or PCRE2's 32 KiB default JIT stack do not.
constexpr std::uint32_t kMatchLimit = 10'000'000;
constexpr std::uint32_t kDepthLimit = 1'000'000;
constexpr std::uint32_t kHeapLimitKib = 256 * 1024;
constexpr std::size_t kJitStackMax = 8 * 1024 * 1024;

std::string pcre2_message(int error_code) {
  std::array<PCRE2_UCHAR, 256> buf{};
  int n = pcre2_get_error_message(error_code, buf.data(), buf.size());
  if (n < 0) return fmt::format("PCRE2 error {}", error_code);
  return std::string(reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(n));
}

// What a match needs besides the compiled code, made once per thread and reused by
// every search() on it (so a search allocates nothing): the limits, a JIT stack
// (reserved with mmap, touched only as deep matches need it), and match data with
// room for one pair, since search() reports only whether there was a match.
struct MatchScratch {
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, kJitStackMax, nullptr);
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);

  MatchScratch() {
    if (context == nullptr) return;
    pcre2_set_match_limit(context, kMatchLimit);
    pcre2_set_depth_limit(context, kDepthLimit);
    pcre2_set_heap_limit(context, kHeapLimitKib);
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchScratch() {
    pcre2_match_data_free(data);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;
};

MatchScratch& thread_scratch() {
  thread_local MatchScratch scratch;
  return scratch;
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Expected<Regex> Regex::compile(std::string_view pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_NEVER_UTF, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    return fail(ErrorCode::InvalidInput, fmt::format("bad regex '{}': {} at offset {}", pattern,
                                                     pcre2_message(error_code), error_offset));
  }
  // JIT makes checks on multi-megabyte results fast; when it is unavailable the
  // interpreter is used (same results, same limits).
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  Regex re;
  re.code_ = std::make_shared<Code>();
  re.code_->code = code;
  re.pattern_ = std::string(pattern);
  return re;
}

Expected<bool> Regex::search(std::string_view subject) const {
  if (!code_) return fail(ErrorCode::Internal, "search() on a regex that was never compiled");
  MatchScratch& scratch = thread_scratch();
  if (scratch.context == nullptr || scratch.data == nullptr) {
    return fail(ErrorCode::Internal, "out of memory for a regex match");
  }

  // An empty string_view may have a null data(); PCRE2 wants a valid pointer.
  static constexpr char kEmpty[] = "";
  const char* bytes = subject.data() != nullptr ? subject.data() : kEmpty;
  int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(bytes), subject.size(), 0, 0,
                       scratch.data, scratch.context);
  if (rc >= 0) return true;
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  std::string why = pcre2_message(rc);
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
      rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    return fail(ErrorCode::InvalidInput,
                fmt::format("regex '{}' gave up on {} bytes of input: {} (the pattern backtracks "
                            "too much; make it more specific)",
                            pattern_, subject.size(), why));
  }
  return fail(ErrorCode::InvalidInput, fmt::format("regex '{}' failed: {}", pattern_, why));
}

}  // namespace orch
