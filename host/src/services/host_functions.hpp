// Every function the host offers a plugin, described once: the C table field it fills, its op on
// the sandbox protocol, its name for messages, whether it still runs after end(), which threads may
// call it, what it returns when refused, and how each argument travels to the host from a
// hookhost-runner. Three bindings are derived from these rows and nothing else:
//   - in process: the C tables (service.hpp's in_process_table binds each row to its method);
//   - in the runner: the forwarding stubs (host/runner/forwarding.cpp);
//   - in the host: the handler of a runner's request (sandbox/service_requests.cpp).
// Adding a function is a row here plus its method; the binding tests walk these lists.
// Included by the runner too: nothing here may need the host's runtime.
#pragma once

#include <hookhost/ext/checkpoint.h>
#include <hookhost/ext/dist.h>
#include <hookhost/ext/job.h>
#include <hookhost/ext/steps.h>
#include <hookhost/ext/summary.h>
#include <hookhost/hookhost.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace hookhost {

// A function's name as a template argument ("hh.summary/1 add_scalar"), for every message.
template <std::size_t N>
struct FunctionName {
  char text[N];
  constexpr FunctionName(const char (&s)[N]) {
    for (std::size_t i = 0; i < N; ++i) text[i] = s[i];
  }
};

// Whether a function may still be used once the instance's end() has returned.
enum class AfterEnd { allowed, refused };

// Which threads may call a function. `lifecycle` is checked where the data lives (the request of
// a before_run, the hh.dist/1 collective), on the thread that runs the instance's callback.
enum class Threads { any, lifecycle };

// The failure value of a function returning void.
struct NoValue {};

// The text a function returning text gives when refused.
inline constexpr char kNoText[] = "";

// The op a forwarded call travels as. The numbers are the sandbox protocol's: never reuse one.
enum class HostOp : uint16_t {
  none = 0,  // answered where the plugin runs, never forwarded
  log = 1,
  log_enabled = 2,
  global_step = 3,
  request_stop = 4,
  should_stop = 5,
  state_put = 6,
  state_info = 7,
  state_get = 8,
  add_fetch = 9,
  add_feed = 10,
  checkpoint_request = 11,
  checkpoint_last_written = 12,
  summary_add_scalar = 13,
  summary_add_session_log = 14,
  summary_flush = 15,
  steps_publish_last_step = 16,
  steps_last_step = 17,
  // 18 was rank, world_size and is_chief in one reply (protocol 4)
  dist_allreduce = 19,
  dist_broadcast = 20,
  dist_barrier = 21,
  dist_rank = 22,
  dist_world_size = 23,
  dist_is_chief = 24,
  steps_skip_until = 25,
};
inline constexpr uint16_t kHostOpCount = 26;  // one past the largest op

// How each argument travels from a runner (the codecs are in sandbox/host_call_codec.hpp). A
// codec covers one or two C parameters, listed in `c`.
template <class... T>
struct TypeList {};

namespace arg {
// A value, as is.
template <class T>
struct Value {
  using c = TypeList<T>;
};
// A NUL-terminated text; at most Max + 1 bytes travel, so "too long" stays visible; NULL kept.
template <std::size_t Max>
struct Text {
  using c = TypeList<const char*>;
};
// A text and its size, of which only the first Max bytes are ever read (hh_host.log).
template <std::size_t Max>
struct CutText {
  using c = TypeList<const char*, std::size_t>;
};
// Bytes and their size; more than Max bytes are refused without being sent.
template <std::size_t Max>
struct Bytes {
  using c = TypeList<const void*, std::size_t>;
};
// A value the function may write (NULL kept); the plugin's value travels in and the result back.
template <class T>
struct Out {
  using c = TypeList<T*>;
};
// A text buffer and its capacity the function may fill; the host fills a buffer of at most Max.
template <std::size_t Max>
struct TextOut {
  using c = TypeList<char*, std::size_t>;
};
// Doubles and their count, read and written; more than Max travel as the count alone, for the
// host's own check to refuse.
template <std::size_t Max>
struct Doubles {
  using c = TypeList<double*, std::size_t>;
};
// A tensor view for the run request (sandbox/view_codec.hpp).
struct View {
  using c = TypeList<const hh_tensor*>;
};
// An hh_error the function may fill: its struct_size travels, its code and message come back.
struct Error {
  using c = TypeList<hh_error*>;
};
}  // namespace arg

