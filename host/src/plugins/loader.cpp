#include "hookhost/host/loader.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/dll/shared_library.hpp>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <system_error>
#include <utility>

#include "plugins/elf_note.hpp"
#include "plugins/entry_check.hpp"
#include "plugins/trust.hpp"
#include "plugins/signal_dispositions.hpp"
#include "support/unique_fd.hpp"

namespace hookhost {

namespace fs = std::filesystem;

namespace {

// Every library ever opened, keyed by canonical path. Libraries are never unloaded: plugin code
// may still be referenced (thread-local destructors, callbacks, GNU-unique symbols), and dlclose
// would unmap it under them. A refused library stays too, since its constructors already ran.
struct Registered {
  UniqueFd private_copy;  // the memfd the library was opened from; never closed (see below)
  boost::dll::shared_library library;
  std::shared_ptr<const LoadedPlugin> plugin;  // null when the checks refused it
  std::string refusal;                         // why, when plugin is null (without the file name)
};

struct Registry {
  std::mutex mutex;
  std::map<fs::path, Registered> entries;
};

Registry& registry() {
  // Deliberately leaked: no destructor at exit means no dlclose during static destruction.
  static Registry* instance = new Registry;
  return *instance;
}

// The file's bytes in a sealed memfd: nothing (this process, a runner it is passed to) can change
// them afterwards, so what was checked and hashed is what is opened, now and at every restart.
UniqueFd private_copy_of(const fs::path& file, const std::string& where) {
  const auto fail = [&](const char* what) {
    return LoadError(where + "cannot make a private copy to load (" + what +
                     "): " + std::strerror(errno));
  };
  const UniqueFd in(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) throw fail("open");
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) throw fail("stat");
  UniqueFd out(::memfd_create(file.filename().c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!out) throw fail("memfd_create");
  off_t offset = 0;
  while (offset < st.st_size) {
    const ssize_t n =
        ::sendfile(out.get(), in.get(), &offset, static_cast<size_t>(st.st_size - offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // a file cut short while copying: the note check refuses it
  }
  if (::fcntl(out.get(), F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) !=
      0)
    throw fail("seal");
  return out;
}

// The copy's note must be the one discovery read; then its hash.
std::string check_copy(const UniqueFd& copy_fd, const DiscoveredPlugin& plugin,
                       const std::string& where) {
  const fs::path copy = "/proc/self/fd/" + std::to_string(copy_fd.get());
  NoteReadResult note = read_plugin_note(copy);
  if (!note.metadata) throw LoadError(where + "cannot load: " + note.error);
  if (*note.metadata != plugin.metadata) {
    throw LoadError(where + "the file changed since discovery (its note describes plugin " +
                    quote(note.metadata->id) + " " + quote(note.metadata->version) +
                    ") — run plugin discovery again");
  }
  try {
    return sha256_of_file(copy);
  } catch (const std::exception& e) {
    throw LoadError(where + e.what());
  }
}

// Boost.DLL wraps dlerror's text ("x.so: undefined symbol: f") in its own words; keep dlerror's.
std::string loader_reason(const std::exception& e) {
  std::string_view what = e.what();
  constexpr std::string_view kMarker = "(dlerror system message: ";
  std::size_t begin = what.find(kMarker);
  std::size_t end = what.rfind(')');
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) {
    return std::string(what);
  }
  begin += kMarker.size();
  return std::string(what.substr(begin, end - begin));
}

}  // namespace

std::shared_ptr<const LoadedPlugin> private_plugin_copy(const DiscoveredPlugin& plugin) {
  const std::string where = plugin.file.string() + ": ";
  UniqueFd copy_fd = private_copy_of(plugin.file, where);
  std::string sha256 = check_copy(copy_fd, plugin, where);
  // The descriptor's number, kept alive (and closed) by the UniqueFd that owns it.
  struct Owned {
    UniqueFd owner;
    int number;
  };
  const int number = copy_fd.get();
  auto owned = std::make_shared<const Owned>(Owned{std::move(copy_fd), number});
  std::shared_ptr<const int> copy(owned, &owned->number);
  return std::make_shared<const LoadedPlugin>(plugin.file, plugin.metadata, nullptr,
                                              std::move(sha256), std::move(copy));
}

std::shared_ptr<const LoadedPlugin> load_plugin(const DiscoveredPlugin& plugin) {
  const std::string where = plugin.file.string() + ": ";
  std::error_code ec;
  fs::path key = fs::canonical(plugin.file, ec);
  if (ec) {
    throw LoadError(where + "cannot load: " + ec.message() +
                    " — the file is gone or unreadable; run plugin discovery again");
  }

  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  if (auto it = reg.entries.find(key); it != reg.entries.end()) {
    if (!it->second.plugin) throw LoadError(where + it->second.refusal);
    if (it->second.plugin->metadata() != plugin.metadata) {
      throw LoadError(where + "this file was already loaded as plugin " +
                      quote(it->second.plugin->metadata().id) +
                      " with different metadata (was it replaced?) — restart the process to "
                      "load the new version");
    }
    return it->second.plugin;
  }

  // Check the copy right before dlopen: the file may have changed since discovery, and dlopen of
  // a truncated file dies with SIGBUS instead of failing.
  UniqueFd copy_fd = private_copy_of(key, where);
  std::string sha256 = check_copy(copy_fd, plugin, where);
  // By pid, not /proc/self: the loaded library keeps this name, and a debugger opens it from its
  // own process to read the plugin's symbols (through /proc/self it would read one of its own
  // files).
  fs::path copy = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(copy_fd.get());
  if (::access(copy.c_str(), R_OK) != 0) copy = "/proc/self/fd/" + std::to_string(copy_fd.get());
  // Said before dlopen runs the library's constructors, so a constructor that crashes is named.
  spdlog::info("loading plugin '{}' from {}", plugin.metadata.id, key.string());

  boost::dll::shared_library library;
  const SignalDispositions signals = SignalDispositions::snapshot();
  try {
    // rtld_now: a missing symbol fails here with dlerror's text instead of killing the process at
    // the first call; rtld_local: plugins cannot interpose on each other.
    library = boost::dll::shared_library(
        copy, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    // Nothing was mapped: the descriptor's number may be reused (copy_fd closes it).
    throw LoadError(where + "the dynamic loader refused it: " + loader_reason(e) +
                    " — install the libraries it needs, or rebuild it with hookhost_add_plugin "
                    "(-Wl,-z,defs) so unresolved symbols fail at link time");
  }

  // A library constructor that replaced the host's signal handlers (see signal_guard.hpp).
  signals.restore_and_report(*spdlog::default_logger(),
                             "plugin '" + plugin.metadata.id + "' (" + key.string() + ")",
                             "while loading (in a library constructor)");
  Registered entry{std::move(copy_fd), std::move(library), nullptr, {}};
  const hh_plugin_entry* symbol = entry.library.has(HH_ENTRY_SYMBOL)
                                      ? &entry.library.get<const hh_plugin_entry>(HH_ENTRY_SYMBOL)
                                      : nullptr;
  entry.refusal = check_entry(symbol, plugin.metadata);
  if (entry.refusal.empty())
    entry.plugin = std::make_shared<const LoadedPlugin>(plugin.file, plugin.metadata, symbol,
                                                        std::move(sha256));
  auto it = reg.entries.emplace(key, std::move(entry)).first;
  if (!it->second.plugin) throw LoadError(where + it->second.refusal);
  if (Dl_info info{}; ::dladdr(&it->second.plugin->entry(), &info) != 0)
    register_plugin_library(info.dli_fbase, key.string());
  spdlog::debug("loaded plugin '{}' {} from {}", plugin.metadata.id, plugin.metadata.version,
                key.string());
  return it->second.plugin;
}

}  // namespace hookhost
