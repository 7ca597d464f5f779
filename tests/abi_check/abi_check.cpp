// Compiled as C++ with -pedantic -Werror: the ABI headers and the SDK must be clean C++ too.
#include <hookhost/hook.hpp>

namespace {
class Check : public hookhost::Hook {
 public:
  using Hook::Hook;
};
}  // namespace

HOOKHOST_PLUGIN(Check, "abi_check_cxx", "0.0.1", "compile check", HH_NO_PARAMS)