namespace host_functions_detail {
template <class... L>
struct Concat;
template <>
struct Concat<> {
  using type = TypeList<>;
};
// The lists one after the other (TypeLists or FunctionLists).
template <template <class...> class List, class... A>
struct Concat<List<A...>> {
  using type = List<A...>;
};
template <template <class...> class List, class... A, class... B, class... Rest>
struct Concat<List<A...>, List<B...>, Rest...> {
  using type = typename Concat<List<A..., B...>, Rest...>::type;
};

template <class Field>
struct FieldTraits;
template <class Table, class R, class Handle, class... C>
struct FieldTraits<R (*Table::*)(Handle, C...)> {
  using table = Table;
  using result = R;
  using handle = Handle;
  using params = TypeList<C...>;
};
}  // namespace host_functions_detail

// One row: `Field` is the C table's member (&hh_summary_service::add_scalar), which gives the
// signature; `Args` are the codecs of its parameters after the handle, in order.
template <auto Field, HostOp Op, FunctionName Name, AfterEnd Rule, Threads Thread, auto Fallback,
          class... Args>
struct HostFunction {
  using Traits = host_functions_detail::FieldTraits<decltype(Field)>;
  using Table = typename Traits::table;
  using Result = typename Traits::result;
  using Handle = typename Traits::handle;
  using Params = typename Traits::params;
  using Codecs = TypeList<Args...>;
  static constexpr auto field = Field;
  static constexpr HostOp op = Op;
  static constexpr FunctionName name = Name;
  static constexpr AfterEnd after_end = Rule;
  static constexpr Threads thread = Thread;
  static constexpr auto fallback = Fallback;

  static_assert(
      std::is_same_v<typename host_functions_detail::Concat<typename Args::c...>::type, Params>,
      "the codecs must cover the C parameters, in order");
  static Result fallback_value() {
    if constexpr (!std::is_void_v<Result>) return Fallback;
  }
};

template <class... F>
struct FunctionList {
  static constexpr std::size_t size = sizeof...(F);
};
template <class List>
struct FirstOf;
template <class First, class... Rest>
struct FirstOf<FunctionList<First, Rest...>> {
  using type = First;
};

// ---- the rows -------------------------------------------------------------------------------

