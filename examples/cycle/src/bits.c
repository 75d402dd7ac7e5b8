/* bits.c — two stubs in one file: popcount and parity. */
#include "example.h"

/* BEGIN popcount */
int popcount(unsigned x) {
  (void)x;
  return 0; /* TODO */
}
/* END popcount */

/* BEGIN parity */
int parity(unsigned x) {
  (void)x;
  return 0; /* TODO */
}
/* END parity */
