// util/item_relay.h — a reader's streamed items, parsed on one thread and read on another.
//
// A plan reader streams its step list (util/doc_node.h, ItemSink): each step's
// nodes are handed to the loader as soon as they are parsed. For a large YAML
// plan, libyaml's parsing is most of the time (docs/benchmarks.md, session 44),
// so relay_items runs the parse on a second thread while the calling thread
// reads the steps it has already produced: the loader's sink still runs on the
// caller's thread, in document order, one item at a time, exactly as without it.
//
// The items travel in batches through a bounded queue (the parser waits when the
// reader is behind, so memory stays a few batches), and a read batch goes back
// to the parsing thread to be freed and reused where it was allocated.
#pragma once

#include <functional>

#include "util/doc_node.h"

namespace orch::detail {

// Calls `parse` on a new thread with a sink that relays each item to `sink`,
// which is called on this thread; returns when both are done. An exception
// thrown by `parse` is rethrown here once the thread has ended; one thrown by
// `sink` stops the parse (its sink throws on its thread) and is rethrown here.
void relay_items(const ItemSink& sink, const std::function<void(const ItemSink&)>& parse);

}  // namespace orch::detail
