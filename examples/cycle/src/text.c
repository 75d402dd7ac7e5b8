/* text.c — a stub: count_vowels. */
#include "example.h"

/* BEGIN count_vowels */
int count_vowels(const char *s) {
  (void)s;
  return 0; /* TODO */
}
/* END count_vowels */
