#include "util/secrets.h"

#include <algorithm>
#include <array>
#include <cctype>

extern char** environ;

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
  // The common case: no secrets, or a text too short to hold one.
  if (values_.empty() || text.size() < values_.back().size()) return std::string(text);
  std::string out(text);
  std::string next;
  for (const auto& value : values_) {
    std::size_t hit = out.find(value);
    if (hit == std::string::npos) continue;
    next.clear();
    next.reserve(out.size());
    std::size_t from = 0;
    for (; hit != std::string::npos; hit = out.find(value, from)) {
      next.append(out, from, hit - from);
      next.append(kMask);
      from = hit + value.size();
    }
    next.append(out, from, std::string::npos);
    out.swap(next);
  }
  return out;
}

}  // namespace orch
