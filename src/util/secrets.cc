#include "util/secrets.h"

#include <unistd.h>  // environ

#include <algorithm>
#include <array>
#include <cctype>

namespace orch {

namespace {

constexpr std::string_view kMask = "***";

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool SecretMasker::looks_secret(std::string_view name) {
  static constexpr std::array<std::string_view, 6> kMarkers = {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD",
                                                               "CREDENTIAL"};
  std::string up = upper(name);
  for (std::string_view marker : kMarkers)
    if (up.find(marker) != std::string::npos) return true;
  // AUTH, but not the AUTHOR of GIT_AUTHOR_NAME and friends.
  for (std::size_t at = up.find("AUTH"); at != std::string::npos; at = up.find("AUTH", at + 1)) {
    if (up.compare(at, 6, "AUTHOR") != 0) return true;
  }
  return false;
}

bool SecretMasker::looks_secret_only_by_token(std::string_view name) {
  std::string up = upper(name);
  for (std::size_t at = up.find("TOKEN"); at != std::string::npos; at = up.find("TOKEN", at))
    up.replace(at, 5, "_");
  return !looks_secret(up);
}

bool SecretMasker::add_value(std::string_view value) {
  if (value.size() < kMinSecretLength) return false;
  // Keep values_ unique and sorted longest first (ties in byte order, for determinism).
  auto longer_first = [](const std::string& a, std::string_view b) {
    return a.size() != b.size() ? a.size() > b.size() : std::string_view(a) < b;
  };
  auto at = std::lower_bound(values_.begin(), values_.end(), value, longer_first);
  if (at != values_.end() && *at == value) return false;
  values_.insert(at, std::string(value));
  return true;
}

bool SecretMasker::add_if_secret(std::string_view name, std::string_view value) {
  if (!looks_secret(name)) return false;
  // A number under a name that looks secret only for its TOKEN is a setting
  // (MAX_TOKENS=100000), not a credential: masking it would cut every number it
  // occurs in (1000000 -> ***0). A number under KEY, SECRET, PASSWORD and the
  // rest (DB_PASSWORD=739205814), or a long one, stays a secret.
  const bool number = !value.empty() && value.size() < kMinNumericSecretLength &&
                      value.find_first_not_of("0123456789.+-") == std::string_view::npos;
  if (number && looks_secret_only_by_token(name)) return false;
  return add_value(value);
}

SecretMasker SecretMasker::from_assignments(const std::vector<std::string>& assignments) {
  SecretMasker masker;
  for (const auto& entry : assignments) {
    std::string_view kv = entry;
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    masker.add_if_secret(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return masker;
}

SecretMasker SecretMasker::from_environment() {
  SecretMasker masker;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view kv = *entry;
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    masker.add_if_secret(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return masker;
}

std::string SecretMasker::mask(std::string_view text) const {
  std::string out;
  mask_partial(text, true, false, out);
  return out;
}

std::size_t SecretMasker::mask_partial(std::string_view text, bool final, bool cut, std::string& out) const {
  // The common case: no secrets, or a text too short to hold one.
  if (values_.empty() || (final && !cut && text.size() < values_.back().size())) {
    out.append(text);
    return text.size();
  }
  out.reserve(out.size() + text.size());
  std::size_t i = 0;
  std::size_t copied = 0;  // text[copied, i) is still to be appended as is
  while (i < text.size()) {
    std::string_view rest = text.substr(i);
    bool masked = false;
    bool maybe = false;  // rest is a proper start of some secret
    for (const auto& value : values_) {  // longest first
      if (value.front() != rest.front()) continue;
      if (rest.size() >= value.size()) {
        if (rest.compare(0, value.size(), value) == 0) {
          if (maybe && !final) break;  // a longer secret may still match here
          out.append(text.substr(copied, i - copied));
          out.append(kMask);
          i += value.size();
          copied = i;
          masked = true;
          break;
        }
      } else if (value.compare(0, rest.size(), rest) == 0) {
        maybe = true;
      }
    }
    if (masked) continue;
    if (maybe && !final) break;  // decided when more bytes arrive
    if (maybe && cut) {
      out.append(text.substr(copied, i - copied));
      out.append(kMask);
      return text.size();
    }
    ++i;
  }
  out.append(text.substr(copied, i - copied));
  return i;
}

std::string MaskingStream::push(std::string_view bytes) {
  std::string out;
  if (masker_.empty()) {
    out.append(held_).append(bytes);
    held_.clear();
    return out;
  }
  held_.append(bytes);
  std::size_t used = masker_.mask_partial(held_, false, false, out);
  held_.erase(0, used);
  return out;
}

std::string MaskingStream::finish(bool cut) {
  std::string out;
  masker_.mask_partial(held_, true, cut, out);
  held_.clear();
  return out;
}

}  // namespace orch
