// PgStore's attempt output: a finished attempt's log files, kept in the database.
//
// While an attempt runs its streams go to log files under folder() on the
// machine running it. When its record becomes final (finish_attempt, or
// insert_attempt of a finished one) the files are complete: they are read here,
// in the same transaction, into attempt_output rows of at most kChunkBytes each,
// so that the output is the ledger's from then on — readable from any machine,
// and after the local files are gone. The files are capped by the executor
// already (the record's *_truncated); this copies what is there.
#include <fmt/format.h>

#include <filesystem>

#include "postgres/pg_rows.h"
#include "postgres/pg_store.h"

namespace orch {

namespace rows = detail::pg_rows;
using detail::PgParams;

namespace {

// 256 KiB: large enough that a big log is few rows, small enough that one row
// is never a burden to the server's memory or to a reader's.
constexpr std::size_t kChunkBytes = 256 * 1024;

const char* stream_name(AttemptStream stream) {
  return stream == AttemptStream::Stdout ? "stdout" : "stderr";
}

}  // namespace

Expected<void> PgStore::keep_outputs(const AttemptRecord& a) {
  for (AttemptStream stream : {AttemptStream::Stdout, AttemptStream::Stderr}) {
    const std::string& path = stream == AttemptStream::Stdout ? a.stdout_path : a.stderr_path;
    // A stream kept in the record (stdout_text), or that wrote nothing (no file
    // was made), has nothing to copy.
    std::error_code ec;
    if (path.empty() || !std::filesystem::exists(path, ec)) continue;
    std::string pending;
    int seq = 0;
    auto flush = [&]() -> Expected<void> {
      ORCH_TRY(conn_->exec_later(
          fmt::format("keeping the {} of attempt {} of step '{}'", stream_name(stream), a.number, a.step_id),
          rows::kInsertOutputChunk,
          PgParams()
              .text(a.run_id)
              .text(a.step_id)
              .integer(a.number)
              .text(stream_name(stream))
              .integer(seq++)
              .bytes(pending)));
      pending.clear();
      return {};
    };
    Expected<void> written;
    ORCH_TRY(Store::read_attempt_output(a, stream, [&](std::string_view piece) {
      while (written && !piece.empty()) {
        const std::size_t take = std::min(piece.size(), kChunkBytes - pending.size());
        pending.append(piece.substr(0, take));
        piece.remove_prefix(take);
        if (pending.size() == kChunkBytes) written = flush();
      }
    }));
    ORCH_TRY(std::move(written));
    if (!pending.empty()) ORCH_TRY(flush());
  }
  return {};
}

Expected<OutputRead> PgStore::read_attempt_output(const AttemptRecord& a, AttemptStream stream,
                                                  const std::function<void(std::string_view)>& sink) const {
  const std::string& path = stream == AttemptStream::Stdout ? a.stdout_path : a.stderr_path;
  if (path.empty()) return Store::read_attempt_output(a, stream, sink);  // kept in the record
  auto chunks = ORCH_TRY(conn_->exec(
      fmt::format("reading the {} of attempt {} of step '{}'", stream_name(stream), a.number, a.step_id),
      rows::kOutputChunks,
      PgParams().text(a.run_id).text(a.step_id).integer(a.number).text(stream_name(stream))));
  // No rows: the attempt is running (its file is being written), or wrote nothing.
  if (chunks.rows() == 0) return Store::read_attempt_output(a, stream, sink);
  for (int i = 0; i < chunks.rows(); ++i) sink(chunks.bytes(i, 0));
  return OutputRead{OutputSource::Ledger, ""};
}

}  // namespace orch
