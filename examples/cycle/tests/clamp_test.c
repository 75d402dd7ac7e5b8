#include "check.h"
#include "example.h"

int main(void) {
  CHECK(clamp(5, 1, 10), 5);
  CHECK(clamp(-3, 1, 10), 1);
  CHECK(clamp(15, 1, 10), 10);
  CHECK(clamp(1, 1, 10), 1);
  CHECK(clamp(10, 1, 10), 10);
  return check_result();
}
