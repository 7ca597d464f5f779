// hookhost-runner: hosts sandboxed hook instances for a hookhost process (docs/isolation.md).
// Started by the host only, with the channel on descriptor 3, the side channel on 4, and stdout
// and stderr on pipes the host forwards to the instance's logger. It loads the plugin bytes the
// host sends with each load message (a sealed memfd, never a path), checks the entry symbol as the
// loader does, creates instances and runs their calls, forwarding every host call the plugin makes
// back to the host. It links only the plugin ABI headers, the sandbox protocol,
// the entry check (plugins/entry_check.cpp) and its confinement (confine/).
//
//   hookhost-runner --parent-pid PID [--memory-limit-mb N] [--confine POLICY...]   serve the host
//   hookhost-runner --parent-pid PID --echo            echo every message (benchmark floor)
// --confine: apply the capability policy the other arguments carry (--read PATH, --write PATH,
// --network, --processes, --limit-*: confine/policy.hpp) before anything else, with violation
// records to descriptor 5 when the host opened it (docs/isolation.md, "Confinement").
// --memory-limit-mb: RLIMIT_AS for an unconfined runner (a confined one takes --limit-as-mb).
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "channel.hpp"
#include "confine/apply.hpp"
#include "confine/policy.hpp"
#include "confine/resource_limits.hpp"
#include "confine/violation.hpp"
#include "forwarding.hpp"
#include "plugins/create_call.hpp"
#include "plugins/entry_check.hpp"
#include "protocol.hpp"
#include "support/exception_text.hpp"
#include "support/sanitizer.hpp"

#if defined(HOOKHOST_ASAN)
// Crashes stay the kernel's, so the host names the signal (ASan would catch SIGSEGV and exit with
// status 1), and an allocation refused under memory_limit_mb returns NULL as it does without ASan.
// Leaks of a plugin are not the runner's to report.
extern "C" const char* __asan_default_options() {
  return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:"
         "allocator_may_return_null=1:detect_leaks=0";
}
#endif

