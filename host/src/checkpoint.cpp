#include "hookhost/host/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "hookhost/host/event_writer.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'H', 'H', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr uint32_t kFormatVersion = 2;
constexpr uint32_t kOldestReadableFormat = 1;
constexpr uint8_t kSectionWorkload = 1;
constexpr uint8_t kSectionHook = 2;        // format 1: bytes only, writer unknown
constexpr uint8_t kSectionTaggedHook = 3;  // format 2: plugin id, state version, bytes
constexpr char kIndexName[] = "checkpoint";

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // the format is little-endian, like this host
  out.append(bytes, sizeof(T));
}

class Reader {
 public:
  Reader(std::string_view data, const fs::path& file) : data_(data), file_(file) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string bytes(uint64_t n) {
    need(n);
    std::string out(data_.substr(pos_, n));
    pos_ += n;
    return out;
  }
  size_t pos() const { return pos_; }

 private:
  void need(uint64_t n) {
    if (n > data_.size() - pos_)
      throw std::runtime_error(file_.string() + ": truncated checkpoint (needs " +
                               std::to_string(n) + " more bytes at offset " + std::to_string(pos_) +
                               ")");
  }
  std::string_view data_;
  const fs::path& file_;
  size_t pos_ = 0;
};

std::runtime_error io_error(const std::string& what, const fs::path& file) {
  return std::runtime_error(what + " " + file.string() + ": " + std::strerror(errno));
}

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw io_error("cannot open folder", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw io_error("cannot fsync folder", dir);
}

// Writes `content` to `target` so that a reader sees either the old file or the whole new one.
void write_atomically(const fs::path& target, const std::string& content) {
  const fs::path dir = target.parent_path();
  const fs::path tmp =
      dir / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error("cannot create", tmp);
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      auto e = io_error("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw e;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    auto e = io_error("cannot fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    throw e;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    auto e = io_error("cannot rename into", target);
    ::unlink(tmp.c_str());
    throw e;
  }
  fsync_dir(dir);
}

std::string encode(const Checkpoint& c) {
  std::string out(kMagic, sizeof kMagic);
  put<uint32_t>(out, kFormatVersion);
  put<int64_t>(out, c.global_step);
  put<uint32_t>(out, static_cast<uint32_t>(1 + c.hook_states.size()));
  auto text = [&](const std::string& s) {
    put<uint32_t>(out, static_cast<uint32_t>(s.size()));
    out += s;
  };
  auto data = [&](const std::string& s) {
    put<uint64_t>(out, s.size());
    out += s;
  };
  put<uint8_t>(out, kSectionWorkload);
  text("");
  data(c.workload_state);
  for (const auto& [name, state] : c.hook_states) {
    put<uint8_t>(out, kSectionTaggedHook);
    text(name);
    text(state.plugin_id);
    put<uint32_t>(out, state.state_version);
    data(state.bytes);
  }
  put<uint32_t>(out, crc32c(out));
  return out;
}

// The step of a file named "<basename>-<step>", or -1 for any other name.
int64_t step_of(const std::string& name, const std::string& basename) {
  if (name.size() <= basename.size() + 1 || name.compare(0, basename.size(), basename) != 0 ||
      name[basename.size()] != '-')
    return -1;
  const std::string digits = name.substr(basename.size() + 1);
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
    return -1;
  return std::stoll(digits);
}

