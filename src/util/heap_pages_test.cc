#include "util/heap_pages.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace orch {
namespace {

// The VmFlags line of the mapping that holds `address`, from /proc/self/smaps
// ("" when no mapping holds it).
std::string vm_flags_at(std::uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= address && address < hi;
      continue;
    }
    if (inside && line.starts_with("VmFlags:")) return line;
  }
  return "";
}

bool address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#else
  return false;
#endif
}

TEST(HeapPages, AdvisesTheNewTopOfTheHeapForHugePages) {
  const bool thp = std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled");
  auto* before = static_cast<char*>(sbrk(0));
  const bool advised = reserve_heap_on_huge_pages(std::size_t{8} << 20);
  auto* after = static_cast<char*>(sbrk(0));
  if (address_sanitizer()) {
    // ASan's allocator is not a brk heap: nothing to advise, and the break stays.
    EXPECT_FALSE(advised);
    EXPECT_EQ(after, before);
    return;
  }
  // glibc's malloc grew the heap by about the span (less what was free at its
  // top), whether or not the kernel has huge pages.
  EXPECT_GE(after - before, std::ptrdiff_t{4} << 20);
  ASSERT_EQ(advised, thp);
  if (!thp) return;
  // The kernel marks the new part of the heap "hg" (VM_HUGEPAGE)...
  const std::string flags = vm_flags_at(reinterpret_cast<std::uintptr_t>(after) - 1);
  ASSERT_FALSE(flags.empty()) << "no mapping holds the top of the heap";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  // ...and memory malloc hands out from it works as any other.
  auto* block = static_cast<char*>(std::malloc(std::size_t{4} << 20));
  ASSERT_NE(block, nullptr);
  std::memset(block, 0x5a, std::size_t{4} << 20);
  EXPECT_EQ(block[(std::size_t{4} << 20) - 1], 0x5a);
  std::free(block);
  mallopt(M_TOP_PAD, 128 * 1024);  // glibc's default again, for the tests after this one
}

TEST(HeapPages, RefusesASpanOfZeroOrBeyondWhatMallocTakes) {
  EXPECT_FALSE(reserve_heap_on_huge_pages(0));
  EXPECT_FALSE(reserve_heap_on_huge_pages(std::size_t{1} << 40));
}

}  // namespace
}  // namespace orch
