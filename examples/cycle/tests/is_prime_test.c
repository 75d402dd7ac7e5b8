#include "check.h"
#include "example.h"

int main(void) {
  CHECK(is_prime(-7), 0);
  CHECK(is_prime(0), 0);
  CHECK(is_prime(1), 0);
  CHECK(is_prime(2), 1);
  CHECK(is_prime(9), 0);
  CHECK(is_prime(97), 1);
  CHECK(is_prime(7919), 1);
  return check_result();
}
