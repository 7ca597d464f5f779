// Whether this build runs under AddressSanitizer, as both compilers say it: GCC defines
// __SANITIZE_ADDRESS__, Clang answers __has_feature(address_sanitizer).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define HOOKHOST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOOKHOST_ASAN 1
#endif
#endif
