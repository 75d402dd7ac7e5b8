#include "cli/orch_main.h"

#include <cstdio>

namespace orch {

int orch_main(int, char**) {
  std::fprintf(stderr, "orch: not built yet\n");
  return 2;
}

}  // namespace orch
