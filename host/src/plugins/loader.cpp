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
#include "plugins/trust.hpp"
#include "runtime/signal_guard.hpp"

namespace hookhost {

namespace fs = std::filesystem;

namespace {

// Every library ever opened, keyed by canonical path. Libraries are never unloaded: plugin code
// may still be referenced (thread-local destructors, callbacks, GNU-unique symbols), and dlclose
// would unmap it under them. A refused library stays too, since its constructors already ran.
struct Registered {
  int private_copy = -1;  // the memfd the library was opened from; never closed (see below)
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

// The file's bytes in a memfd, as /proc/self/fd/N. The descriptor stays open for the life of the
// process: dlopen matches an already loaded object by name, so the number must never be reused.
int private_copy_of(const fs::path& file, const std::string& where) {
  const auto fail = [&](const char* what) {
    return LoadError(where + "cannot make a private copy to load (" + what +
                     "): " + std::strerror(errno));
  };
  const int in = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw fail("open");
  struct stat st {};
  if (::fstat(in, &st) != 0) {
    ::close(in);
    throw fail("stat");
  }
  const int out = ::memfd_create(file.filename().c_str(), MFD_CLOEXEC);
  if (out < 0) {
    ::close(in);
    throw fail("memfd_create");
  }
  off_t offset = 0;
  while (offset < st.st_size) {
    const ssize_t n = ::sendfile(out, in, &offset, static_cast<size_t>(st.st_size - offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // a file cut short while copying: the note check below refuses it
  }
  ::close(in);
  return out;
}

std::string quote(std::string_view s) {
  constexpr std::size_t kMax = 80;
  std::string out = "'";
  out += s.substr(0, kMax);
  if (s.size() > kMax) out += "...";
  return out + "'";
}

std::string flag_name(ParamFlag f) {
  switch (f) {
    case ParamFlag::optional: return "OPTIONAL";
    case ParamFlag::required: return "REQUIRED";
    case ParamFlag::defaulted: return "DEFAULT";
  }
  return "?";
}

std::string abi_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// The first field where the note and the entry disagree, as "note says X, entry says Y".
std::string first_difference(const PluginMetadata& note, const PluginMetadata& entry) {
  auto differ = [](const std::string& field, const std::string& n, const std::string& e) {
    return "note says " + field + " " + n + ", entry says " + e;
  };
  if (note.id != entry.id) return differ("id", quote(note.id), quote(entry.id));
  if (note.version != entry.version) {
    return differ("version", quote(note.version), quote(entry.version));
  }
  if (note.description != entry.description) {
    return differ("description", quote(note.description), quote(entry.description));
  }
  if (note.abi_major != entry.abi_major || note.abi_minor != entry.abi_minor ||
      note.min_abi_minor != entry.min_abi_minor) {
    return differ("ABI (built for, runs on)",
                  abi_text(note.abi_major, note.abi_minor) + ", " +
                      abi_text(note.abi_major, note.min_abi_minor),
                  abi_text(entry.abi_major, entry.abi_minor) + ", " +
                      abi_text(entry.abi_major, entry.min_abi_minor));
  }
  if (note.params.size() != entry.params.size()) {
    return "note declares " + std::to_string(note.params.size()) + " parameters, entry declares " +
           std::to_string(entry.params.size());
  }
  for (std::size_t i = 0; i < note.params.size(); ++i) {
    const ParamSpec& n = note.params[i];
    const ParamSpec& e = entry.params[i];
    const std::string field = "parameter " + std::to_string(i + 1) + " " + quote(n.name) + " ";
    if (n.name != e.name) return differ(field + "name", quote(n.name), quote(e.name));
    if (n.type != e.type) {
      return differ(field + "type", param_type_name(n.type), param_type_name(e.type));
    }
    if (n.flag != e.flag) return differ(field + "flag", flag_name(n.flag), flag_name(e.flag));
    if (n.default_value != e.default_value) {
      return differ(field + "default", quote(n.default_value), quote(e.default_value));
    }
    if (n.help != e.help) return differ(field + "help", quote(n.help), quote(e.help));
  }
  return {};
}

// Checks the entry symbol of an opened library against the note. Throws LoadError with the
// reason alone; the caller puts the file name in front.
std::shared_ptr<const LoadedPlugin> check_entry(const boost::dll::shared_library& library,
                                                const DiscoveredPlugin& plugin,
                                                std::string sha256) {
  const std::string rebuild =
      " — rebuild the plugin with HH_PLUGIN_DEFINE / HOOKHOST_PLUGIN against this hookhost";
  if (!library.has(HH_ENTRY_SYMBOL)) {
    throw LoadError("has no symbol " HH_ENTRY_SYMBOL
                    ": not a hookhost ABI 1 plugin, or the symbol is not exported" +
                    rebuild);
  }
  const auto& entry = library.get<const hh_plugin_entry>(HH_ENTRY_SYMBOL);
  if (entry.struct_size < HH_PLUGIN_ENTRY_SIZE_1_0) {
    throw LoadError(HH_ENTRY_SYMBOL " is too small: struct_size " +
                    std::to_string(entry.struct_size) + ", below the ABI 1.0 size " +
                    std::to_string(HH_PLUGIN_ENTRY_SIZE_1_0) + rebuild);
  }
  if (!hh_abi_is_compatible(entry.abi_major, entry.min_abi_minor)) {
    throw LoadError(HH_ENTRY_SYMBOL " is built for hookhost ABI " +
                    abi_text(entry.abi_major, entry.min_abi_minor) + "; this host supports ABI " +
                    abi_text(HH_ABI_MAJOR, HH_ABI_MINOR) + rebuild);
  }
  if (!entry.create) throw LoadError(HH_ENTRY_SYMBOL " has no create function" + rebuild);
  if (entry.state_version == 0) throw LoadError(HH_ENTRY_SYMBOL " has state_version 0 (>= 1)");

  // The entry's parameter table is only read as far as the note vouches for, with the entry's
  // own stride, and each descriptor is checked before metadata_from_entry copies it.
  const PluginMetadata& note = plugin.metadata;
  auto disagree = [&](const std::string& what) {
    return LoadError("its note and its entry symbol disagree: " + what +
                     " — both must come from one HH_PLUGIN_DEFINE / HOOKHOST_PLUGIN; rebuild the "
                     "plugin");
  };
  if (entry.param_count != note.params.size()) {
    throw disagree("note declares " + std::to_string(note.params.size()) +
                   " parameters, entry declares " + std::to_string(entry.param_count));
  }
  if (entry.param_count > 0 && !entry.params) throw disagree("entry's parameter table is null");
  if (entry.param_count > 0 && entry.param_stride < HH_PARAM_DESC_SIZE_1_0) {
    throw disagree("entry's param_stride " + std::to_string(entry.param_stride) +
                   " is below the ABI 1.0 size of hh_param_desc (" +
                   std::to_string(HH_PARAM_DESC_SIZE_1_0) + ")");
  }
  for (uint32_t i = 0; i < entry.param_count; ++i) {
    const hh_param_desc& d = *hh_entry_param(&entry, i);
    const std::string which = "entry parameter " + std::to_string(i + 1);
    if (d.struct_size < HH_PARAM_DESC_SIZE_1_0 || d.struct_size > entry.param_stride) {
      throw disagree(which + " has struct_size " + std::to_string(d.struct_size) + " (between " +
                     std::to_string(HH_PARAM_DESC_SIZE_1_0) + " and the stride " +
                     std::to_string(entry.param_stride) + " expected)");
    }
    if (d.type < HH_PARAM_TYPE_BOOL || d.type > HH_PARAM_TYPE_STRING_LIST) {
      throw disagree(which + " has unknown type " + std::to_string(d.type));
    }
    if (d.flags > HH_PARAM_FLAG_DEFAULT) {
      throw disagree(which + " has unknown flags " + std::to_string(d.flags));
    }
  }
  std::string diff = first_difference(note, metadata_from_entry(entry));
  if (!diff.empty()) throw disagree(diff);
  return std::make_shared<const LoadedPlugin>(plugin.file, note, &entry, std::move(sha256));
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
  const int copy_fd = private_copy_of(key, where);
  const fs::path copy = "/proc/self/fd/" + std::to_string(copy_fd);
  NoteReadResult note = read_plugin_note(copy);
  if (!note.metadata) {
    throw LoadError(where + "cannot load: " + note.error);
  }
  if (*note.metadata != plugin.metadata) {
    ::close(copy_fd);
    throw LoadError(where + "the file changed since discovery (its note describes plugin " +
                    quote(note.metadata->id) + " " + quote(note.metadata->version) +
                    ") — run plugin discovery again");
  }
  std::string sha256;
  try {
    sha256 = sha256_of_file(copy);
  } catch (const std::exception& e) {
    ::close(copy_fd);
    throw LoadError(where + e.what());
  }
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
    // Nothing was mapped: the descriptor's number may be reused.
    ::close(copy_fd);
    throw LoadError(where + "the dynamic loader refused it: " + loader_reason(e) +
                    " — install the libraries it needs, or rebuild it with hookhost_add_plugin "
                    "(-Wl,-z,defs) so unresolved symbols fail at link time");
  }

  // A library constructor that replaced the host's signal handlers (see signal_guard.hpp).
  signals.restore_and_report(*spdlog::default_logger(),
                             "plugin '" + plugin.metadata.id + "' (" + key.string() + ")",
                             "while loading (in a library constructor)");
  Registered entry{copy_fd, std::move(library), nullptr, {}};
  try {
    entry.plugin = check_entry(entry.library, plugin, std::move(sha256));
  } catch (const LoadError& e) {
    entry.refusal = e.what();
  }
  auto it = reg.entries.emplace(key, std::move(entry)).first;
  if (!it->second.plugin) throw LoadError(where + it->second.refusal);
  if (Dl_info info{}; ::dladdr(&it->second.plugin->entry(), &info) != 0)
    register_plugin_library(info.dli_fbase, key.string());
  spdlog::debug("loaded plugin '{}' {} from {}", plugin.metadata.id, plugin.metadata.version,
                key.string());
  return it->second.plugin;
}

}  // namespace hookhost
