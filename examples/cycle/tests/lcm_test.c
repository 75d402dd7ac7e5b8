#include "check.h"
#include "example.h"

int main(void) {
  CHECK(lcm(4, 6), 12);
  CHECK(lcm(3, 5), 15);
  CHECK(lcm(7, 7), 7);
  CHECK(lcm(-4, 6), 12);
  CHECK(lcm(0, 9), 0);
  return check_result();
}
