#include <stdio.h>
#include <string.h>

/* Copies the name given on the command line and prints it. */
int main(int argc, char** argv) {
  char name[16];
  strcpy(name, argv[1]);
  printf("hello %s\n", name);
  return 0;
}
