// Words for a C++ exception that escaped a plugin, shared by the in-process tier and the runner of
// another isolation tier (which links none of the host), so both tiers say the same thing.
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <typeinfo>

namespace hookhost {

// The exception being handled: "an exception escaped `from`: WHAT (C++ type 'std::out_of_range')",
// or "an unknown exception escaped `from` (C++ type 'int')" for one that is not a std::exception;
// the type demangled. Call only inside a catch block.
inline std::string describe_current_exception(const char* from) {
  std::string type = "unknown";
  if (const std::type_info* info = abi::__cxa_current_exception_type()) {
    int status = 0;
    const std::unique_ptr<char, decltype(&std::free)> demangled(
        abi::__cxa_demangle(info->name(), nullptr, nullptr, &status), &std::free);
    type = status == 0 && demangled ? demangled.get() : info->name();
  }
  const std::string type_note = " (C++ type '" + type + "')";
  try {
    throw;
  } catch (const std::exception& e) {
    return std::string("an exception escaped ") + from + ": " + e.what() + type_note;
  } catch (...) {
    return std::string("an unknown exception escaped ") + from + type_note;
  }
}

}  // namespace hookhost
