// util/dl_library.h — a shared library loaded with dlopen on first use, and its
// functions found by name.
//
// orch links neither libcurl nor libpq: each brings tens of libraries whose
// loading every orch process would pay at start-up, while most commands never
// make an HTTP call or open a PostgreSQL store (exec/curl_api.h,
// postgres/pq_api.h). Each fills a table of the functions it uses with these two.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace orch {

// The first of `names` (sonames, newest first) that dlopen loads (RTLD_NOW,
// RTLD_LOCAL); nullptr when none does, `why` then holding what the dynamic
// loader said of the first.
void* open_first_library(std::initializer_list<const char*> names, std::string& why);

// Sets `slot` to the function `name` of `library`; false (and `missing` set to
// the name) when the library lacks it.
template <class Fn>
bool resolve_symbol(void* library, const char* name, Fn& slot, std::string& missing) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) {
    missing = name;
    return false;
  }
  slot = reinterpret_cast<Fn>(symbol);
  return true;
}

}  // namespace orch
