// The one door every plugin-to-host function goes through: the hh_host table and each ext/ service
// table. A service derives from HostService and writes only its own logic; the entry template
// below resolves the caller from the handle, applies the after-end rule, and turns exceptions into
// the function's failure value and message, in one place (as spdlog's sinks share base_sink).
// in_process_table builds a C table from the rows of host_functions.hpp, one method per row.
#pragma once

#include <hookhost/hookhost.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "host_functions.hpp"
#include "support/text.hpp"

namespace hookhost {

struct HostServices;

// A service a plugin reaches through get_service (or the hh_host table itself).
class HostService {
 public:
  virtual ~HostService() = default;
  // "hh.<name>/N", or "" for the hh_host table, which get_service does not hand out.
  virtual std::string_view id() const = 0;
  // The C table handed to plugins; static, the same for every instance.
  virtual const void* table() const = 0;
};

// The plugin broke the contract (a bad argument, a call after end()): logged as misbehaviour
// naming the instance and plugin, and refused.
class Misuse : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A valid call the host will not carry out (a limit): logged as an error with this text.
class Refusal : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace service_detail {

HostServices* caller_of(const hh_host* host, const char* function);
bool has_ended(const HostServices& caller);
// The host refused this instance at create(): its runtime may be gone.
bool is_orphaned(const HostServices& caller);
void log_misuse(const HostServices& caller, const char* function, const std::string& what);
void log_refusal(const HostServices& caller, const std::string& what);
void log_failure(const HostServices& caller, const char* function, const std::string& what);
// Writes `message` into a plugin-owned hh_error when its struct_size vouches for the buffer.
void report(hh_error* error, const std::string& message);

template <class T>
void report_if_error(T, const std::string&) {}
inline void report_if_error(hh_error* error, const std::string& message) {
  report(error, message);
}
template <class... A>
bool takes_error() {
  return (std::is_same_v<A, hh_error*> || ...);
}

template <class S>
S& service_for(HostServices& caller);  // defined by services.hpp for each built-in service

template <auto Fallback, class R>
R fallback_value() {
  if constexpr (!std::is_void_v<R>) return Fallback;
}

template <FunctionName Function, AfterEnd Rule, auto Fallback, auto Method>
struct Entry;

template <FunctionName Function, AfterEnd Rule, auto Fallback, class S, class R, class... A,
          R (S::*Method)(HostServices&, A...)>
struct Entry<Function, Rule, Fallback, Method> {
  static R call(const hh_host* host, A... args) noexcept {
    const char* function = Function.text;
    HostServices* caller = caller_of(host, function);
    if (!caller) {
      (report_if_error(args, std::string(function) + ": not a host pointer of this host"), ...);
      return fallback_value<Fallback, R>();
    }
    if (is_orphaned(*caller)) [[unlikely]] {
      // Nothing is logged: a polling thread would flood the log, and the refusal of its
      // instance was reported when create() returned.
      (report_if_error(args, std::string(function) +
                                 ": refused, the host refused this instance at its create()"),
       ...);
      return fallback_value<Fallback, R>();
    }
    try {
      if (Rule == AfterEnd::refused && has_ended(*caller)) throw Misuse("after end()");
      return (service_for<S>(*caller).*Method)(*caller, args...);
    } catch (const Misuse& e) {
      log_misuse(*caller, function, e.what());
      (report_if_error(args, std::string(function) + ": " + e.what()), ...);
    } catch (const Refusal& e) {
      log_refusal(*caller, e.what());
      (report_if_error(args, e.what()), ...);
    } catch (const std::exception& e) {
      // An operational failure (a write that failed): the status carries it when it can.
      if (!takes_error<A...>()) log_failure(*caller, function, e.what());
      (report_if_error(args, e.what()), ...);
    } catch (...) {
      log_failure(*caller, function, "unknown exception");
    }
    return fallback_value<Fallback, R>();
  }
};

}  // namespace service_detail

// The C function for a service method: `&entry<"hh.x/1 f", AfterEnd::refused, HH_ERROR, &S::f>`.
template <FunctionName Function, AfterEnd Rule, auto Fallback, auto Method>
inline constexpr auto entry = &service_detail::Entry<Function, Rule, Fallback, Method>::call;

namespace service_detail {

template <class F, class S, class R, class... C>
constexpr bool has_signature_of(R (S::*)(HostServices&, C...)) {
  return std::is_same_v<R, typename F::Result> &&
         std::is_same_v<TypeList<C...>, typename F::Params>;
}

template <auto... Methods, class... F>
auto table_of(FunctionList<F...>) {
  static_assert(sizeof...(Methods) == sizeof...(F), "one method per row of the list");
  static_assert((has_signature_of<F>(Methods) && ...), "each method has its row's C signature");
  using Table = typename FirstOf<FunctionList<F...>>::type::Table;
  Table table{};
  table.struct_size = ServiceTable<Table>::size;
  ((table.*F::field = entry<F::name, F::after_end, F::fallback, Methods>), ...);
  return table;
}

}  // namespace service_detail

// The C table of the rows in `List` (host_functions.hpp), each bound to its method in order:
// `in_process_table<SummaryFunctions, &SummaryService::add_scalar, ...>()`. A method whose
// signature is not its row's does not compile.
template <class List, auto... Methods>
auto in_process_table() {
  return service_detail::table_of<Methods...>(List{});
}

// The ids of the services the embedder gave the runtime of `host` (RuntimeOptions::services);
// none for a host this library did not make.
std::vector<std::string> embedder_service_ids(const hh_host& host);

}  // namespace hookhost
