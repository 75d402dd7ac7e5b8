#include "util/heap_pages.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace orch {

bool reserve_heap_on_huge_pages(std::size_t span) {
  if (span == 0 || span > static_cast<std::size_t>(INT_MAX)) return false;
  mallopt(M_TOP_PAD, static_cast<int>(span));
  // Blocks below the mmap threshold (128 KiB) come from the heap's free space;
  // once that is used up, malloc calls sbrk for the block plus M_TOP_PAD. At
  // start-up the free space is at most glibc's default pad (128 KiB); later it
  // can be more, and the loop takes as many blocks as it holds (and two more).
  constexpr std::size_t kBlock = 64 * 1024;
  const std::size_t most = std::min<std::size_t>(mallinfo2().fordblks / kBlock + 2, 4096);
  std::vector<void*> blocks;
  blocks.reserve(most);
  auto* const before = static_cast<char*>(sbrk(0));
  if (before == reinterpret_cast<char*>(-1)) return false;
  while (blocks.size() < most && static_cast<char*>(sbrk(0)) == before) {
    void* block = std::malloc(kBlock);
    if (block == nullptr) break;
    blocks.push_back(block);
  }
  for (void* block : blocks) std::free(block);
  // Read after the blocks are freed: with a small trim threshold the free gives
  // back what lies beyond M_TOP_PAD.
  auto* const after = static_cast<char*>(sbrk(0));
  if (after <= before) return false;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const std::uintptr_t start = (reinterpret_cast<std::uintptr_t>(before) + page - 1) & ~(page - 1);
  const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(after);
  if (end <= start) return false;
  // The pages between the old break and the new one have never been touched; from
  // here on, each 2 MiB-aligned part of them is faulted in as one huge page.
  return madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE) == 0;
}

}  // namespace orch
