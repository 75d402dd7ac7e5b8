#include "check.h"
#include "example.h"

int main(void) {
  CHECK(popcount(0u), 0);
  CHECK(popcount(1u), 1);
  CHECK(popcount(0xF0u), 4);
  CHECK(popcount(0x80000001u), 2);
  CHECK(popcount(0xFFFFFFFFu), 32);
  return check_result();
}
