#include "storage/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "storage/crc32c.hpp"
#include "support/unique_fd.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'H', 'H', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr uint32_t kFormatVersion = 3;
constexpr uint32_t kOldestReadableFormat = 1;
constexpr uint8_t kSectionWorkload = 1;
constexpr uint8_t kSectionHook = 2;        // format 1: bytes only, writer unknown
constexpr uint8_t kSectionTaggedHook = 3;  // format 2: plugin id, state version, bytes
constexpr uint8_t kSectionBuiltHook = 4;   // format 3: plugin id, state version, build, bytes
// The kind of a hook section in each format.
constexpr uint8_t hook_section_of(uint32_t format) {
  return format == 1 ? kSectionHook : format == 2 ? kSectionTaggedHook : kSectionBuiltHook;
}
constexpr char kIndexName[] = "checkpoint";
// A file being written is "." + its final name + kTemporaryMark + the writer's pid.
constexpr char kTemporaryMark[] = ".tmp-";

// Integers are copied in the host's byte order, which is the format's only on a little-endian
// host (docs/limits.md): a build for another one is refused rather than writing unreadable files.
static_assert(std::endian::native == std::endian::little,
              "hookhost checkpoints are little-endian and written in the host's byte order: "
              "this host is not little-endian");

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // the format is little-endian, like this host
  out.append(bytes, sizeof(T));
}

// Reads a checkpoint file front to back in one pass, checksumming as it goes. Every length the
// file declares is checked against the bytes left before anything is allocated, so a stray or
// corrupt file costs at most its own size in memory, and a file that is no checkpoint costs 8
// bytes of reading.
class StreamReader {
 public:
  explicit StreamReader(const fs::path& file) : file_(file), in_(file, std::ios::binary) {
    if (!in_)
      throw std::runtime_error("cannot open " + file.string() + ": " + std::strerror(errno));
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (ec)
      throw std::runtime_error("cannot read the size of " + file.string() + ": " + ec.message());
    if (size < sizeof kMagic + 4)
      throw std::runtime_error(file.string() + ": too short for a checkpoint");
    left_ = size - 4;  // the checksum trails the body
  }
  template <typename T>
  T get() {
    T value;
    read(reinterpret_cast<char*>(&value), sizeof(T));
    return value;
  }
  std::string bytes(uint64_t n) {
    need(n);
    std::string out(n, '\0');
    read(out.data(), n);
    return out;
  }
  // True when the body was read to its end and the trailing checksum matches.
  void finish() {
    if (left_ != 0)
      throw std::runtime_error(file_.string() + ": trailing bytes after the last section");
    uint32_t stored = 0;
    in_.read(reinterpret_cast<char*>(&stored), 4);
    if (!in_) throw std::runtime_error(file_.string() + ": truncated checkpoint (no checksum)");
    if (crc_.checksum() != stored)
      throw std::runtime_error(file_.string() + ": checksum mismatch (the file is corrupt)");
  }

 private:
  void need(uint64_t n) const {
    if (n > left_)
      throw std::runtime_error(file_.string() + ": truncated or corrupt checkpoint (at byte " +
                               std::to_string(offset_) + " a section needs " + std::to_string(n) +
                               " bytes, " + std::to_string(left_) +
                               " are left before the checksum)");
  }
  void read(char* out, uint64_t n) {
    need(n);
    in_.read(out, static_cast<std::streamsize>(n));
    if (!in_)
      throw std::runtime_error("cannot read " + file_.string() +
                               ": the file shrank while it was read");
    crc_.process_bytes(out, n);
    left_ -= n;
    offset_ += n;
  }
  const fs::path& file_;
  std::ifstream in_;
  uint64_t left_ = 0;
  uint64_t offset_ = 0;  // of the next byte to read
  Crc32c crc_;
};

std::runtime_error io_error(const std::string& what, const fs::path& file) {
  return std::runtime_error(what + " " + file.string() + ": " + std::strerror(errno));
}

void fsync_dir(const fs::path& dir) {
  const UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw io_error("cannot open folder", dir);
  if (::fsync(fd.get()) != 0) throw io_error("cannot fsync folder", dir);
}

// "." + the target's name + kTemporaryMark + pid, appended piece by piece: GCC 12 at -O3 reports a
// false -Wrestrict on the same expression written with operator+.
std::string temporary_name(const fs::path& target) {
  std::string name = ".";
  name += target.filename().native();
  name += kTemporaryMark;
  name += std::to_string(::getpid());
  return name;
}

