#include "job/hook_policy.hpp"

#include <algorithm>
#include <system_error>

#include "control/token.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

// Where a hook's relative read paths start: the config file's folder, as for every path in it.
fs::path config_folder(const JobConfig& cfg) {
  return cfg.file ? fs::absolute(*cfg.file).parent_path() : fs::current_path();
}

// `path` made absolute against `base`, `.` and `..` folded away.
fs::path absolute_from(const fs::path& base, const fs::path& path) {
  return (path.is_absolute() ? path : base / path).lexically_normal();
}

void add_unique(std::vector<std::string>& list, const fs::path& path) {
  const std::string text = path.string();
  if (std::find(list.begin(), list.end(), text) == list.end()) list.push_back(text);
}

// The name of `path` the runner can open without following a link (it follows none on a policy's
// paths): the operator's and the system's links resolved now, but none below the hook's own folder
// `own`, where the hook itself may have planted them (in an earlier run of a resumed job): such a
// path keeps its link, and the runner grants nothing through it.
fs::path without_links(const fs::path& path, const fs::path& own) {
  const fs::path below = path.lexically_relative(own);
  if (!below.empty() && *below.begin() != "..") return below == "." ? own : own / below;
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  return ec ? path : real;
}

}  // namespace

// The string values of parameter `name` (a string or each item of a string list), empty ones
// left out.
std::vector<std::string> param_paths(const ResolvedParams& params, const std::string& name) {
  std::vector<std::string> out;
  const ResolvedParams::Value* value = params.find(name);
  if (!value) return out;
  if (value->spec.type == HH_PARAM_TYPE_STRING_LIST)
    for (const std::string& item : value->list) {
      if (!item.empty()) out.push_back(item);
    }
  else if (!value->s.empty())
    out.push_back(value->s);
  return out;
}

fs::path hook_run_dir(const fs::path& run_dir, const std::string& instance) {
  return run_dir / "hooks" / instance;
}

bool network_granted(const EffectiveIsolation& iso, const PluginNeeds& needs) {
  return iso.allow_network.value_or(iso.grant_declared && needs.network);
}

bool processes_granted(const EffectiveIsolation& iso, const PluginNeeds& needs) {
  return iso.allow_processes.value_or(iso.grant_declared && needs.processes);
}

bool beneath_any(const fs::path& path, const std::vector<fs::path>& roots) {
  const fs::path p = path.lexically_normal();
  return std::any_of(roots.begin(), roots.end(), [&](const fs::path& root) {
    const fs::path rel = p.lexically_relative(root.lexically_normal());
    return !rel.empty() && *rel.begin() != "..";
  });
}

namespace {

// The system's folders every confined hook reads (confine/policy.hpp), without this process's
// own /proc folder: a plugin's declared read beneath one of them needs no grant.
std::vector<fs::path> system_folders() {
  std::vector<fs::path> out;
  for (const std::string& path : confine::system_read_paths())
    if (path.rfind("/proc/", 0) != 0) out.emplace_back(path);
  return out;
}

}  // namespace

