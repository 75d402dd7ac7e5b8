/* arith.c — two items in one file: gcd (implemented already) and lcm (a stub). */
#include "example.h"

/* BEGIN gcd */
int gcd(int a, int b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    int t = a % b;
    a = b;
    b = t;
  }
  return a;
}
/* END gcd */

/* BEGIN lcm */
int lcm(int a, int b) {
  (void)a;
  (void)b;
  return 0; /* TODO */
}
/* END lcm */
