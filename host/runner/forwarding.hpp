// The runner's side of a sandboxed hook instance: the hh_host, hh_run_request and service tables
// the plugin receives, made from the rows of services/host_functions.hpp. Each function sends the
// call and its arguments to the host and returns what the host's real function returned. Calls from
// the thread running the instance's lifecycle call go over the main channel, in the middle of that
// call's exchange; calls from any other plugin thread go over the side channel, one at a time, and
// work at any time.
#pragma once

#include <hookhost/hookhost.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "channel.hpp"
#include "protocol.hpp"
#include "services/host_functions.hpp"

namespace hookhost::runner {

template <class... T>
std::tuple<T...> tables_of(ServiceList<T...>);
// One C table per built-in service, each function forwarding to the host.
using ForwardedServices = decltype(tables_of(BuiltinServices{}));

// The runner's two channels to the host.
struct Connection {
  sandbox::Channel main;
  sandbox::Channel side;
  std::mutex side_mutex;  // one side request at a time, whichever plugin thread makes it
};
Connection& connection();

// True on the runner's main thread while it runs a plugin function for a host request.
extern thread_local bool t_in_call;

struct Instance {
  static constexpr uint64_t kMagic = 0x68682e72756e3031ULL;  // "hh.run01"
  uint64_t magic = kMagic;
  uint32_t id = 0;
  std::string name;
  std::string run_dir;
  std::string config_dir;  // hh.job/1's answer, sent with the create message
  std::string plugin_id;
  uint32_t services = 0;  // the offered_bit of each service the host offers

  hh_host host{};
  hh_run_request request{};
  bool request_open = false;  // during before_run, on the main thread
  // An observer's step in one message (MessageType::observe): the names its before_run asks for
  // are collected in `asked`, and a name the host accepted once is not sent to it again (the
  // host's check of a fetch name depends on the name and the job's workload only).
  bool observing = false;
  std::vector<std::string> asked;
  std::set<std::string, std::less<>> accepted_fetches;
  ForwardedServices service_tables;

  hh_hook* hook = nullptr;
  // The callbacks, copied once as the host does.
  decltype(hh_hook::begin) begin = nullptr;
  decltype(hh_hook::after_create_session) after_create_session = nullptr;
  decltype(hh_hook::before_run) before_run = nullptr;
  decltype(hh_hook::after_run) after_run = nullptr;
  decltype(hh_hook::end) end = nullptr;
  decltype(hh_hook::destroy) destroy = nullptr;

  Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
};

// Sends a service request for `instance` and returns the reply's payload; nothing when the host
// cannot be reached from this thread (a side request after the host stopped listening).
std::optional<std::vector<std::byte>> call_host(const Instance& instance,
                                                const sandbox::Writer& request);

}  // namespace hookhost::runner
