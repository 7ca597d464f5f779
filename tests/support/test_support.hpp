// Shared helpers for hookhost tests: temporary folders and copies of real plugin files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "build_paths.hpp"

namespace hookhost::testing {

namespace fs = std::filesystem;

// A fresh folder under the system temp dir, removed with its contents at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "hookhost-test-XXXXXX").string();
    char* made = ::mkdtemp(pattern.data());
    if (!made) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// Path of a fixture plugin built by the test build (tests/fixtures/NAME).
inline fs::path fixture_plugin(const std::string& name) {
  return fs::path(HOOKHOST_FIXTURE_DIR) / (name + ".so");
}

// Path of a built-in plugin (plugins/NAME).
inline fs::path builtin_plugin(const std::string& name) {
  return fs::path(HOOKHOST_BUILTIN_DIR) / (name + ".so");
}

// Copies a plugin file into `dir` (optionally under another file name); returns the copy's path.
inline fs::path copy_plugin(const fs::path& source, const fs::path& dir,
                            const std::string& as = {}) {
  fs::path target = dir / (as.empty() ? source.filename().string() : as);
  fs::copy_file(source, target, fs::copy_options::overwrite_existing);
  return target;
}

inline std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline void write_file(const fs::path& file, const std::string& content) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << content;
}

// The lines of `text`, without their '\n'.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines of the file at `file` (a std::string argument is text, as above).
inline std::vector<std::string> lines_of(const fs::path& file) {
  return lines_of(read_file(file));
}

// The lines of `lines` that start with `prefix`.
inline std::vector<std::string> starting_with(const std::vector<std::string>& lines,
                                              const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& line : lines)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

// How often `what` occurs in `text`, overlaps included.
inline long count_occurrences(const std::string& text, const std::string& what) {
  long n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// How many descriptors this process has open now: equal counts before and after a call show it
// closed everything it opened.
inline size_t open_descriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

}  // namespace hookhost::testing