namespace fn {
using A = AfterEnd;
using T = Threads;
using Op = HostOp;

// hh_host
using instance_name =
    HostFunction<&hh_host::instance_name, Op::none, "instance_name", A::allowed, T::any, kNoText>;
using log = HostFunction<&hh_host::log, Op::log, "log", A::allowed, T::any, NoValue{},
                         arg::Value<int32_t>, arg::CutText<HH_MAX_LOG_MESSAGE>>;
using log_enabled = HostFunction<&hh_host::log_enabled, Op::log_enabled, "log_enabled", A::allowed,
                                 T::any, 0, arg::Value<int32_t>>;
using global_step = HostFunction<&hh_host::global_step, Op::global_step, "global_step", A::allowed,
                                 T::any, int64_t{0}>;
using request_stop = HostFunction<&hh_host::request_stop, Op::request_stop, "request_stop",
                                  A::refused, T::any, NoValue{}, arg::Text<HH_MAX_STOP_REASON>>;
using should_stop =
    HostFunction<&hh_host::should_stop, Op::should_stop, "should_stop", A::allowed, T::any, 0>;
using run_dir = HostFunction<&hh_host::run_dir, Op::none, "run_dir", A::allowed, T::any, kNoText>;
// The sandbox refuses more than one message carries (protocol.hpp's kMaxTransferBytes).
using state_put = HostFunction<&hh_host::state_put, Op::state_put, "state_put", A::refused, T::any,
                               HH_ERROR, arg::Bytes<std::size_t{256} * 1024 * 1024 - 64 * 1024>>;
using state_info = HostFunction<&hh_host::state_info, Op::state_info, "state_info", A::allowed,
                                T::any, 0, arg::Out<std::size_t>, arg::Out<uint32_t>>;
// The buffer is sized by the state the host holds, not by the plugin's capacity: forwarded by
// hand on both sides (forwarding.cpp, service_requests.cpp).
using state_get =
    HostFunction<&hh_host::state_get, Op::state_get, "state_get", A::allowed, T::any, HH_ERROR,
                 arg::Value<void*>, arg::Value<std::size_t>, arg::Out<std::size_t>>;
using get_service = HostFunction<&hh_host::get_service, Op::none, "get_service", A::allowed, T::any,
                                 nullptr, arg::Text<255>>;

// hh_run_request, open during the instance's before_run only
using add_fetch = HostFunction<&hh_run_request::add_fetch, Op::add_fetch, "add_fetch", A::allowed,
                               T::lifecycle, HH_ERROR, arg::Text<HH_MAX_NAME_LENGTH>>;
using add_feed = HostFunction<&hh_run_request::add_feed, Op::add_feed, "add_feed", A::allowed,
                              T::lifecycle, HH_ERROR, arg::View>;

// hh.checkpoint/1
using checkpoint_request =
    HostFunction<&hh_checkpoint_service::request, Op::checkpoint_request, "hh.checkpoint/1 request",
                 A::refused, T::any, HH_ERROR, arg::Text<HH_MAX_STOP_REASON>>;
// A path is far below 64 KiB; the plugin's capacity may be anything.
using checkpoint_last_written =
    HostFunction<&hh_checkpoint_service::last_written, Op::checkpoint_last_written,
                 "hh.checkpoint/1 last_written", A::allowed, T::any, 0, arg::TextOut<64 * 1024>,
                 arg::Out<int64_t>>;

// hh.summary/1
using summary_add_scalar =
    HostFunction<&hh_summary_service::add_scalar, Op::summary_add_scalar, "hh.summary/1 add_scalar",
                 A::allowed, T::any, HH_ERROR, arg::Text<HH_MAX_PATH_LENGTH>,
                 arg::Text<HH_MAX_TAG_LENGTH>, arg::Value<double>, arg::Value<int64_t>, arg::Error>;
using summary_add_session_log =
    HostFunction<&hh_summary_service::add_session_log, Op::summary_add_session_log,
                 "hh.summary/1 add_session_log", A::allowed, T::any, HH_ERROR,
                 arg::Text<HH_MAX_PATH_LENGTH>, arg::Value<int32_t>, arg::Text<HH_MAX_PATH_LENGTH>,
                 arg::Value<int64_t>, arg::Error>;
using summary_flush =
    HostFunction<&hh_summary_service::flush, Op::summary_flush, "hh.summary/1 flush", A::allowed,
                 T::any, HH_ERROR, arg::Text<HH_MAX_PATH_LENGTH>, arg::Error>;

// hh.steps/1
using steps_publish_last_step =
    HostFunction<&hh_steps_service::publish_last_step, Op::steps_publish_last_step,
                 "hh.steps/1 publish_last_step", A::refused, T::any, HH_ERROR, arg::Value<int64_t>>;
using steps_last_step = HostFunction<&hh_steps_service::last_step, Op::steps_last_step,
                                     "hh.steps/1 last_step", A::allowed, T::any, int64_t{-1}>;
using steps_skip_until =
    HostFunction<&hh_steps_service::skip_until, Op::steps_skip_until, "hh.steps/1 skip_until",
                 A::refused, T::any, HH_ERROR, arg::Value<int64_t>>;

// hh.job/1: the runner holds the answer from the create message.
using job_config_dir = HostFunction<&hh_job_service::config_dir, Op::none, "hh.job/1 config_dir",
                                    A::allowed, T::any, kNoText>;

// hh.dist/1
using dist_rank = HostFunction<&hh_dist_service::rank, Op::dist_rank, "hh.dist/1 rank", A::allowed,
                               T::any, int32_t{-1}>;
using dist_world_size = HostFunction<&hh_dist_service::world_size, Op::dist_world_size,
                                     "hh.dist/1 world_size", A::allowed, T::any, int32_t{0}>;
using dist_is_chief = HostFunction<&hh_dist_service::is_chief, Op::dist_is_chief,
                                   "hh.dist/1 is_chief", A::allowed, T::any, int32_t{0}>;
using dist_allreduce =
    HostFunction<&hh_dist_service::allreduce, Op::dist_allreduce, "hh.dist/1 allreduce", A::refused,
                 T::lifecycle, HH_ERROR, arg::Doubles<HH_DIST_MAX_COUNT>, arg::Value<int32_t>,
                 arg::Error>;
using dist_broadcast =
    HostFunction<&hh_dist_service::broadcast, Op::dist_broadcast, "hh.dist/1 broadcast", A::refused,
                 T::lifecycle, HH_ERROR, arg::Doubles<HH_DIST_MAX_COUNT>, arg::Value<int32_t>,
                 arg::Error>;
using dist_barrier = HostFunction<&hh_dist_service::barrier, Op::dist_barrier, "hh.dist/1 barrier",
                                  A::refused, T::lifecycle, HH_ERROR, arg::Error>;
}  // namespace fn

