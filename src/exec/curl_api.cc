#include "exec/curl_api.h"

#include <fmt/format.h>

#include <mutex>
#include <string>

#include "util/dl_library.h"

namespace orch {

namespace {

struct Loaded {
  CurlApi api{};
  std::string error;  // empty when loaded
};

Loaded load_once() {
  Loaded out;
  std::string why;
  void* library = open_first_library({"libcurl.so.4", "libcurl.so"}, why);
  if (library == nullptr) {
    out.error =
        fmt::format("cannot load libcurl, which HTTP calls need: {} (install the libcurl4 package)", why);
    return out;
  }
  CurlApi& a = out.api;
  std::string missing;
  const bool ok = resolve_symbol(library, "curl_easy_init", a.easy_init, missing) &&
                  resolve_symbol(library, "curl_easy_setopt", a.easy_setopt, missing) &&
                  resolve_symbol(library, "curl_easy_getinfo", a.easy_getinfo, missing) &&
                  resolve_symbol(library, "curl_easy_cleanup", a.easy_cleanup, missing) &&
                  resolve_symbol(library, "curl_easy_strerror", a.easy_strerror, missing) &&
                  resolve_symbol(library, "curl_multi_init", a.multi_init, missing) &&
                  resolve_symbol(library, "curl_multi_setopt", a.multi_setopt, missing) &&
                  resolve_symbol(library, "curl_multi_add_handle", a.multi_add_handle, missing) &&
                  resolve_symbol(library, "curl_multi_remove_handle", a.multi_remove_handle, missing) &&
                  resolve_symbol(library, "curl_multi_socket_action", a.multi_socket_action, missing) &&
                  resolve_symbol(library, "curl_multi_info_read", a.multi_info_read, missing) &&
                  resolve_symbol(library, "curl_multi_cleanup", a.multi_cleanup, missing) &&
                  resolve_symbol(library, "curl_multi_strerror", a.multi_strerror, missing) &&
                  resolve_symbol(library, "curl_slist_append", a.slist_append, missing) &&
                  resolve_symbol(library, "curl_slist_free_all", a.slist_free_all, missing) &&
                  resolve_symbol(library, "curl_getdate", a.getdate, missing);
  if (!ok) {
    out.error = fmt::format("the libcurl found lacks {} (libcurl 7.62 or newer is needed)", missing);
    return out;
  }
  CURLcode (*global_init)(long) = nullptr;
  if (!resolve_symbol(library, "curl_global_init", global_init, missing) ||
      global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    out.error = "libcurl could not be initialised (curl_global_init failed)";
  return out;
}

}  // namespace

Expected<const CurlApi*> load_curl() {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load_once(); });
  if (!loaded.error.empty()) return fail(ErrorCode::Io, loaded.error);
  return &loaded.api;
}

}  // namespace orch
