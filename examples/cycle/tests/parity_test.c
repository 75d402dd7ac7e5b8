#include "check.h"
#include "example.h"

int main(void) {
  CHECK(parity(0u), 0);
  CHECK(parity(1u), 1);
  CHECK(parity(3u), 0);
  CHECK(parity(7u), 1);
  CHECK(parity(0x80000000u), 1);
  CHECK(parity(0xFFFFFFFFu), 0);
  return check_result();
}