namespace hookhost::runner {
namespace {

using sandbox::CallEnd;
using sandbox::ChannelStatus;
using sandbox::Message;
using sandbox::MessageType;
using sandbox::Reader;
using sandbox::Writer;

constexpr int kExitUsage = 64;
constexpr int kExitOrphaned = 65;
constexpr int kExitConfine = 66;
constexpr int kExitProtocol = 70;

[[noreturn]] void die(int status, const std::string& why) {
  std::fprintf(stderr, "hookhost-runner: %s\n", why.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(status);
}

// Plugin code runs between these: the instance it belongs to goes into violation records.
void enter_plugin(uint32_t instance) {
  t_in_call = true;
  hookhost::confine::set_current_instance(instance);
}
void leave_plugin() {
  t_in_call = false;
  hookhost::confine::set_current_instance(0);
}

class Runner {
 public:
  // Serves the host until it says shutdown or closes the channel.
  int serve() {
    Connection& c = connection();
    Message message;
    for (;;) {
      const ChannelStatus status = c.main.receive(message);
      if (status == ChannelStatus::closed) return 0;
      if (status != ChannelStatus::ok) die(kExitProtocol, "channel: " + c.main.error());
      Writer reply;
      MessageType reply_type;
      switch (message.type) {
        case MessageType::load: reply_type = load(message, reply); break;
        case MessageType::create: reply_type = create(message, reply); break;
        case MessageType::call: reply_type = call(message, reply); break;
        case MessageType::observe: reply_type = observe(message, reply); break;
        case MessageType::map_values: reply_type = map_values(message, reply); break;
        case MessageType::destroy: reply_type = destroy(message, reply); break;
        case MessageType::shutdown:
          std::fflush(stdout);
          std::fflush(stderr);
          ::_exit(0);  // no static destructors: a plugin's could run after its instance is gone
        default:
          die(kExitProtocol,
              std::string("unexpected message ") + sandbox::message_type_name(message.type));
      }
      if (c.main.send(reply_type, message.instance, reply.bytes()) != ChannelStatus::ok) return 0;
    }
  }

 private:
  Instance& instance(uint32_t id) {
    auto it = instances_.find(id);
    if (it == instances_.end()) die(kExitProtocol, "no instance " + std::to_string(id));
    return *it->second;
  }

  // Opens the plugin's bytes the host sent (a sealed memfd the host checked and hashed) and checks
  // its entry symbol against the note with the loader's own check (plugins/entry_check.cpp).
  MessageType load(Message& message, Writer& reply) {
    Reader in(message.payload);
    const auto version = in.get<uint32_t>();
    auto refuse = [&](const std::string& why) {
      reply.put<uint8_t>(0);
      reply.put_text(why);
      reply.put<uint32_t>(0);
      return MessageType::loaded;
    };
    if (version != sandbox::kProtocolVersion)
      return refuse("the runner speaks sandbox protocol " +
                    std::to_string(sandbox::kProtocolVersion) + ", the host " +
                    std::to_string(version) + ": install matching hookhost and hookhost-runner");
    const PluginMetadata note = sandbox::get_metadata(in);
    const std::string sha256(in.get_bytes());
    if (!in.complete() || !message.fd) die(kExitProtocol, "malformed load message");
    // The same bytes are one library, as in process: instances of one plugin in an isolation
    // group share its globals.
    void*& library = libraries_[sha256];
    if (!library) {
      // Never closed: dlopen knows the library by this name, which must not be reused.
      // By pid, not /proc/self, as in the host: a debugger reads the library by this name.
      const int fd = message.fd.release();
      std::string path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd);
      if (::access(path.c_str(), R_OK) != 0) path = "/proc/self/fd/" + std::to_string(fd);
      // Library constructors run here and might call nothing but themselves.
      enter_plugin(message.instance);
      library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      leave_plugin();
      if (!library) {
        const char* error = ::dlerror();
        libraries_.erase(sha256);
        return refuse(std::string("the dynamic loader refused it: ") + (error ? error : "unknown"));
      }
    }
    const auto* entry = static_cast<const hh_plugin_entry*>(::dlsym(library, HH_ENTRY_SYMBOL));
    if (std::string why = check_entry(entry, note); !why.empty()) return refuse(why);
    // Instances of one isolation group may come from different libraries.
    entries_[message.instance] = entry;
    reply.put<uint8_t>(1);
    reply.put_text("");
    reply.put<uint32_t>(entry->state_version);
    return MessageType::loaded;
  }

  MessageType create(const Message& message, Writer& reply) {
    const auto loaded = entries_.find(message.instance);
    if (loaded == entries_.end()) die(kExitProtocol, "create before load");
    if (instances_.count(message.instance))
      die(kExitProtocol, "instance " + std::to_string(message.instance) + " exists already");
    const hh_plugin_entry* entry = loaded->second;
    Reader in(message.payload);
    auto made = std::make_unique<Instance>();
    Instance& inst = *made;
    inst.id = message.instance;
    inst.name = in.get_bytes();
    inst.run_dir = in.get_bytes();
    inst.config_dir = in.get_bytes();
    inst.plugin_id = in.get_bytes();
    inst.services = in.get<uint32_t>();
    // create() gets the parameters as hh_param_value, exactly as in the host.
    const auto count = in.get<uint32_t>();
    struct Param {
      std::string name;
      std::string text;
      std::vector<std::string> items;
      std::vector<const char*> item_pointers;
    };
    std::vector<Param> storage;
    std::vector<hh_param_value> values;
    for (uint32_t i = 0; i < count && !in.failed(); ++i) {
      Param p;
      hh_param_value v{};
      v.struct_size = HH_PARAM_VALUE_SIZE;
      p.name = in.get_bytes();
      v.type = in.get<int32_t>();
      v.is_set = in.get<int32_t>();
      v.bool_value = in.get<int32_t>();
      v.int_value = in.get<int64_t>();
      v.float_value = in.get<double>();
      p.text = in.get_bytes();
      const auto items = in.get<uint32_t>();
      for (uint32_t k = 0; k < items && !in.failed(); ++k) p.items.emplace_back(in.get_bytes());
      v.list_count = static_cast<uint32_t>(p.items.size());
      storage.push_back(std::move(p));
      values.push_back(v);
    }
    if (!in.complete()) die(kExitProtocol, "malformed create message");
    for (size_t i = 0; i < storage.size(); ++i) {
      Param& p = storage[i];
      for (const auto& item : p.items) p.item_pointers.push_back(item.c_str());
      values[i].name = p.name.c_str();
      values[i].string_value = p.text.c_str();
      values[i].list_items = p.item_pointers.empty() ? nullptr : p.item_pointers.data();
    }
    hh_hook* hook = nullptr;
    hh_error err;
    hh_error_init(&err);
    enter_plugin(inst.id);
    const hh_status status =
        call_create(*entry, &inst.host, inst.name.c_str(), values, &hook, &err);
    leave_plugin();
    reply.put<int32_t>(status);
    reply.put_text(std::string_view(err.message, ::strnlen(err.message, HH_ERROR_MESSAGE_SIZE)));
    const bool usable =
        status == HH_OK && hook && hook->struct_size >= HH_HOOK_SIZE_1_0 && hook->destroy;
    reply.put<uint8_t>(hook ? 1 : 0);
    reply.put<uint32_t>(hook ? hook->struct_size : 0);
    reply.put<uint8_t>(hook && hook->destroy ? 1 : 0);
    uint8_t implements = 0;
    if (usable) {
      // Copied once, as the host does: a plugin that rewrites its hh_hook changes nothing.
      inst.hook = hook;
      inst.begin = hook->begin;
      inst.after_create_session = hook->after_create_session;
      inst.before_run = hook->before_run;
      inst.after_run = hook->after_run;
      inst.end = hook->end;
      inst.destroy = hook->destroy;
      const bool callbacks[] = {inst.begin != nullptr, inst.after_create_session != nullptr,
                                inst.before_run != nullptr, inst.after_run != nullptr,
                                inst.end != nullptr};
      for (unsigned i = 0; i < sandbox::kCallbackCount; ++i)
        if (callbacks[i]) implements |= static_cast<uint8_t>(1u << i);
      instances_[inst.id] = std::move(made);
    } else {
      made.release();  // an instance that cannot be trusted is leaked, as the host does
    }
    reply.put<uint8_t>(implements);
    return MessageType::created;
  }

  // Runs one plugin function the way the in-process tier does, and writes the call_result.
  template <typename Fn>
  void run_call(Writer& reply, uint32_t instance, Fn&& fn) {
    err_.struct_size = HH_ERROR_SIZE;
    err_.code = 0;
    err_.message[0] = '\0';
    CallEnd end = CallEnd::returned;
    hh_status status = HH_OK;
    std::string what;
    enter_plugin(instance);
    try {
      status = fn(&err_);
    } catch (...) {
      // The in-process tier's words, whole: the host passes them on as they are.
      end = CallEnd::exception;
      what = describe_current_exception("the plugin");
    }
    leave_plugin();
    last_call_went_on_ =
        end == CallEnd::returned && (status == HH_OK || status == HH_STOP_REQUESTED);
    reply.put<uint8_t>(static_cast<uint8_t>(end));
    reply.put<int32_t>(status);
    reply.put<int32_t>(err_.code);
    // A message the plugin left unterminated is cut at the buffer's end, as in the host.
    if (end == CallEnd::exception)
      reply.put_text(std::string_view(what).substr(0, HH_ERROR_MESSAGE_SIZE - 1));
    else
      reply.put_text(
          std::string_view(err_.message, ::strnlen(err_.message, HH_ERROR_MESSAGE_SIZE)));
  }

  // Calls the hook's callback `fn` with `args` through run_call; a callback the hook does not
  // implement returns HH_OK, as in the host.
  template <typename Fn, typename... Args>
  void call_hook(Writer& reply, Instance& inst, Fn fn, Args... args) {
    run_call(reply, inst.id, [&](hh_error* e) { return fn ? fn(inst.hook, args..., e) : HH_OK; });
  }

  static hh_session_info read_session_info(Reader& in) {
    hh_session_info info{};
    info.struct_size = HH_SESSION_INFO_SIZE;
    info.creation = in.get<uint32_t>();
    info.global_step = in.get<int64_t>();
    return info;
  }

  // `reason` holds the text info.reason points at.
  static hh_end_info read_end_info(Reader& in, std::string& reason) {
    hh_end_info info{};
    info.struct_size = HH_END_INFO_SIZE;
    info.outcome = in.get<int32_t>();
    info.stop_cause = in.get<int32_t>();
    reason = in.get_bytes();
    info.reason = reason.c_str();
    info.global_step = in.get<int64_t>();
    return info;
  }

  static hh_run_context read_context(Reader& in) {
    hh_run_context ctx{};
    ctx.struct_size = HH_RUN_CONTEXT_SIZE;
    ctx.stop_requested = in.get<int32_t>();
    ctx.global_step = in.get<int64_t>();
    ctx.iteration = in.get<int64_t>();
    ctx.wall_time_ns = in.get<int64_t>();
    return ctx;
  }

  MessageType call(const Message& message, Writer& reply) {
    Instance& inst = instance(message.instance);
    Reader in(message.payload);
    const auto callback = in.get<uint8_t>();
    switch (callback) {
      case 0:
        if (!in.complete()) break;
        call_hook(reply, inst, inst.begin);
        return MessageType::call_result;
      case 1: {
        const hh_session_info info = read_session_info(in);
        if (!in.complete()) break;
        call_hook(reply, inst, inst.after_create_session, &info);
        return MessageType::call_result;
      }
      case 2:
      case 3: {
        // before_run (2) and after_run (3) share the context; after_run's values follow it.
        const bool before = callback == 2;
        const hh_run_context ctx = read_context(in);
        std::string problem;
        const hh_run_values values = before ? hh_run_values{} : read_values(in, &problem);
        if (!in.complete()) break;
        if (!problem.empty()) {
          run_call(reply, inst.id,
                   [&](hh_error* e) { return hh_fail(e, HH_ERROR_FATAL, problem.c_str()); });
        } else if (before) {
          inst.request_open = true;
          call_hook(reply, inst, inst.before_run, &ctx, &inst.request);
          inst.request_open = false;
        } else {
          call_hook(reply, inst, inst.after_run, &ctx, &values);
        }
        return MessageType::call_result;
      }
      case 4: {
        std::string reason;
        const hh_end_info info = read_end_info(in, reason);
        if (!in.complete()) break;
        call_hook(reply, inst, inst.end, &info);
        return MessageType::call_result;
      }
      default: break;
    }
    die(kExitProtocol, "malformed call message");
  }

  // An observer's step: its before_run (unless the host ran it, then the names it asked for come
  // with the message), then its after_run with the values it asked for, without waiting for the
  // host in between. before_run's call_result goes out as soon as it returns, with the names it
  // asked for; the observed reply says whether after_run ran (not after a failed before_run, nor
  // when a name it asked for is not among the values) and how it ended.
  MessageType observe(const Message& message, Writer& reply) {
    Instance& inst = instance(message.instance);
    Reader in(message.payload);
    const bool call_before = in.get<uint8_t>() != 0;
    const hh_run_context before_ctx = read_context(in);
    const hh_run_context after_ctx = read_context(in);
    std::vector<std::string> given;
    if (!call_before) {
      const auto count = in.get<uint32_t>();
      for (uint32_t i = 0; i < count && !in.failed(); ++i) given.emplace_back(in.get_bytes());
    }
    std::string problem;
    const hh_run_values values = read_values(in, &problem);
    if (!in.complete()) die(kExitProtocol, "malformed observe message");
    const std::vector<std::string>* asked = &given;
    bool go_on = true;
    if (call_before) {
      Writer returned;
      if (!problem.empty()) {
        run_call(returned, inst.id,
                 [&](hh_error* e) { return hh_fail(e, HH_ERROR_FATAL, problem.c_str()); });
        go_on = false;
      } else {
        inst.asked.clear();
        inst.observing = inst.request_open = true;
        call_hook(returned, inst, inst.before_run, &before_ctx, &inst.request);
        inst.observing = inst.request_open = false;
        go_on = last_call_went_on_;
      }
      returned.put<uint32_t>(static_cast<uint32_t>(inst.asked.size()));
      for (const std::string& name : inst.asked) returned.put_text(name);
      if (connection().main.send(MessageType::call_result, inst.id, returned.bytes()) !=
          ChannelStatus::ok)
        ::_exit(0);  // the host is gone
      asked = &inst.asked;
    }
    picked_.clear();
    for (const std::string& name : *asked) {
      const auto it = std::find_if(views_.begin(), views_.end(),
                                   [&](const hh_tensor& t) { return name == t.name; });
      if (it == views_.end()) {
        go_on = false;  // the host tells the hook why
        break;
      }
      picked_.push_back(*it);
    }
    if (!call_before && !problem.empty()) {
      reply.put<uint8_t>(1);
      run_call(reply, inst.id,
               [&](hh_error* e) { return hh_fail(e, HH_ERROR_FATAL, problem.c_str()); });
      return MessageType::observed;
    }
    go_on = go_on && problem.empty() && inst.after_run;
    reply.put<uint8_t>(go_on ? 1 : 0);
    if (go_on) {
      hh_run_values mine = values;
      mine.count = static_cast<uint32_t>(picked_.size());
      mine.tensors = picked_.empty() ? nullptr : picked_.data();
      call_hook(reply, inst, inst.after_run, &after_ctx, &mine);
    }
    return MessageType::observed;
  }

  // Views into the read-only arena for an after_run; every offset is checked against its size.
  hh_run_values read_values(Reader& in, std::string* problem) {
    const auto count = in.get<uint32_t>();
    views_.clear();
    for (uint32_t i = 0; i < count && !in.failed(); ++i) {
      const auto name_offset = in.get<uint64_t>();
      const auto shape_offset = in.get<uint64_t>();
      const auto rank = in.get<uint32_t>();
      const auto dtype = in.get<int32_t>();
      const auto data_offset = in.get<uint64_t>();
      const auto byte_size = in.get<uint64_t>();
      auto inside = [&](uint64_t offset, uint64_t size) {
        return offset <= arena_size_ && size <= arena_size_ - offset;
      };
      if (!inside(name_offset, 1) ||
          !std::memchr(arena_ + name_offset, 0, arena_size_ - name_offset) || rank > HH_MAX_RANK ||
          !inside(shape_offset, rank * sizeof(int64_t)) || !inside(data_offset, byte_size)) {
        *problem = "the host sent fetched values outside the arena the runner mapped";
        continue;
      }
      hh_tensor t;
      hh_tensor_init(&t);
      t.name = reinterpret_cast<const char*>(arena_ + name_offset);
      t.dtype = dtype;
      t.rank = rank;
      t.shape = rank ? reinterpret_cast<const int64_t*>(arena_ + shape_offset) : nullptr;
      t.data = byte_size ? arena_ + data_offset : nullptr;
      t.byte_size = byte_size;
      views_.push_back(t);
    }
    hh_run_values values{};
    values.struct_size = HH_RUN_VALUES_SIZE;
    values.count = static_cast<uint32_t>(views_.size());
    values.tensors = views_.empty() ? nullptr : views_.data();
    values.tensor_stride = sizeof(hh_tensor);
    return values;
  }

  MessageType map_values(const Message& message, Writer& reply) {
    Reader in(message.payload);
    const auto size = in.get<uint64_t>();
    in.get<uint64_t>();  // the generation: informative
    if (!in.complete() || !message.fd) die(kExitProtocol, "malformed map_values message");
    // Read-only: the descriptor was opened O_RDONLY, so PROT_WRITE (now or by mprotect) fails.
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, message.fd.get(), 0);
    if (map == MAP_FAILED) {
      reply.put<uint8_t>(0);
      reply.put<uint64_t>(0);
      reply.put_text(std::strerror(errno));
      return MessageType::values_mapped;
    }
    if (arena_) ::munmap(const_cast<std::byte*>(arena_), arena_size_);
    arena_ = static_cast<const std::byte*>(map);
    arena_size_ = size;
    reply.put<uint8_t>(1);
    reply.put<uint64_t>(reinterpret_cast<uintptr_t>(map));
    reply.put_text("");
    return MessageType::values_mapped;
  }

