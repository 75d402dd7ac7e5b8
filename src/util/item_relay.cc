// util/item_relay.cc — relay_items: a bounded queue of item batches between two threads.
#include "util/item_relay.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace orch::detail {

namespace {

// Items a batch holds, and batches the queue holds, before the parser waits: a
// step of a plan is a few hundred bytes of nodes, so about a megabyte in flight.
constexpr std::size_t kRelayBatchItems = 256;
constexpr std::size_t kRelayMaxQueued = 4;

struct RelayItem {
  StreamedList list;
  DocNode node;
};
using RelayBatch = std::vector<RelayItem>;

// Thrown on the parsing thread by the relaying sink when the reader has stopped.
struct RelayStopped {};

class Relay {
 public:
  // Parsing thread: adds an item, sends the batch when it is full.
  void add(StreamedList list, DocNode& node) {
    if (filling_.capacity() == 0) filling_ = take_spent();
    filling_.push_back(RelayItem{list, std::move(node)});
    if (filling_.size() >= kRelayBatchItems) send();
  }

  // Parsing thread: sends what is left and says the parse has ended.
  void finish(std::exception_ptr error) {
    std::unique_lock lock(mutex_);
    if (!filling_.empty()) queued_.push_back(std::move(filling_));
    done_ = true;
    error_ = std::move(error);
    ready_.notify_one();
  }

  // This thread: hands every item to the sink, in order, until the parse ends.
  // Returns the parse's exception, if it threw one.
  std::exception_ptr drain(const ItemSink& sink) {
    RelayBatch batch;
    while (true) {
      {
        std::unique_lock lock(mutex_);
        if (batch.capacity() > 0) {  // the one just read
          spent_.push_back(std::move(batch));
          room_.notify_one();
        }
        ready_.wait(lock, [&] { return !queued_.empty() || done_; });
        if (queued_.empty()) return error_;
        batch = std::move(queued_.front());
        queued_.pop_front();
        room_.notify_one();
      }
      for (RelayItem& item : batch) sink(item.list, item.node);
    }
  }

  // This thread, when the sink threw: the parse stops at its next item.
  void stop() {
    std::unique_lock lock(mutex_);
    stopped_ = true;
    room_.notify_one();
  }

 private:
  void send() {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return queued_.size() < kRelayMaxQueued || stopped_; });
    if (stopped_) throw RelayStopped{};
    queued_.push_back(std::move(filling_));
    filling_ = RelayBatch{};
    ready_.notify_one();
  }

  // A batch the reader is done with, emptied here (its nodes were allocated on
  // this thread, and are freed on it), or a new one.
  RelayBatch take_spent() {
    RelayBatch batch;
    {
      std::unique_lock lock(mutex_);
      if (stopped_) throw RelayStopped{};
      if (!spent_.empty()) {
        batch = std::move(spent_.back());
        spent_.pop_back();
      }
    }
    batch.clear();
    batch.reserve(kRelayBatchItems);
    return batch;
  }

  std::mutex mutex_;
  std::condition_variable ready_;  // a batch was queued, or the parse ended
  std::condition_variable room_;   // a batch was taken, or the reader stopped
  std::deque<RelayBatch> queued_;
  std::vector<RelayBatch> spent_;
  RelayBatch filling_;  // parsing thread only
  bool done_ = false;
  bool stopped_ = false;
  std::exception_ptr error_;
};

}  // namespace

void relay_items(const ItemSink& sink, const std::function<void(const ItemSink&)>& parse) {
  Relay relay;
  std::thread parser([&] {
    std::exception_ptr error;
    try {
      parse([&](StreamedList list, DocNode& node) { relay.add(list, node); });
    } catch (const RelayStopped&) {
      // The reader threw; it rethrows its own exception.
    } catch (...) {
      error = std::current_exception();
    }
    relay.finish(std::move(error));
  });
  std::exception_ptr error;
  try {
    error = relay.drain(sink);
  } catch (...) {
    relay.stop();
    parser.join();
    throw;
  }
  parser.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace orch::detail
