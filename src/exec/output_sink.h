// exec/output_sink.h — where one output stream of an attempt goes.
//
// OutputSink writes one stream (stdout or stderr) to its file, up to a cap. The
// file and its parent folders are created when the first byte arrives, so the
// thousands of steps that print nothing cost no file at all. Beyond the cap the
// bytes are counted and discarded — the child is never blocked or killed for
// talking too much — and finish() ends the file with a marker line saying so. Bytes
// are bytes: nothing is decoded or re-encoded.
//
// A sink may also hold its first bytes in memory (`hold`): the file is made only
// when the stream outgrows them, so a stream that ends within them makes no file
// at all and held_text() has all of it (the llm executor keeps a completion in the
// attempt's ledger row that way: creating a file per call cost more than the call).
//
// OutputTail keeps the last bytes of stdout and stderr together, in arrival order:
// what a retry is told about the failure it is retrying.
//
// Neither type is thread-safe; both are driven from the event loop's thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "util/secrets.h"

namespace orch {

class OutputSink {
 public:
  // `path` empty: no file is written. `keep_in_memory`: also keep what the file
  // holds (capped bytes, then the marker) for kept() — stdout, whose text is the
  // step's result. A negative cap counts as 0. `secrets` (may be null; must
  // outlive the sink): their values are written as "***", also when split across
  // reads; the cap counts the bytes as they came from the process.
  // `hold`: up to this many bytes (of what the file would hold, marker
  // included) are kept in memory before the file is made; 0 makes it at the
  // first byte.
  OutputSink(std::filesystem::path path, std::int64_t cap, bool keep_in_memory,
             const SecretMasker* secrets = nullptr, std::size_t hold = 0);
  ~OutputSink();
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;

  void append(std::string_view bytes);

  // Writes the truncation marker (if any bytes were discarded) and closes the
  // file. Idempotent; append() after finish() only counts bytes.
  void finish();

  std::int64_t total_bytes() const { return total_; }
  bool truncated() const { return total_ > cap_; }
  // The file's content (after finish(): including the marker); only when kept.
  std::string& kept() { return kept_; }
  // What the stream itself said of it: kept() without the truncation marker
  // (the first `cap` bytes when it was cut). The step's result is made of this.
  std::string kept_stream() const { return kept_.substr(0, stream_end_); }
  // The first problem creating or writing the file ("" when none). Writing stops
  // at the first problem; counting goes on.
  const std::string& error() const { return error_; }
  // After finish(): true when the whole stream stayed within `hold`, so no file
  // was made and held_text() is what it would have held.
  bool held() const { return finished_ && !spilled_ && hold_ > 0; }
  const std::string& held_text() const { return held_; }

  // "\n[orch: output truncated at N bytes; M bytes discarded]\n".
  static std::string truncation_marker(std::int64_t cap, std::int64_t discarded);

 private:
  void write_to_file(std::string_view bytes);
  void emit(std::string_view bytes);  // to held_ or the file and, when kept, to kept_
  std::size_t stream_end_ = std::string::npos;  // where the marker starts in kept_

  std::filesystem::path path_;
  std::int64_t cap_;
  bool keep_;
  int fd_ = -1;
  bool finished_ = false;
  std::int64_t total_ = 0;
  std::string kept_;
  std::size_t hold_;
  std::string held_;      // the first bytes, while they fit in hold_
  bool spilled_ = false;  // held_ outgrown: written to the file, which takes the rest
  std::string error_;
  std::optional<MaskingStream> masking_;
};

class OutputTail {
 public:
  static constexpr std::size_t kDefaultSize = 2048;
  explicit OutputTail(std::size_t size = kDefaultSize) : size_(size) {}

  void append(std::string_view bytes);
  // The last `size` bytes appended. It may start inside a multi-byte UTF-8
  // sequence of the original output; leading continuation bytes are dropped so
  // the tail itself starts on a character boundary when the output was UTF-8.
  std::string text() const;

 private:
  std::size_t size_;
  std::string buffer_;  // up to 2 * size_ bytes; the last size_ are the tail
  bool cut_ = false;    // bytes before buffer_ were dropped
};

}  // namespace orch
