// Listing plugins against the floor of loading them, and what the host costs in memory.
// At start-up 1000 distinct plugins are generated into a temporary folder (copies of the built
// bench_noop plugin, each with its own same-length id in both its note and its entry, so each is a
// real plugin that loads). Measured: discover_plugins of that folder (metadata only) against raw
// dlopen(RTLD_NOW | RTLD_LOCAL) of the same 1000 files in a fresh child per iteration (a library
// stays mapped once loaded, and a second dlopen of a loaded file costs nothing), both in CPU time;
// the bytes discovery reads per plugin; the peak resident memory of the hookhost program running a
// job with no hooks; and the resident memory each loaded plugin adds.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace hookhost;

constexpr int kPlugins = 1000;
// Loaded for the per-plugin memory figure (after one more, which pays the loader's one-time costs).
constexpr int kLoadedForMemory = 100;

// ---- the generated plugins -------------------------------------------------------------------

constexpr std::string_view kSourceId = "bench_noop";

// "gen_000042": as long as kSourceId, so every offset in the file stays where it was.
std::string generated_id(int index) {
  char id[16];
  std::snprintf(id, sizeof id, "gen_%06d", index);
  return id;
}

void write_bytes(const fs::path& file, const std::string& bytes) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + file.string());
  // Whatever the umask: the trust rules refuse files writable by others, and so would a loader.
  const bool ok = ::fchmod(fd, 0644) == 0 &&
                  ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write " + file.string());
}

// kPlugins copies of bench_noop.so in a folder of their own (mode 0755), removed at exit. The id
// is replaced wherever the file holds it, which is the note's "id=" line and the entry's id
// string: the note is plain text with no checksum, so each copy is a distinct, loadable plugin.
struct GeneratedPlugins {
  fs::path folder;
  std::vector<fs::path> files;
  std::uintmax_t file_size = 0;

  GeneratedPlugins() {
    std::string pattern = (fs::temp_directory_path() / "discovery_bench.XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary folder");
    folder = pattern;
    if (::chmod(folder.c_str(), 0755) != 0) throw std::runtime_error("cannot chmod " + pattern);

    const fs::path source = fs::path(HOOKHOST_BENCH_PLUGIN_DIR) / "bench_noop.so";
    std::ifstream in(source, std::ios::binary);
    const std::string original((std::istreambuf_iterator<char>(in)), {});
    std::vector<std::size_t> at;
    for (auto pos = original.find(kSourceId); pos != std::string::npos;
         pos = original.find(kSourceId, pos + 1))
      at.push_back(pos);
    if (original.find("id=" + std::string(kSourceId) + "\n") == std::string::npos || at.size() < 2)
      throw std::runtime_error(source.string() + " does not hold its id in a note and an entry");
    file_size = original.size();

    try {
      for (int i = 0; i < kPlugins; ++i) {
        std::string bytes = original;
        const std::string id = generated_id(i);
        for (std::size_t pos : at) bytes.replace(pos, id.size(), id);
        files.push_back(folder / (id + ".so"));
        write_bytes(files.back(), bytes);
      }
    } catch (...) {
      std::error_code ec;
      fs::remove_all(folder, ec);
      throw;
    }
  }
  ~GeneratedPlugins() {
    std::error_code ec;
    fs::remove_all(folder, ec);
  }
};

const GeneratedPlugins& generated() {
  static const GeneratedPlugins plugins;
  return plugins;
}

// ---- what a process reads and holds ----------------------------------------------------------

// A "Key: value" number from a /proc file (status, io), or -1.
long proc_field(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  }
  return -1;
}

// What this thread has read through read(2)/pread(2) so far, page cache hits included.
long bytes_read_by_this_thread() {
  return proc_field("/proc/thread-self/io", "rchar");
}

// ---- timings -----------------------------------------------------------------------------------
// Both sides are CPU time (as TimesReporter reports a one-thread benchmark): steadier than wall
// time on a busy machine, and with every file in the page cache neither side waits for a disk.

// This process's CPU time (user and system), in nanoseconds.
std::int64_t cpu_time_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// Listing: every file of the folder checked and its note parsed; no imports, nothing loaded.
void BM_DiscoverPlugins(benchmark::State& state) {
  const GeneratedPlugins& plugins = generated();
  for (auto _ : state) {
    DiscoveryResult found = discover_plugins({plugins.folder});
    if (found.plugins.size() != plugins.files.size() || !found.rejected.empty()) {
      state.SkipWithError("discovery did not find every generated plugin");
      break;
    }
    benchmark::DoNotOptimize(found);
  }
  state.counters["plugins"] = static_cast<double>(plugins.files.size());
}
BENCHMARK(BM_DiscoverPlugins)->Unit(benchmark::kMillisecond);

