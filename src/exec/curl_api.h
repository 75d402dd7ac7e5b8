// exec/curl_api.h — libcurl, loaded the first time orch makes an HTTP call.
//
// Linking libcurl would make every orch process load it and the ~30 libraries
// it depends on (TLS, Kerberos, LDAP, IDN, ...) at start-up: about 14 ms on the
// CI machine, paid by `orch status`, `orch task log` and every other command that
// never speaks HTTP. So orch links no libcurl; http_client.cc reaches it through
// this table of the 17 functions it uses, filled by dlopen("libcurl.so.4") (the
// library's soname since 2006) on first use. The types and constants still come
// from <curl/curl.h>, so the calls are checked by the compiler as before.
//
// Thread-safe: load_curl() loads once (std::call_once) and curl_global_init runs
// in the same call.
#pragma once

#include <curl/curl.h>

#include "orch/error.h"

namespace orch {

struct CurlApi {
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  void (*easy_cleanup)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  CURLM* (*multi_init)();
  CURLMcode (*multi_setopt)(CURLM*, CURLMoption, ...);
  CURLMcode (*multi_add_handle)(CURLM*, CURL*);
  CURLMcode (*multi_remove_handle)(CURLM*, CURL*);
  CURLMcode (*multi_socket_action)(CURLM*, curl_socket_t, int, int*);
  CURLMsg* (*multi_info_read)(CURLM*, int*);
  CURLMcode (*multi_cleanup)(CURLM*);
  const char* (*multi_strerror)(CURLMcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
  // An HTTP-date (RFC 9110: IMF-fixdate, RFC 850 or asctime) as seconds since
  // the epoch, or -1 when it is not one. The second argument is unused: null.
  time_t (*getdate)(const char*, const time_t*);
};

// libcurl's functions, or an Io error naming the library and what the dynamic
// loader said ("libcurl.so.4: cannot open shared object file ...: install libcurl4").
Expected<const CurlApi*> load_curl();

}  // namespace orch