confine::CapabilityPolicy hook_policy(const JobConfig& cfg, const PlannedHook& item,
                                      const fs::path& own_run_dir,
                                      std::vector<fs::path>* made_folders) {
  const PluginNeeds& needs = item.plugin->metadata().needs;
  const EffectiveIsolation& iso = item.isolation;
  const std::string hook = describe_hook(item.hook->name, display_text(item.plugin->metadata().id));
  confine::CapabilityPolicy policy;
  // What the plugin declares that no key of the configuration grants: the hook is refused.
  std::vector<std::string> asked, grants;
  auto ungranted = [&](const std::string& declaration, const std::string& granting_key) {
    asked.push_back(declaration);
    grants.push_back(granting_key);
  };

  // Reads: each must exist now, since the kernel binds a rule to what the path names when the
  // runner starts; a missing one is refused rather than widened to its parent.
  const fs::path config_dir = config_folder(cfg);
  auto add_read = [&](const fs::path& path, const std::string& declared_by, const std::string& key,
                      bool may_appear = false) {
    std::error_code ec;
    // A file a parameter names may appear while the job runs (time_limit's stop_file): its
    // folder, which the operator named by naming the file, is granted instead.
    if (may_appear && !fs::exists(path, ec) && fs::is_directory(path.parent_path(), ec)) {
      add_unique(policy.read, without_links(path.parent_path(), own_run_dir));
      return;
    }
    if (!fs::exists(path, ec))
      throw ConfigError(cfg.where(*item.hook, key) + hook + " may read " +
                            display_text(path.string()) + " (" + declared_by +
                            "), which does not exist: create it, or correct " + declared_by,
                        key);
    add_unique(policy.read, without_links(path, own_run_dir));
  };
  // A read the plugin chose (its note, or a parameter's default): granted by grant = declared,
  // by an allow_read at or above it, or when it is one of the system's folders every hook reads.
  const std::vector<fs::path> system = system_folders();
  auto plugins_read = [&](const fs::path& path, const std::string& declaration,
                          const std::string& declared_by, const std::string& key) {
    if (iso.grant_declared || beneath_any(path, iso.allow_read) || beneath_any(path, system))
      add_read(path, declared_by, key, !key.empty());
    else
      ungranted(declaration, "allow_read = " + display_text(path.string()));
  };
  for (const std::string& path : needs.read)
    plugins_read(absolute_from(config_dir, path), "needs.read=" + display_text(path),
                 "the plugin's needs.read=" + display_text(path), "");
  for (const std::string& name : needs.read_params) {
    const ResolvedParams::Value* value = item.params.find(name);
    for (const std::string& path : param_paths(item.params, name)) {
      const fs::path absolute = absolute_from(config_dir, path);
      // A path the configuration names is the operator's grant.
      if (value && !value->from_default)
        add_read(absolute, "its parameter " + name, name, true);
      else
        plugins_read(absolute,
                     "needs.read.param=" + name + " (its default " + display_text(path) + ")",
                     "its parameter " + name, name);
    }
  }
  for (const fs::path& path : iso.allow_read) add_read(path, "allow_read", "allow_read");

  // Writes: the hook's own folder, then what it declares and what the config adds. A file that
  // does not exist yet needs its folder, which is made as the hook would make it.
  auto add_write = [&](const fs::path& path, const std::string& declared_by,
                       const std::string& key) {
    std::error_code ec;
    if (fs::exists(path, ec)) {
      add_unique(policy.write, without_links(path, own_run_dir));
      return;
    }
    const fs::path folder = path.parent_path();
    if (made_folders) {
      fs::path top;  // the highest folder of `folder` that does not exist yet
      for (fs::path f = folder; !f.empty() && f != f.root_path() && !fs::exists(f, ec);
           f = f.parent_path())
        top = f;
      if (!top.empty()) made_folders->push_back(top);
    }
    fs::create_directories(folder, ec);
    if (ec)
      throw ConfigError(cfg.where(*item.hook, key) + hook + " may write " +
                            display_text(path.string()) + " (" + declared_by +
                            "), but its folder cannot be made: " + ec.message(),
                        key);
    add_unique(policy.write, without_links(folder, own_run_dir));
  };
  // A write the plugin chose: granted beneath its own run folder, by grant = declared, or by an
  // allow_write at or above it.
  auto plugins_write = [&](const fs::path& path, const std::string& declaration,
                           const std::string& declared_by, const std::string& key) {
    if (iso.grant_declared || beneath_any(path, {own_run_dir}) ||
        beneath_any(path, iso.allow_write))
      add_write(path, declared_by, key);
    else
      ungranted(declaration, "allow_write = " + display_text(path.string()));
  };
  add_unique(policy.write, own_run_dir);
  for (const std::string& path : needs.write)
    plugins_write(absolute_from(own_run_dir, path), "needs.write=" + display_text(path),
                  "the plugin's needs.write=" + display_text(path), "");
  for (const std::string& name : needs.write_params) {
    const ResolvedParams::Value* value = item.params.find(name);
    for (const std::string& path : param_paths(item.params, name)) {
      const fs::path absolute = absolute_from(own_run_dir, path);
      if (value && !value->from_default)
        add_write(absolute, "its parameter " + name, name);
      else
        plugins_write(absolute,
                      "needs.write.param=" + name + " (its default " + display_text(path) + ")",
                      "its parameter " + name, name);
    }
  }
  for (const fs::path& path : iso.allow_write) add_write(path, "allow_write", "allow_write");

  if (needs.network && !iso.allow_network && !iso.grant_declared)
    ungranted("needs.network=1", "allow_network = true");
  if (needs.processes && !iso.allow_processes && !iso.grant_declared)
    ungranted("needs.processes=1", "allow_processes = true");
  if (!asked.empty())
    throw ConfigError(cfg.where(*item.hook) + hook + " asks for " + join(asked, ", ") +
                          " (its plugin declares " + (asked.size() == 1 ? "it" : "them") +
                          "), which no key of the configuration grants: grant " +
                          (asked.size() == 1 ? "it" : "them") + " with " + join(grants, ", ") +
                          " in [hook." + item.hook->name +
                          "], or with grant = declared; or set confine = off for it",
                      "grant");

  // A hook that writes beyond its own folder manages files: it may also change their metadata
  // (docs/isolation.md: all or nothing, wherever its user may).
  policy.metadata = policy.write.size() > 1;
  policy.network = network_granted(iso, needs);
  policy.processes = processes_granted(iso, needs);
  policy.limits.address_space_mb = iso.memory_limit_mb;
  policy.limits.cpu_seconds = iso.limit_cpu_secs;
  policy.limits.file_size_mb = iso.limit_file_mb;
  policy.limits.open_files = iso.limit_open_files;
  policy.limits.processes = iso.limit_processes;
  return policy;
}