// Writes `pieces`, one after the other, to `target` so that a reader sees either the old file or
// the whole new one.
void write_atomically(const fs::path& target, const std::vector<std::string_view>& pieces) {
  const fs::path dir = target.parent_path();
  const fs::path tmp = dir / temporary_name(target);
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) throw io_error("cannot create", tmp);
  for (const std::string_view piece : pieces) {
    size_t done = 0;
    while (done < piece.size()) {
      ssize_t n = ::write(fd.get(), piece.data() + done, piece.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        auto e = io_error("cannot write", tmp);
        fd.reset();
        ::unlink(tmp.c_str());
        throw e;
      }
      done += static_cast<size_t>(n);
    }
  }
  if (::fsync(fd.get()) != 0) {
    auto e = io_error("cannot fsync", tmp);
    fd.reset();
    ::unlink(tmp.c_str());
    throw e;
  }
  if (fd.close() != 0) {  // NFS and some FUSE folders report write errors only here
    auto e = io_error("cannot close", tmp);
    ::unlink(tmp.c_str());
    throw e;
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    auto e = io_error("cannot rename into", target);
    ::unlink(tmp.c_str());
    throw e;
  }
  fsync_dir(dir);
}

void write_atomically(const fs::path& target, const std::string& content) {
  write_atomically(target, std::vector<std::string_view>{content});
}

// A checkpoint file as it is written: the framing bytes built here, and the states' bytes read
// from the checkpoint in place, so a large state is not copied once more on its way to the disk.
// The file is frames[0] data[0] frames[1] data[1] ... frames[n].
struct EncodedCheckpoint {
  std::vector<std::string> frames;
  std::vector<const std::string*> data;

  std::vector<std::string_view> pieces() const {
    std::vector<std::string_view> out;
    for (size_t i = 0; i < frames.size(); ++i) {
      out.emplace_back(frames[i]);
      if (i < data.size()) out.emplace_back(*data[i]);
    }
    return out;
  }
};

EncodedCheckpoint encode(const Checkpoint& c) {
  EncodedCheckpoint encoded;
  encoded.frames.emplace_back(kMagic, sizeof kMagic);
  auto out = [&]() -> std::string& { return encoded.frames.back(); };
  put<uint32_t>(out(), kFormatVersion);
  put<int64_t>(out(), c.global_step);
  put<uint32_t>(out(), static_cast<uint32_t>(1 + c.hook_states.size()));
  auto text = [&](const std::string& s) {
    put<uint32_t>(out(), static_cast<uint32_t>(s.size()));
    out() += s;
  };
  auto data = [&](const std::string& s) {
    put<uint64_t>(out(), s.size());
    encoded.data.push_back(&s);
    encoded.frames.emplace_back();
  };
  put<uint8_t>(out(), kSectionWorkload);
  text("");
  data(c.workload_state);
  for (const auto& [name, state] : c.hook_states) {
    put<uint8_t>(out(), kSectionBuiltHook);
    text(name);
    text(state.plugin_id);
    put<uint32_t>(out(), state.state_version);
    text(state.plugin_build);
    data(state.bytes);
  }
  Crc32c crc;
  for (const std::string_view piece : encoded.pieces())
    crc.process_bytes(piece.data(), piece.size());
  put<uint32_t>(out(), crc.checksum());
  return encoded;
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

// The index in TensorFlow's "checkpoint" text format: the current one, then all, oldest first.
std::string index_text(const fs::path& current, const std::vector<fs::path>& newest_first) {
  std::string index = "model_checkpoint_path: \"" + current.filename().string() + "\"\n";
  for (auto it = newest_first.rbegin(); it != newest_first.rend(); ++it)
    index += "all_model_checkpoint_paths: \"" + it->filename().string() + "\"\n";
  return index;
}

}  // namespace

fs::path write_checkpoint(const fs::path& dir, const std::string& basename,
                          const Checkpoint& checkpoint, uint32_t max_to_keep) {
  std::error_code ec;
  const bool created = fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create checkpoint folder " + dir.string() + ": " +
                             ec.message());
  // A new folder's own entry must reach the disk too, or a crash can lose every file in it.
  if (created) fsync_dir(dir.parent_path().empty() ? fs::path(".") : dir.parent_path());
  const fs::path file = dir / (basename + "-" + std::to_string(checkpoint.global_step));
  const EncodedCheckpoint encoded = encode(checkpoint);
  write_atomically(file, encoded.pieces());

  // Retention: the newest max_to_keep by step, plus the file just written (after a rollback it
  // may be older than the kept ones).
  std::vector<fs::path> all = list_checkpoints(dir, basename);  // newest first
  std::vector<fs::path> kept, dropped;
  for (size_t i = 0; i < all.size(); ++i)
    (max_to_keep == 0 || i < max_to_keep || all[i] == file ? kept : dropped).push_back(all[i]);
  // The index, in TensorFlow's "checkpoint" text format, oldest first; written before anything is
  // deleted, so it never names a file that is gone.
  write_atomically(dir / kIndexName, index_text(file, kept));
  for (const auto& f : dropped) fs::remove(f, ec);
  return file;
}

