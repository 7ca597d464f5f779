// Compiled by the sdk_std.c_headers_cxx17 test with -std=c++17 -pedantic -Werror: the C ABI
// headers (hookhost/hookhost.h and everything it includes) must stay usable from C++17, unlike the
// C++20 SDK. Their C99 check is the hookhost_abi_c99_check target.
#include <hookhost/hookhost.h>

static hh_status create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                        hh_error* err) {
  (void)host;
  (void)args;
  *out = nullptr;
  return hh_fail(err, HH_ERROR, "not creatable");
}

#define CHECK_PARAMS(P) P(limit, INT, DEFAULT, "3", "a limit")

HH_PLUGIN_DEFINE("c_headers_cxx17", "0.0.1", "compile check", CHECK_PARAMS, create)
