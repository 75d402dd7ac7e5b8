#include "check.h"
#include "example.h"

int main(void) {
  CHECK(gcd(12, 18), 6);
  CHECK(gcd(17, 5), 1);
  CHECK(gcd(0, 7), 7);
  CHECK(gcd(-12, 8), 4);
  CHECK(gcd(0, 0), 0);
  return check_result();
}