  MessageType destroy(const Message& message, Writer& reply) {
    Instance& inst = instance(message.instance);
    std::string error;
    enter_plugin(message.instance);
    try {
      inst.destroy(inst.hook);
    } catch (...) {
      error = describe_current_exception("destroy()");
    }
    leave_plugin();
    // The Instance stays: a plugin thread that outlives destroy finds it, never freed memory.
    instances_.at(message.instance).release();
    instances_.erase(message.instance);
    reply.put_text(error);
    return MessageType::destroyed;
  }

  std::map<uint32_t, const hh_plugin_entry*> entries_;  // by instance id, from its load
  std::map<std::string, void*> libraries_;              // by the SHA-256 of their bytes
  std::map<uint32_t, std::unique_ptr<Instance>> instances_;
  hh_error err_{};
  std::vector<hh_tensor> views_;
  std::vector<hh_tensor> picked_;   // an observer's values, by the names it asked for
  bool last_call_went_on_ = false;  // the last run_call returned HH_OK or HH_STOP_REQUESTED
  const std::byte* arena_ = nullptr;
  size_t arena_size_ = 0;
};

// The benchmark's floor: the same channel, no plugin.
int echo() {
  sandbox::Channel& channel = connection().main;
  Message message;
  while (channel.receive(message) == ChannelStatus::ok)
    if (channel.send(message.type, message.instance, message.payload) != ChannelStatus::ok) break;
  return 0;
}

}  // namespace
}  // namespace hookhost::runner

