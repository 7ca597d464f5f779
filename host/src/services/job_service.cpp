// hh.job/1: the configuration file's folder, so a plugin takes its relative paths from where the
// job's configuration is, not from wherever the program was started.
#include <filesystem>
#include <system_error>

#include "context/host_services.hpp"
#include "context/service_context.hpp"
#include "services.hpp"

namespace hookhost {

namespace fs = std::filesystem;

template <>
JobService& service_detail::service_for<JobService>(HostServices& caller) {
  return caller.context->services().job;
}

std::string JobService::working_directory() {
  std::error_code ec;
  const fs::path dir = fs::current_path(ec);
  return ec ? std::string("/") : dir.string();
}

const char* JobService::config_dir(HostServices& caller) {
  // Made once: the text must stay put for as long as any plugin may hold it.
  std::call_once(once_, [&] {
    fs::path dir = caller.context->config_dir();
    if (dir.empty()) {
      config_dir_ = start_dir_;
      return;
    }
    if (dir.is_relative()) dir = fs::path(start_dir_) / dir;
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(dir, ec);  // "a/link/.." means what the OS means
    dir = ec ? dir.lexically_normal() : real;
    if (!dir.has_filename() && dir != dir.root_path()) dir = dir.parent_path();
    config_dir_ = dir.string();
  });
  return config_dir_.c_str();
}

namespace {
const hh_job_service kJob = in_process_table<JobFunctions, &JobService::config_dir>();
}  // namespace

const void* JobService::table() const {
  return &kJob;
}

}  // namespace hookhost
