/* example.h — the functions the items of status.yaml stand for. Each lives in
 * one file of src/, between two marker comments, BEGIN <id> and END <id>,
 * whose lines the worker (worker.sh) replaces or documents. */
#ifndef CYCLE_EXAMPLE_H
#define CYCLE_EXAMPLE_H

int gcd(int a, int b);             /* src/arith.c */
int lcm(int a, int b);             /* src/arith.c */
int popcount(unsigned x);          /* src/bits.c */
int parity(unsigned x);            /* src/bits.c */
int clamp(int x, int lo, int hi);  /* src/clamp.c */
int count_vowels(const char *s);   /* src/text.c */
int is_prime(int n);               /* src/primes.c */

#endif
