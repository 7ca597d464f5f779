// hookhost new NAME [--lang cpp|c] [--dir DIR]: writes examples/plugin-template-<lang>/ with the
// hook renamed, so a new author starts from a project that builds, passes its test and runs.
#include "new_command.hpp"

#include <boost/program_options.hpp>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "command_line.hpp"
#include "project_templates.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

const char* const kNewHelp = R"(
NAME becomes the plugin id, the .so file's name and the prefix of its C identifiers: lowercase
letters, digits and '_', starting with a letter.

The project holds the hook (a complete example: it fetches a tensor, logs it, saves state and
requests a stop), a unit test written with hookhost's test harness, a config file that runs the
hook on the built-in workload, and a README with the next steps:
  cpp  CMakeLists.txt (find_package(hookhost)), src/NAME.cpp, test/NAME_test.cpp (GoogleTest)
  c    Makefile (pkg-config hookhost-plugin), NAME.c, test/NAME_test.cpp

Examples:
  hookhost new loss_guard                      C++ project in ./loss_guard
  hookhost new lr_schedule --lang c --dir hooks/lr_schedule

Exit status: 0 written, 1 a file could not be written, 2 usage error (bad NAME, DIR not empty).
)";

using hookhost::app::kExitFailed;
using hookhost::app::kExitOk;

int usage_error(const std::string& message) {
  return hookhost::app::usage_error(message, "new ");
}

std::string camel_case(const std::string& name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

std::string upper_case(std::string name) {
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

// The template's hook is called my_hook (MyHook as a C++ class, MY_HOOK in macros).
std::string rename_hook(std::string text, const std::string& name) {
  const std::pair<std::string, std::string> renames[] = {
      {"my_hook", name}, {"MyHook", camel_case(name)}, {"MY_HOOK", upper_case(name)}};
  for (const auto& [from, to] : renames) {
    std::string out;
    std::size_t start = 0;
    for (std::size_t at; (at = text.find(from, start)) != std::string::npos;
         start = at + from.size())
      out.append(text, start, at - start).append(to);
    out.append(text, start);
    text = std::move(out);
  }
  return text;
}

// Where the installed package is, for the next-steps hint: <bin>/.. when it holds the CMake
// package (an installation), else nothing (a build tree).
std::optional<fs::path> installed_prefix() {
  std::error_code ec;
  const fs::path prefix = fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path();
  if (ec || !fs::exists(prefix / "lib" / "cmake" / "hookhost" / "hookhostConfig.cmake", ec))
    return std::nullopt;
  return prefix;
}

bool on_default_search_path(const fs::path& prefix) {
  return prefix == "/usr" || prefix == "/usr/local";
}

}  // namespace

int cmd_new(const std::vector<std::string>& args) {
  po::options_description desc("Usage: hookhost new NAME [--lang cpp|c] [--dir DIR]\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "lang", po::value<std::string>()->default_value("cpp")->value_name("LANG"),
      "cpp (C++20, the SDK, CMake) or c (C99, the C ABI, make)")(
      "dir", po::value<std::string>()->value_name("DIR"),
      "the folder to create (default ./NAME); it must not exist or be empty");
  const auto parsed = hookhost::app::parse_command_line(args, desc, "name", 1, "new ");
  if (!parsed) return hookhost::app::kExitUsage;
  const po::variables_map& vm = *parsed;
  if (vm.count("help")) {
    std::cout << desc << kNewHelp;
    return kExitOk;
  }
  if (!vm.count("name"))
    return usage_error("'new' needs the hook's NAME, e.g. hookhost new loss_guard");
  const std::string name = vm["name"].as<std::vector<std::string>>().front();
  if (!std::regex_match(name, std::regex("[a-z][a-z0-9_]{0,62}")))
    return usage_error("'" + name +
                       "' cannot be a hook name: use lowercase letters, digits and '_', starting "
                       "with a letter (it names the plugin id, the .so file and C identifiers)");
  const std::string lang = vm["lang"].as<std::string>();
  if (lang != "cpp" && lang != "c") return usage_error("--lang " + lang + ": expected cpp or c");
  const fs::path dir = vm.count("dir") ? fs::path(vm["dir"].as<std::string>()) : fs::path(name);

  std::error_code ec;
  if (fs::exists(dir, ec) && !(fs::is_directory(dir, ec) && fs::is_empty(dir, ec)))
    return usage_error(dir.string() +
                       " already exists and is not an empty folder: choose another --dir, or "
                       "remove it first (nothing was written)");

  const std::string prefix = "plugin-template-" + lang + "/";
  std::vector<fs::path> written;
  for (std::size_t i = 0; i < hookhost::embedded::template_file_count; ++i) {
    const auto& file = hookhost::embedded::template_files[i];
    const std::string_view path = file.path;
    if (path.substr(0, prefix.size()) != prefix) continue;
    const fs::path target = dir / rename_hook(std::string(path.substr(prefix.size())), name);
    fs::create_directories(target.parent_path(), ec);
    std::ofstream out(target, std::ios::binary);
    out << rename_hook(std::string(reinterpret_cast<const char*>(file.bytes), file.size), name);
    out.close();
    if (!out) {
      std::fprintf(stderr, "hookhost: cannot write %s: %s\n", target.c_str(),
                   ec ? ec.message().c_str() : "write failed");
      return kExitFailed;
    }
    written.push_back(target);
  }

  std::printf("Created %s: the hook '%s' in %s (%zu files)\n", dir.c_str(), name.c_str(),
              lang == "cpp" ? "C++" : "C", written.size());
  for (const auto& file : written) std::printf("  %s\n", file.c_str());
  const auto prefix_dir = installed_prefix();
  const std::string d = dir.string();
  std::printf("\nNext:\n");
  if (lang == "cpp") {
    const std::string prefix_arg = prefix_dir && !on_default_search_path(*prefix_dir)
                                       ? " -DCMAKE_PREFIX_PATH=" + prefix_dir->string()
                                       : "";
    std::printf("  cmake -S %s -B %s/build%s\n", d.c_str(), d.c_str(), prefix_arg.c_str());
    std::printf("  cmake --build %s/build\n", d.c_str());
    std::printf("  ctest --test-dir %s/build --no-tests=error --output-on-failure\n", d.c_str());
    std::printf("  hookhost run --config %s/%s.ini\n", d.c_str(), name.c_str());
    std::printf("  hookhost check %s/build/%s.so\n", d.c_str(), name.c_str());
  } else {
    if (prefix_dir && !on_default_search_path(*prefix_dir))
      std::printf("  export PKG_CONFIG_PATH=%s/lib/pkgconfig\n", prefix_dir->c_str());
    std::printf("  make -C %s\n", d.c_str());
    std::printf("  make -C %s check\n", d.c_str());
    std::printf("  hookhost run --config %s/%s.ini\n", d.c_str(), name.c_str());
    std::printf("  hookhost check %s/%s.so\n", d.c_str(), name.c_str());
  }
  std::printf("%s/README.md says what each file is for.\n", d.c_str());
  return kExitOk;
}
