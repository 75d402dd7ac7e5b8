/* primes.c — a stub: is_prime. */
#include "example.h"

/* BEGIN is_prime */
int is_prime(int n) {
  (void)n;
  return 0; /* TODO */
}
/* END is_prime */
