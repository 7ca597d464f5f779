// Where plugins are looked for: the folders named on the command line and in the configuration,
// HOOKHOST_PLUGIN_PATH, then the built-in plugins beside the program.
#include <cstdlib>
#include <set>

#include <boost/dll/runtime_symbol_info.hpp>

#include "hookhost/host/job.hpp"
#include "support/find_on_path.hpp"
#include "support/text.hpp"

namespace hookhost {
namespace fs = std::filesystem;

fs::path builtin_plugin_dir() {
  // <bin>/../lib/hookhost/plugins: the same layout in a build tree and in an installation, so no
  // path is compiled in. An embedding program finds the installed hookhost program on PATH.
  const auto plugins_beside = [](const fs::path& program) {
    return program.parent_path() / ".." / "lib" / "hookhost" / "plugins";
  };
  std::error_code ec;
  const fs::path self = boost::dll::program_location(ec);
  const fs::path first = ec ? fs::path("lib/hookhost/plugins") : plugins_beside(self);
  if (fs::is_directory(first, ec)) return fs::weakly_canonical(first, ec);
  if (const auto installed = find_on_path("hookhost")) {
    const fs::path candidate = plugins_beside(fs::weakly_canonical(*installed, ec));
    if (fs::is_directory(candidate, ec)) return candidate.lexically_normal();
  }
  return first;
}

std::vector<fs::path> plugin_search_path(const std::vector<fs::path>& first,
                                         const std::vector<fs::path>& config,
                                         const fs::path& builtin) {
  std::vector<fs::path> dirs = first;
  dirs.insert(dirs.end(), config.begin(), config.end());
  if (const char* env = std::getenv("HOOKHOST_PLUGIN_PATH")) {
    const std::vector<fs::path> listed = split_folder_list(env);
    dirs.insert(dirs.end(), listed.begin(), listed.end());
  }
  dirs.push_back(builtin.empty() ? builtin_plugin_dir() : builtin);
  std::vector<fs::path> unique;
  std::set<fs::path> seen;
  for (const auto& d : dirs) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(d, ec);
    if (seen.insert(ec ? d : key).second) unique.push_back(d);
  }
  return unique;
}

}  // namespace hookhost
