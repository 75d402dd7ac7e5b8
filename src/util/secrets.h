// util/secrets.h — keeping secret values out of what orch stores and prints.
//
// A SecretMasker knows the values of environment variables whose names look like
// secrets (the name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL or
// AUTH, in any case, but not AUTHOR; the value is at least 6 bytes long) and
// replaces every occurrence of such a value in a text with "***". The engine
// applies it to everything it writes to the ledger and to log files, so an API key
// a step echoes does not end up in results, output tails or failure reasons.
// Immutable once built: mask() may be called from several threads.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orch {

class SecretMasker {
 public:
  // Values shorter than this are not masked: they would hit ordinary words.
  static constexpr std::size_t kMinSecretLength = 6;
  // A value of digits (and . + -) shorter than this, under a name that looks
  // secret only for its TOKEN, is a setting, not a secret.
  static constexpr std::size_t kMinNumericSecretLength = 16;

  SecretMasker() = default;  // masks nothing

  // The secrets of this process's environment.
  static SecretMasker from_environment();
  // The secrets among "NAME=value" entries (entries without '=' are ignored).
  static SecretMasker from_assignments(const std::vector<std::string>& assignments);

  // True when a variable of this name is treated as holding a secret.
  static bool looks_secret(std::string_view name);
  // True when the name looks secret only because it holds TOKEN (MAX_TOKENS).
  static bool looks_secret_only_by_token(std::string_view name);

  // Adds `value` if `name` looks secret and the value is long enough; says whether it did.
  bool add_if_secret(std::string_view name, std::string_view value);
  // Adds `value` unconditionally (if long enough), e.g. a key read from a file.
  bool add_value(std::string_view value);

  // `text` with every occurrence of a secret value replaced by "***", scanning
  // left to right and trying longer values first at each position, so a secret
  // containing another is masked whole.
  std::string mask(std::string_view text) const;

  // Masks `text` onto `out` as far as it can be decided: bytes that might start a
  // secret continuing beyond the end of `text` are left over, and the count of
  // bytes consumed is returned (the caller keeps the rest for the next call).
  // With `final`, everything is consumed; a left-over that is the start of a
  // secret is masked too when `cut` says the stream was cut off there.
  std::size_t mask_partial(std::string_view text, bool final, bool cut, std::string& out) const;

  std::size_t longest() const { return values_.empty() ? 0 : values_.front().size(); }

  bool empty() const { return values_.empty(); }
  std::size_t size() const { return values_.size(); }

 private:
  std::vector<std::string> values_;  // unique, longest first
};

// Masks a stream that arrives in pieces (a step's stdout), so a secret split
// across two reads is still masked. Holds back fewer bytes than the longest secret.
class MaskingStream {
 public:
  explicit MaskingStream(const SecretMasker& masker) : masker_(masker) {}
  // The masked bytes that are now certain.
  std::string push(std::string_view bytes);
  // Everything left, masked; `cut`: the stream was cut off (a truncated output),
  // so a held-back start of a secret is masked rather than written.
  std::string finish(bool cut);

 private:
  const SecretMasker& masker_;
  std::string held_;
};

}  // namespace orch
