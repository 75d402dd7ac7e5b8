int count_vowels(const char *s) {
  int n = 0;
  for (; *s != '\0'; s++) {
    switch (*s) {
      case 'a': case 'e': case 'i': case 'o': case 'u':
      case 'A': case 'E': case 'I': case 'O': case 'U':
        n++;
        break;
      default:
        break;
    }
  }
  return n;
}
