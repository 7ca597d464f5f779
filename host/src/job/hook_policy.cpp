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

confine::CapabilityPolicy hook_policy(const JobConfig& cfg, const PlannedHook& item,
                                      const fs::path& own_run_dir) {
  const PluginNeeds& needs = item.plugin->metadata().needs;
  const EffectiveIsolation& iso = item.isolation;
  const std::string hook = describe_hook(item.hook->name, display_text(item.plugin->metadata().id));
  confine::CapabilityPolicy policy;

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
  for (const std::string& path : needs.read)
    add_read(absolute_from(config_dir, path), "the plugin's needs.read=" + display_text(path), "");
  for (const std::string& name : needs.read_params)
    for (const std::string& path : param_paths(item.params, name))
      add_read(absolute_from(config_dir, path), "its parameter " + name, name, true);
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
    fs::create_directories(folder, ec);
    if (ec)
      throw ConfigError(cfg.where(*item.hook, key) + hook + " may write " +
                            display_text(path.string()) + " (" + declared_by +
                            "), but its folder cannot be made: " + ec.message(),
                        key);
    add_unique(policy.write, without_links(folder, own_run_dir));
  };
  add_unique(policy.write, own_run_dir);
  for (const std::string& path : needs.write)
    add_write(absolute_from(own_run_dir, path), "the plugin's needs.write=" + display_text(path),
              "");
  for (const std::string& name : needs.write_params)
    for (const std::string& path : param_paths(item.params, name))
      add_write(absolute_from(own_run_dir, path), "its parameter " + name, name);
  for (const fs::path& path : iso.allow_write) add_write(path, "allow_write", "allow_write");

  // A hook that writes beyond its own folder manages files: it may also change their metadata
  // (docs/isolation.md: all or nothing, wherever its user may).
  policy.metadata = policy.write.size() > 1;
  policy.network = iso.allow_network.value_or(needs.network);
  policy.processes = iso.allow_processes.value_or(needs.processes);
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
