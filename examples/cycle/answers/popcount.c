int popcount(unsigned x) {
  int n = 0;
  while (x != 0) {
    x &= x - 1; /* clears the lowest set bit */
    n++;
  }
  return n;
}