std::string read_whole(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw io_error("cannot open", file);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

fs::path write_checkpoint(const fs::path& dir, const std::string& basename,
                          const Checkpoint& checkpoint, uint32_t max_to_keep) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create checkpoint folder " + dir.string() + ": " +
                             ec.message());
  const fs::path file = dir / (basename + "-" + std::to_string(checkpoint.global_step));
  write_atomically(file, encode(checkpoint));

  // Retention: the newest max_to_keep by step, plus the file just written (after a rollback it
  // may be older than the kept ones).
  std::vector<fs::path> all = list_checkpoints(dir, basename);  // newest first
  std::vector<fs::path> kept, dropped;
  for (size_t i = 0; i < all.size(); ++i)
    (max_to_keep == 0 || i < max_to_keep || all[i] == file ? kept : dropped).push_back(all[i]);
  // The index, in TensorFlow's "checkpoint" text format, oldest first; written before anything is
  // deleted, so it never names a file that is gone.
  std::string index = "model_checkpoint_path: \"" + file.filename().string() + "\"\n";
  for (auto it = kept.rbegin(); it != kept.rend(); ++it)
    index += "all_model_checkpoint_paths: \"" + it->filename().string() + "\"\n";
  write_atomically(dir / kIndexName, index);
  for (const auto& f : dropped) fs::remove(f, ec);
  return file;
}

Checkpoint read_checkpoint(const fs::path& file) {
  const std::string data = read_whole(file);
  if (data.size() < sizeof kMagic + 4 || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    throw std::runtime_error(file.string() + ": not a hookhost checkpoint (bad magic)");
  const std::string_view body(data.data(), data.size() - 4);
  uint32_t stored;
  std::memcpy(&stored, data.data() + data.size() - 4, 4);
  if (crc32c(body) != stored)
    throw std::runtime_error(file.string() + ": checksum mismatch (the file is corrupt)");
  Reader r(body, file);
  r.bytes(sizeof kMagic);
  const uint32_t version = r.get<uint32_t>();
  if (version < kOldestReadableFormat || version > kFormatVersion)
    throw std::runtime_error(file.string() + ": checkpoint format " + std::to_string(version) +
                             " is not supported (this hookhost reads formats 1 and 2)");
  Checkpoint c;
  c.global_step = r.get<int64_t>();
  const uint32_t sections = r.get<uint32_t>();
  for (uint32_t i = 0; i < sections; ++i) {
    const uint8_t kind = r.get<uint8_t>();
    std::string name = r.bytes(r.get<uint32_t>());
    if (kind == kSectionWorkload) {
      c.workload_state = r.bytes(r.get<uint64_t>());
    } else if (kind == kSectionHook && version == 1) {
      c.hook_states.emplace(std::move(name), SavedHookState{"", 1, r.bytes(r.get<uint64_t>())});
    } else if (kind == kSectionTaggedHook && version >= 2) {
      SavedHookState state;
      state.plugin_id = r.bytes(r.get<uint32_t>());
      state.state_version = r.get<uint32_t>();
      state.bytes = r.bytes(r.get<uint64_t>());
      c.hook_states.emplace(std::move(name), std::move(state));
    } else {
      throw std::runtime_error(file.string() + ": unknown section kind " + std::to_string(kind));
    }
  }
  if (r.pos() != body.size())
    throw std::runtime_error(file.string() + ": trailing bytes after the last section");
  return c;
}

std::vector<fs::path> list_checkpoints(const fs::path& dir, const std::string& basename) {
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    int64_t step = step_of(entry.path().filename().string(), basename);
    if (step >= 0) found.emplace_back(step, entry.path());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  });
  std::vector<fs::path> out;
  for (auto& [_, path] : found) out.push_back(std::move(path));
  return out;
}

std::optional<RestoredCheckpoint> restore_latest_checkpoint(const fs::path& dir,
                                                            const std::string& basename) {
  RestoredCheckpoint restored;
  for (const auto& file : list_checkpoints(dir, basename)) {
    try {
      restored.checkpoint = read_checkpoint(file);
      restored.file = file;
      return restored;
    } catch (const std::exception& e) {
      restored.skipped.push_back(e.what());
    }
  }
  if (!restored.skipped.empty()) {
    // Every candidate was corrupt: report them through an empty result with reasons.
    restored.file.clear();
    return restored;
  }
  return std::nullopt;
}

}  // namespace hookhost
