int lcm(int a, int b) {
  int m;
  if (a == 0 || b == 0) return 0;
  m = a / gcd(a, b) * b;
  return m < 0 ? -m : m;
}
