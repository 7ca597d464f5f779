#include "bench_paths.hpp"

namespace hookhost::bench_paths {

const char* source_dir() {
  return HOOKHOST_BUILD_SOURCE_DIR;
}
const char* plugin_dir() {
  return HOOKHOST_BUILD_BENCH_PLUGIN_DIR;
}
const char* mpiexec() {
  return HOOKHOST_BUILD_MPIEXEC;
}

}  // namespace hookhost::bench_paths
