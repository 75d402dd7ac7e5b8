// The orch binary: everything happens in orch_main (src/cli/orch_main.h).
#include <malloc.h>

#include "cli/orch_main.h"
#include "util/heap_pages.h"

int main(int argc, char** argv) {
  // SQLite opens and closes a small temporary b-tree for every UPDATE of a step
  // row; with glibc's default trim threshold each close handed the top of the
  // heap back to the kernel and the next open faulted it in again (a third of
  // the ledger's cost per step in a builtin chain; docs/benchmarks.md). Keeping
  // up to 32 MiB of freed heap avoids that round trip.
  mallopt(M_TRIM_THRESHOLD, 32 * 1024 * 1024);
  // The first 256 MiB of heap on transparent huge pages, where the kernel offers
  // them (util/heap_pages.h): a run of 100,000 steps fits in it, and most runs
  // never fault a 4 KiB heap page after this. It is address space, not memory:
  // only the 2 MiB pages touched are. The price: glibc keeps freed memory at the
  // top of the heap up to that pad instead of 32 MiB; a run's heap seldom shrinks.
  if (!orch::reserve_heap_on_huge_pages(std::size_t{256} << 20)) mallopt(M_TOP_PAD, 1024 * 1024);
  return orch::orch_main(argc, argv);
}