Checkpoint read_checkpoint(const fs::path& file) {
  StreamReader r(file);
  char magic[sizeof kMagic];
  for (char& c : magic) c = r.get<char>();
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw std::runtime_error(file.string() + ": not a hookhost checkpoint (bad magic)");
  const uint32_t version = r.get<uint32_t>();
  if (version < kOldestReadableFormat || version > kFormatVersion)
    throw std::runtime_error(file.string() + ": checkpoint format " + std::to_string(version) +
                             " is not supported (this hookhost reads formats 1 to 3)");
  Checkpoint c;
  c.global_step = r.get<int64_t>();
  const uint32_t sections = r.get<uint32_t>();
  for (uint32_t i = 0; i < sections; ++i) {
    const uint8_t kind = r.get<uint8_t>();
    std::string name = r.bytes(r.get<uint32_t>());
    if (kind == kSectionWorkload) {
      c.workload_state = r.bytes(r.get<uint64_t>());
    } else if (kind == hook_section_of(version)) {
      SavedHookState state;
      if (kind != kSectionHook) {  // format 1 knows neither the plugin nor its build
        state.plugin_id = r.bytes(r.get<uint32_t>());
        state.state_version = r.get<uint32_t>();
        if (kind == kSectionBuiltHook) state.plugin_build = r.bytes(r.get<uint32_t>());
      }
      state.bytes = r.bytes(r.get<uint64_t>());
      c.hook_states.emplace(std::move(name), std::move(state));
    } else {
      throw std::runtime_error(file.string() + ": unknown section kind " + std::to_string(kind));
    }
  }
  r.finish();
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
                                                            const std::string& basename,
                                                            const CheckpointValidator& validate) {
  RestoredCheckpoint restored;
  for (const auto& file : list_checkpoints(dir, basename)) {
    try {
      Checkpoint c = read_checkpoint(file);
      const int64_t named = step_of(file.filename().string(), basename);
      if (named != c.global_step)
        throw std::runtime_error(file.string() + ": its name says global step " +
                                 std::to_string(named) + " but its header says " +
                                 std::to_string(c.global_step));
      if (validate) validate(file, c);
      restored.checkpoint = std::move(c);
      restored.file = file;
      return restored;
    } catch (const std::exception& e) {
      // Every reason names its file, whichever layer refused it (the format, or the workload).
      std::string why = e.what();
      if (why.rfind(file.string(), 0) != 0) why = file.string() + ": " + why;
      restored.skipped.push_back(std::move(why));
    }
  }
  if (!restored.skipped.empty()) {
    // Every candidate was unusable: report them through an empty result with reasons.
    restored.file.clear();
    return restored;
  }
  return std::nullopt;
}

std::vector<std::string> tidy_checkpoint_folder(const fs::path& dir, const std::string& basename) {
  std::vector<std::string> done;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return done;
  // Temporary files of a save that was killed (named as write_atomically names them).
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto tmp = name.rfind(kTemporaryMark);
    if (name.size() < 2 || name[0] != '.' || tmp == std::string::npos) continue;
    const std::string target = name.substr(1, tmp - 1);
    if (target != kIndexName && step_of(target, basename) < 0) continue;
    std::error_code rm;
    if (fs::remove(entry.path(), rm))
      done.push_back("removed " + entry.path().string() + ", left by a save that was interrupted");
  }
  // The index names only files that exist, newest last.
  const fs::path index = dir / kIndexName;
  if (fs::exists(index, ec)) {
    std::ifstream in(index);
    std::string line;
    bool stale = false;
    while (std::getline(in, line)) {
      const auto open = line.find('"'), close = line.rfind('"');
      if (open != std::string::npos && close > open &&
          !fs::exists(dir / line.substr(open + 1, close - open - 1), ec))
        stale = true;
    }
    if (stale) {
      const std::vector<fs::path> all = list_checkpoints(dir, basename);
      if (all.empty())
        fs::remove(index, ec);
      else
        write_atomically(index, index_text(all.front(), all));
      done.push_back((all.empty() ? "removed " : "rewrote ") + index.string() +
                     ": it named checkpoint files that do not exist");
    }
  }
  return done;
}

}  // namespace hookhost