// The floor: dlopen of the same files (given their paths: no folder listing), timed inside a child
// forked for each iteration, so every file is really mapped and relocated each time; the child's
// CPU time is the iteration's time.
void BM_DlopenPlugins(benchmark::State& state) {
  const GeneratedPlugins& plugins = generated();
  for (auto _ : state) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) {
      state.SkipWithError("pipe failed");
      break;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipe_fds[0]);
      std::set<void*> handles;
      const std::int64_t start = cpu_time_ns();
      for (const fs::path& file : plugins.files)
        handles.insert(::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL));
      std::int64_t ns = cpu_time_ns() - start;
      // A failed dlopen, or two paths resolved to one library, would make the floor too low.
      if (handles.size() != plugins.files.size() || handles.count(nullptr)) ns = -1;
      const bool sent = ::write(pipe_fds[1], &ns, sizeof ns) == sizeof ns;
      ::_exit(sent ? 0 : 1);
    }
    ::close(pipe_fds[1]);
    std::int64_t ns = -1;
    const bool got = pid > 0 && ::read(pipe_fds[0], &ns, sizeof ns) == sizeof ns;
    ::close(pipe_fds[0]);
    int status = 0;
    if (pid > 0) ::waitpid(pid, &status, 0);
    if (!got || ns < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("dlopen of the generated plugins failed in the child");
      break;
    }
    state.SetIterationTime(static_cast<double>(ns) / 1e9);
  }
  state.counters["plugins"] = static_cast<double>(plugins.files.size());
}
BENCHMARK(BM_DlopenPlugins)->Unit(benchmark::kMillisecond)->UseManualTime();

// ---- memory ------------------------------------------------------------------------------------

// The hookhost program: next to this benchmark in the build's bin/ folder.
fs::path hookhost_program() {
  return fs::read_symlink("/proc/self/exe").parent_path() / "hookhost";
}

// The peak resident memory (VmHWM, KiB) of a program run to its end, read from /proc/PID/status
// when it stops on its way out (ptrace's exit event, before its memory is released). Not the
// child's rusage: ru_maxrss also counts the memory of the process it was forked from.
long peak_rss_kib(const std::vector<std::string>& args, const fs::path& cwd, std::string* error) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null < 0 || ::dup2(null, 1) < 0 || ::dup2(null, 2) < 0 || ::chdir(cwd.c_str()) != 0 ||
        ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0)
      ::_exit(126);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0) {
    *error = "fork failed";
    return -1;
  }
  int status = 0;
  long peak = -1;
  bool started = false;
  for (;;) {
    if (::waitpid(pid, &status, 0) != pid) {
      *error = std::string("waitpid failed: ") + std::strerror(errno);
      return -1;
    }
    if (!WIFSTOPPED(status)) break;
    int forward = WSTOPSIG(status);  // a signal it got while traced is passed on
    if (!started && forward == SIGTRAP) {  // stopped at exec: ask for a stop on its way out
      started = true;
      forward = 0;
      ::ptrace(PTRACE_SETOPTIONS, pid, nullptr, PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL);
    } else if ((status >> 8) == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
      peak = proc_field("/proc/" + std::to_string(pid) + "/status", "VmHWM");
      forward = 0;
    }
    ::ptrace(PTRACE_CONT, pid, nullptr, forward);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = !WIFEXITED(status)              ? "the job was killed"
             : WEXITSTATUS(status) == 126 ? "cannot trace the child (ptrace refused?)"
             : WEXITSTATUS(status) == 127 ? "cannot run the program"
                                          : "the job failed with exit status " +
                                                std::to_string(WEXITSTATUS(status));
    return -1;
  }
  if (peak < 0) *error = "no exit stop was seen, so VmHWM could not be read";
  return peak;
}

