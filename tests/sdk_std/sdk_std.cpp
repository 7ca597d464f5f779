// Compiled by the sdk_std.* tests (tests/CMakeLists.txt) with -fsyntax-only: as C++17 the SDK
// header must stop at once with its own message naming -std=c++20 and <hookhost/hookhost.h>;
// as C++20 it must compile cleanly (-Wall -Wextra -pedantic -Werror).
#include <hookhost/hook.hpp>
#include <hookhost/sdk/json.hpp>
#include <hookhost/sdk/text.hpp>
#include <hookhost/sdk/timer.hpp>
