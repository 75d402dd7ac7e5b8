#include "util/dl_library.h"

namespace orch {

void* open_first_library(std::initializer_list<const char*> names, std::string& why) {
  for (const char* name : names) {
    if (void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return library;
    const char* e = dlerror();
    if (why.empty()) why = e != nullptr ? e : name;
  }
  return nullptr;
}

}  // namespace orch