void refuse_token_folder_grant(const JobConfig& cfg, const PlannedHook& item,
                               const confine::CapabilityPolicy& policy) {
  std::error_code ec;
  // Compared as the kernel binds them: symlinks resolved.
  const fs::path folder = fs::weakly_canonical(control::token_folder(), ec);
  auto covers = [&](const std::string& granted) {
    std::error_code e;
    const fs::path rel = folder.lexically_relative(fs::weakly_canonical(granted, e));
    return !e && !rel.empty() && *rel.begin() != "..";
  };
  for (const auto* paths : {&policy.read, &policy.write})
    for (const std::string& path : *paths)
      if (!ec && covers(path))
        throw ConfigError(
            cfg.where(*item.hook, paths == &policy.read ? "allow_read" : "allow_write") +
                describe_hook(item.hook->name, display_text(item.plugin->metadata().id)) + " may " +
                (paths == &policy.read ? "read " : "write ") + display_text(path) +
                ", which holds the job's control token (in " + display_text(folder.string()) +
                "): the hook could steer the job through hookhost ctl; grant a narrower folder",
            paths == &policy.read ? "allow_read" : "allow_write");
}

std::string describe_needs(const PluginNeeds& needs) {
  if (needs.empty()) return "only its run folder";
  auto access = [](const char* verb, const std::vector<std::string>& paths,
                   const std::vector<std::string>& params) {
    std::vector<std::string> items;
    for (const std::string& path : paths) items.push_back(display_text(path));
    for (const std::string& param : params)
      items.push_back("the paths parameter '" + display_text(param) + "' names");
    return items.empty() ? std::string() : verb + join(items, ", ");
  };
  std::vector<std::string> parts;
  for (std::string part : {access("read ", needs.read, needs.read_params),
                           access("write ", needs.write, needs.write_params)})
    if (!part.empty()) parts.push_back(std::move(part));
  if (needs.network) parts.emplace_back("network");
  if (needs.processes) parts.emplace_back("processes");
  return join(parts, "; ");
}

std::string describe_policy(const confine::CapabilityPolicy& policy) {
  auto list = [](const std::vector<std::string>& paths) {
    std::vector<std::string> shown;
    for (const std::string& p : paths) shown.push_back(display_text(p));
    return join(shown, ", ");
  };
  std::string text = "write " + list(policy.write);
  if (!policy.read.empty()) text = "read " + list(policy.read) + "; " + text;
  text += policy.network ? "; network" : "; no network";
  text += policy.processes ? "; processes" : "; no processes";
  if (policy.metadata) text += "; file metadata";
  const confine::ResourceLimits& l = policy.limits;
  std::vector<std::string> limits;
  if (l.address_space_mb) limits.push_back("memory " + std::to_string(l.address_space_mb) + " MiB");
  if (l.cpu_seconds) limits.push_back("cpu " + std::to_string(l.cpu_seconds) + " s");
  if (l.file_size_mb) limits.push_back("file size " + std::to_string(l.file_size_mb) + " MiB");
  if (l.open_files) limits.push_back("open files " + std::to_string(l.open_files));
  if (l.processes) limits.push_back("processes " + std::to_string(l.processes));
  if (!limits.empty()) text += "; limits " + join(limits, ", ");
  return text;
}

}  // namespace hookhost
