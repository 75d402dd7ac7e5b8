#include "check.h"
#include "example.h"

int main(void) {
  CHECK(count_vowels(""), 0);
  CHECK(count_vowels("banana"), 3);
  CHECK(count_vowels("rhythm"), 0);
  CHECK(count_vowels("AEIOU aeiou"), 10);
  return check_result();
}
