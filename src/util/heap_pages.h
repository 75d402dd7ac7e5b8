// util/heap_pages.h — putting the start of the malloc heap on transparent huge pages.
//
// On the virtual machines orch is measured on a page fault costs 10–15 µs, and a
// run's heap grows by a few KiB per step (the plan, the scheduler's state, the
// ledger's page cache): a 1000-step chain took about 2000 faults, a quarter of
// its time (docs/benchmarks.md). Asking the kernel for huge pages on the first
// `span` bytes of the heap turns those into a handful of 2 MiB faults.
//
// Called once, early in main(), before the heap has grown. Not thread-safe.
#pragma once

#include <cstddef>

namespace orch {

// Makes glibc's malloc reserve `span` more bytes of heap each time it grows it
// (M_TOP_PAD), grows it now, and advises that span MADV_HUGEPAGE. Returns true
// when the span was advised; false when the kernel has no transparent huge pages
// or the heap is not a brk heap (another allocator, a sanitizer's): then the
// caller sets M_TOP_PAD as it likes.
bool reserve_heap_on_huge_pages(std::size_t span);

}  // namespace orch
