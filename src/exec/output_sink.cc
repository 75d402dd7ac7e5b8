#include "exec/output_sink.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

namespace orch {

OutputSink::OutputSink(std::filesystem::path path, std::int64_t cap, bool keep_in_memory,
                       const SecretMasker* secrets, std::size_t hold)
    : path_(std::move(path)), cap_(std::max<std::int64_t>(cap, 0)), keep_(keep_in_memory), hold_(hold) {
  spilled_ = hold_ == 0;
  if (secrets != nullptr && !secrets->empty()) masking_.emplace(*secrets);
}

OutputSink::~OutputSink() {
  if (fd_ >= 0) ::close(fd_);
}

std::string OutputSink::truncation_marker(std::int64_t cap, std::int64_t discarded) {
  return fmt::format("\n[orch: output truncated at {} bytes; {} bytes discarded]\n", cap, discarded);
}

void OutputSink::append(std::string_view bytes) {
  if (bytes.empty()) return;
  std::int64_t room = std::max<std::int64_t>(cap_ - total_, 0);
  total_ += static_cast<std::int64_t>(bytes.size());
  if (finished_) return;
  auto keep = bytes.substr(
      0, static_cast<std::size_t>(std::min<std::int64_t>(room, static_cast<std::int64_t>(bytes.size()))));
  // Even a stream that is all over the cap gets its file: the marker must say so.
  // (A held stream gets the marker at finish(), in memory or in the file.)
  if (spilled_ && fd_ < 0 && error_.empty() && !path_.empty()) write_to_file({});
  if (keep.empty()) return;
  if (masking_) {
    emit(masking_->push(keep));
  } else {
    emit(keep);
  }
}

void OutputSink::emit(std::string_view bytes) {
  if (bytes.empty()) return;
  if (keep_) kept_.append(bytes);
  if (!spilled_) {
    if (held_.size() + bytes.size() <= hold_) {
      held_.append(bytes);
      return;
    }
    spilled_ = true;
    write_to_file(held_);
    held_.clear();
    held_.shrink_to_fit();
  }
  write_to_file(bytes);
}

void OutputSink::finish() {
  if (finished_) return;
  finished_ = true;
  if (masking_) emit(masking_->finish(truncated()));
  stream_end_ = kept_.size();
  if (truncated()) emit(truncation_marker(cap_, total_ - cap_));
  if (fd_ >= 0) {
    if (::close(fd_) != 0 && error_.empty()) {
      error_ = fmt::format("cannot write '{}': {}", path_.string(), std::strerror(errno));
    }
    fd_ = -1;
  }
}

void OutputSink::write_to_file(std::string_view bytes) {
  if (path_.empty() || !error_.empty()) return;
  if (fd_ < 0) {
    std::error_code ec;
    if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), ec);
    if (ec) {
      error_ = fmt::format("cannot create folder '{}': {}", path_.parent_path().string(), ec.message());
      return;
    }
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      error_ = fmt::format("cannot create '{}': {}", path_.string(), std::strerror(errno));
      return;
    }
  }
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = fmt::format("cannot write '{}': {}", path_.string(), std::strerror(errno));
      return;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void OutputTail::append(std::string_view bytes) {
  if (bytes.size() >= size_) {
    cut_ = cut_ || !buffer_.empty() || bytes.size() > size_;
    buffer_.assign(bytes.substr(bytes.size() - size_));
    return;
  }
  buffer_.append(bytes);
  // Trim only when twice the size, so the cost stays linear in the bytes appended.
  if (buffer_.size() > 2 * size_) {
    buffer_.erase(0, buffer_.size() - size_);
    cut_ = true;
  }
}

std::string OutputTail::text() const {
  std::size_t start = buffer_.size() > size_ ? buffer_.size() - size_ : 0;
  // Skip at most 3 UTF-8 continuation bytes (10xxxxxx) cut off from their lead byte.
  if (start > 0 || cut_) {
    for (int i = 0;
         i < 3 && start < buffer_.size() && (static_cast<unsigned char>(buffer_[start]) & 0xC0) == 0x80;
         ++i) {
      ++start;
    }
  }
  return buffer_.substr(start);
}

}  // namespace orch