int main(int argc, char** argv) {
  using namespace hookhost::runner;
  // A second line behind the host's spawn, which closes every other descriptor already.
  // Descriptor 5 is the violation pipe's write end when the host made one.
  ::syscall(SYS_close_range, 6u, ~0u, 0u);
  long parent = -1;
  uint64_t memory_limit_mb = 0;
  bool echo_mode = false;
  bool confine = false;
  bool confine_required = false;
  hookhost::confine::CapabilityPolicy policy;
  for (int i = 1; i < argc; ++i) {
    std::string policy_error;
    if (hookhost::confine::parse_runner_arg(argc, argv, &i, &policy, &policy_error)) {
      if (!policy_error.empty()) die(kExitUsage, policy_error);
      --i;  // the loop's ++i: parse_runner_arg is past what it read
      continue;
    }
    const std::string arg = argv[i];
    if (arg == "--parent-pid" && i + 1 < argc)
      parent = std::strtol(argv[++i], nullptr, 10);
    else if (arg == "--memory-limit-mb" && i + 1 < argc)
      memory_limit_mb = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--echo")
      echo_mode = true;
    else if (arg == "--confine")
      confine = true;
    else if (arg == "--confine-required")
      confine_required = true;
    else
      die(kExitUsage, "unknown argument '" + arg + "' (this program is started by hookhost)");
  }
  if (parent <= 0)
    die(kExitUsage, "--parent-pid is required (this program is started by hookhost)");
  // Dies with the host; the check after it catches a host that died before prctl ran.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) die(kExitOrphaned, "the host process is gone");
  // A plugin's printf reaches the host's log line by line, not when a buffer fills.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // While this process has one thread and no plugin code: the policy covers everything a plugin
  // runs. apply_policy sets the memory limit last, since libseccomp needs memory (ASan's shadow).
  if (confine) {
    if (policy.limits.address_space_mb == 0) policy.limits.address_space_mb = memory_limit_mb;
    const int violation_fd = ::fcntl(hookhost::confine::kRunnerViolationFd, F_GETFD) >= 0
                                 ? hookhost::confine::kRunnerViolationFd
                                 : -1;
    // Fails closed: a policy that cannot be applied (a missing path, a refused rule or filter)
    // leaves no hook to run; the host applies the hook's on_crash. What the kernel lacks is not a
    // failure (apply_policy skips it; the host said so once, and confine = required refused it).
    if (const std::string error = hookhost::confine::apply_policy(policy, violation_fd);
        !error.empty())
      die(kExitConfine, "confinement could not be applied, so no hook runs in this runner: " +
                            error + (confine_required ? " (confine = required)" : ""));
  } else {
    // An unconfined runner's descriptor 5 is nobody's: a plugin's file may take it.
    ::close(hookhost::confine::kRunnerViolationFd);
    hookhost::confine::ResourceLimits limits;
    limits.address_space_mb = memory_limit_mb;
    if (std::string error =
            hookhost::confine::set_late_limits(limits, hookhost::confine::address_space_base());
        !error.empty())
      die(kExitUsage, error);
  }

  Connection& c = connection();
  c.main =
      hookhost::sandbox::Channel(hookhost::sandbox::UniqueFd(hookhost::sandbox::kRunnerChannelFd));
  c.side = hookhost::sandbox::Channel(
      hookhost::sandbox::UniqueFd(hookhost::sandbox::kRunnerSideChannelFd));
  if (echo_mode) return echo();
  Runner runner;
  const int status = runner.serve();
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(status);
}
