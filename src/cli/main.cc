// The orch binary: everything happens in orch_main (src/cli/orch_main.h).
#include "cli/orch_main.h"

int main(int argc, char** argv) { return orch::orch_main(argc, argv); }
