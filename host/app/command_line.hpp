// What every hookhost command shares: its exit statuses and how it reports a usage mistake.
#pragma once

#include <boost/program_options.hpp>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hookhost::app {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // the job failed; for check, a violation was found
constexpr int kExitUsage = 2;   // usage or configuration error: nothing ran

// Prints "hookhost: MESSAGE" and where the command's help is; returns kExitUsage. `command` is
// the command with a trailing space ("run ", "plugins ") or "" for the main help.
inline int usage_error(const std::string& message, const std::string& command) {
  std::fprintf(stderr, "hookhost: %s\nRun 'hookhost %s--help' for usage.\n", message.c_str(),
               command.c_str());
  return kExitUsage;
}

// Parses `args` against `options` plus one hidden positional option `positional` taking up to
// `max_positional` words (-1: any number), read as a std::vector<std::string>. On a mistake, prints
// it as usage_error does for `command` and returns nothing.
inline std::optional<boost::program_options::variables_map> parse_command_line(
    const std::vector<std::string>& args,
    const boost::program_options::options_description& options, const char* positional,
    int max_positional, const std::string& command) {
  namespace po = boost::program_options;
  po::options_description hidden;
  hidden.add_options()(positional, po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positions;
  positions.add(positional, max_positional);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positions).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    usage_error(e.what(), command);
    return std::nullopt;
  }
  return vm;
}

// The words of a repeatable path option (--plugin-dir) as paths.
inline std::vector<std::filesystem::path> to_paths(const std::vector<std::string>& words) {
  return {words.begin(), words.end()};
}

}  // namespace hookhost::app