// VmRSS (KiB) of a child process before and after it loads kLoadedForMemory plugins with
// load_plugin, in a child so that this process loads nothing for good.
struct LoadedMemory {
  long before_kib = -1, after_kib = -1;
};
LoadedMemory rss_around_loading() {
  const GeneratedPlugins& plugins = generated();
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    spdlog::set_level(spdlog::level::warn);  // one "loading plugin" line per plugin otherwise
    LoadedMemory m;
    try {
      const DiscoveryResult found = discover_plugins({plugins.folder});
      if (found.plugins.size() < kLoadedForMemory + 1) throw std::runtime_error("too few plugins");
      load_plugin(found.plugins[0]);  // the first load also sets up the loader itself
      m.before_kib = proc_field("/proc/self/status", "VmRSS");
      for (int i = 1; i <= kLoadedForMemory; ++i) load_plugin(found.plugins[i]);
      m.after_kib = proc_field("/proc/self/status", "VmRSS");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "discovery_bench: loading the generated plugins failed: %s\n",
                   e.what());
    }
    const bool sent = ::write(pipe_fds[1], &m, sizeof m) == sizeof m;
    ::_exit(sent ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  LoadedMemory m;
  if (pid < 0 || ::read(pipe_fds[0], &m, sizeof m) != sizeof m) m = {};
  ::close(pipe_fds[0]);
  if (pid > 0) ::waitpid(pid, nullptr, 0);
  return m;
}

}  // namespace

int main(int argc, char** argv) try {
  hookhost::bench::TimesReporter reporter;
  if (!hookhost::bench::run_benchmarks(argc, argv, reporter)) return 1;
  const GeneratedPlugins& plugins = generated();
  bool measured_all = true;

  std::printf("\n");
  const double discover = reporter.ns("BM_DiscoverPlugins");
  const double dlopen = reporter.ns("BM_DlopenPlugins/manual_time");
  if (discover > 0 && dlopen > 0) {
    std::printf("  %d plugins, CPU time: discovery %.2f ms (metadata only), dlopen %.2f ms "
                "(%.1f us each)\n",
                kPlugins, discover / 1e6, dlopen / 1e6, dlopen / 1e3 / kPlugins);
    hookhost::bench::report_goal("discovery_1000_x_dlopen", discover / dlopen, 1.0);
  }

  // One listing, counted by the kernel: what discovery reads, whichever call reads it.
  const long read_before = bytes_read_by_this_thread();
  const DiscoveryResult listed = discover_plugins({plugins.folder});
  const long read_after = bytes_read_by_this_thread();
  if (read_before >= 0 && read_after >= 0 && listed.plugins.size() == plugins.files.size()) {
    const double per_plugin = static_cast<double>(read_after - read_before) / kPlugins;
    std::printf("  discovery read %.0f bytes per plugin; each plugin file has %ju bytes\n",
                per_plugin, plugins.file_size);
    // One page: the ELF header, the program headers and the notes of a plugin take about 1 KiB
    // (more with a long parameter list), while reading any whole plugin file takes several pages.
    hookhost::bench::report_goal("discovery_bytes_read_per_plugin", per_plugin, 4096);
  } else {
    std::fprintf(stderr, "discovery_bench: cannot count the bytes read (/proc/thread-self/io)\n");
    measured_all = false;
  }

  // The host alone: the real program running a job with no hooks (linreg, 400 steps).
  const fs::path job = plugins.folder / "job";
  fs::create_directory(job);
  std::ofstream(job / "job.ini") << "[run]\nrun_dir = run\n\n[workload]\nname = linreg\n";
  std::string error;
  const long host_kib = peak_rss_kib(
      {hookhost_program().string(), "run", "--config", "job.ini", "--fresh"}, job, &error);
  if (host_kib > 0) {
    std::printf("  hookhost run with no hooks: peak resident memory (VmHWM) %.1f MiB\n",
                host_kib / 1024.0);
    // About 2.5 times today's figure, most of which is the shared libraries' mapped pages: room
    // for another C library or allocator, not for a buffer or a cache of tens of MiB.
    hookhost::bench::report_goal("memory_host_rss_mib", host_kib / 1024.0, 24);
  } else {
    std::fprintf(stderr, "discovery_bench: %s: %s\n", hookhost_program().c_str(), error.c_str());
    measured_all = false;
  }

  const LoadedMemory loaded = rss_around_loading();
  if (loaded.before_kib > 0 && loaded.after_kib > 0) {
    const double per_plugin = static_cast<double>(loaded.after_kib - loaded.before_kib) /
                              kLoadedForMemory;
    std::printf("  loading %d more plugins (%ju-byte files): VmRSS %ld -> %ld KiB, %.1f KiB each\n"
                "  (each also keeps its private copy in a memfd: the parts not mapped are not in "
                "VmRSS)\n",
                kLoadedForMemory, plugins.file_size, loaded.before_kib, loaded.after_kib,
                per_plugin);
    // About 3 times today's figure (the plugin's touched pages, the loader's records): anything
    // the host keeps per plugin beyond some 40 KiB more (a buffer, a cache) goes over it.
    hookhost::bench::report_goal("memory_per_plugin_kib", per_plugin, 64);
  } else {
    measured_all = false;
  }
  return measured_all ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "discovery_bench: %s\n", e.what());
  return 1;
}