// Each C table's rows, in the order of its fields.
using HostTableFunctions =
    FunctionList<fn::instance_name, fn::log, fn::log_enabled, fn::global_step, fn::request_stop,
                 fn::should_stop, fn::run_dir, fn::state_put, fn::state_info, fn::state_get,
                 fn::get_service>;
using RunRequestFunctions = FunctionList<fn::add_fetch, fn::add_feed>;
using CheckpointFunctions = FunctionList<fn::checkpoint_request, fn::checkpoint_last_written>;
using SummaryFunctions =
    FunctionList<fn::summary_add_scalar, fn::summary_add_session_log, fn::summary_flush>;
using StepsFunctions =
    FunctionList<fn::steps_publish_last_step, fn::steps_last_step, fn::steps_skip_until>;
using JobFunctions = FunctionList<fn::job_config_dir>;
using DistFunctions = FunctionList<fn::dist_rank, fn::dist_world_size, fn::dist_is_chief,
                                   fn::dist_allreduce, fn::dist_broadcast, fn::dist_barrier>;

// What a C table is to get_service and to the create message: its id ("" for hh_host and the run
// request, which get_service does not hand out), its struct_size, its bit in the create message's
// "offered" set, and its rows.
template <FunctionName Id, uint32_t Size, uint32_t OfferedBit, class Functions>
struct TableDescription {
  static constexpr const char* id = Id.text;
  static constexpr uint32_t size = Size;
  static constexpr uint32_t offered_bit = OfferedBit;
  using functions = Functions;
};
template <class Table>
struct ServiceTable;
// clang-format off
template <> struct ServiceTable<hh_host>
    : TableDescription<"", HH_HOST_SIZE, 0, HostTableFunctions> {};
template <> struct ServiceTable<hh_run_request>
    : TableDescription<"", HH_RUN_REQUEST_SIZE, 0, RunRequestFunctions> {};
template <> struct ServiceTable<hh_checkpoint_service>
    : TableDescription<HH_SERVICE_CHECKPOINT, HH_CHECKPOINT_SERVICE_SIZE, 1, CheckpointFunctions> {};
template <> struct ServiceTable<hh_summary_service>
    : TableDescription<HH_SERVICE_SUMMARY, HH_SUMMARY_SERVICE_SIZE, 2, SummaryFunctions> {};
template <> struct ServiceTable<hh_steps_service>
    : TableDescription<HH_SERVICE_STEPS, HH_STEPS_SERVICE_SIZE, 4, StepsFunctions> {};
template <> struct ServiceTable<hh_job_service>
    : TableDescription<HH_SERVICE_JOB, HH_JOB_SERVICE_SIZE, 8, JobFunctions> {};
template <> struct ServiceTable<hh_dist_service>
    : TableDescription<HH_SERVICE_DIST, HH_DIST_SERVICE_SIZE, 16, DistFunctions> {};
// clang-format on

// The built-in services get_service hands out, in the order of their bits.
template <class... T>
struct ServiceList {};
using BuiltinServices = ServiceList<hh_checkpoint_service, hh_summary_service, hh_steps_service,
                                    hh_job_service, hh_dist_service>;

// Every row, for the bindings that serve them all (the host's request handler, the tests).
using AllHostFunctions =
    typename host_functions_detail::Concat<HostTableFunctions, RunRequestFunctions,
                                           CheckpointFunctions, SummaryFunctions, StepsFunctions,
                                           JobFunctions, DistFunctions>::type;

namespace host_functions_detail {
template <class... F>
constexpr bool ops_unique(FunctionList<F...>) {
  const HostOp ops[] = {F::op...};
  for (std::size_t i = 0; i < sizeof...(F); ++i)
    for (std::size_t j = i + 1; j < sizeof...(F); ++j)
      if (ops[i] != HostOp::none && ops[i] == ops[j]) return false;
  for (HostOp op : ops)
    if (static_cast<uint16_t>(op) >= kHostOpCount) return false;
  return true;
}
}  // namespace host_functions_detail
static_assert(host_functions_detail::ops_unique(AllHostFunctions{}),
              "every forwarded function has an op of its own, below kHostOpCount");

}  // namespace hookhost
