// The format of a snapshot folder: its manifest's encoding, and the marks on
// it. See snapshot_manifest.h and snapshot.h.
#include "engine/snapshot_manifest.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "engine/snapshot.h"

namespace orch {

namespace fs = std::filesystem;
using nlohmann::json;

namespace snapshot_detail {

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    out += kDigits[u >> 4];
    out += kDigits[u & 15];
  }
  return out;
}

std::string unhex(std::string_view text) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i + 1 < text.size(); i += 2) {
    const int hi = digit(text[i]), lo = digit(text[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

// A hex field of a manifest entry, as bytes ("" when absent).
std::string field(const json& entry, const char* name) {
  auto it = entry.find(name);
  return it != entry.end() && it->is_string() ? unhex(it->get<std::string>()) : std::string();
}

std::string os_error(const fs::path& path, const char* what) {
  return fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(errno));
}

// Whether `path` is `folder` or inside it (both absolute and normal).
bool in_folder(const fs::path& path, const fs::path& folder) {
  auto [f, p] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return f == folder.end() || (std::next(f) == folder.end() && f->empty());
}

// Copies `size` bytes of `from` into `to` (open, empty or truncated), leaving
// the holes of a sparse file as holes.
Expected<void> copy_content(int from, int to, off_t size, const fs::path& shown) {
  std::vector<char> buffer(static_cast<std::size_t>(std::clamp<off_t>(size, 1, 1 << 20)));
  auto copy_range = [&](off_t begin, off_t end) -> Expected<void> {
    while (begin < end) {
      const auto want =
          static_cast<std::size_t>(std::min<off_t>(end - begin, static_cast<off_t>(buffer.size())));
      const ssize_t got = ::pread(from, buffer.data(), want, begin);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return fail(ErrorCode::Io, os_error(shown, "read"));
      if (got == 0) break;  // it shrank meanwhile: what was there is what is kept
      for (ssize_t put = 0; put < got;) {
        const ssize_t n = ::pwrite(to, buffer.data() + put, static_cast<std::size_t>(got - put), begin + put);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(ErrorCode::Io, os_error(shown, "write a copy of"));
        put += n;
      }
      begin += got;
    }
    return {};
  };
  for (off_t at = 0; at < size;) {
    const off_t data = ::lseek(from, at, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // a hole up to the end
    if (data < 0) {                         // no SEEK_DATA here: all of it is data
      ORCH_TRY(copy_range(at, size));
      break;
    }
    off_t hole = ::lseek(from, data, SEEK_HOLE);
    if (hole < 0 || hole > size) hole = size;
    ORCH_TRY(copy_range(data, hole));
    at = hole;
  }
  if (::ftruncate(to, size) != 0) return fail(ErrorCode::Io, os_error(shown, "size a copy of"));
  return {};
}

std::optional<json> read_manifest(const fs::path& snapshot_dir) {
  std::ifstream in(snapshot_dir / kManifest, std::ios::binary);
  if (!in) return std::nullopt;
  return json::parse(in, nullptr, false);
}

}  // namespace snapshot_detail

using snapshot_detail::kManifest;
using snapshot_detail::kPutBack;

Expected<void> mark_snapshot_put_back(const fs::path& snapshot_dir) {
  std::error_code ec;
  fs::rename(snapshot_dir / kManifest, snapshot_dir / kPutBack, ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("{}: {}", snapshot_dir.string(), ec.message()));
  return {};
}

bool snapshot_put_back(const fs::path& snapshot_dir) {
  std::error_code ec;
  return fs::exists(snapshot_dir / kPutBack, ec);
}

}  // namespace orch
