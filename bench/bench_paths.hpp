// Where the checkout and the build are. Only bench_paths.cpp is compiled with the build's absolute
// paths, so every benchmark source compiles to the same object in any clone (ccache shares them).
#pragma once

namespace hookhost::bench_paths {

const char* source_dir();  // the checkout
const char* plugin_dir();  // the benchmarks' own plugins (bench_plugins/)
const char* mpiexec();     // the MPI launcher CMake found ("" without MPI)

}  // namespace hookhost::bench_paths

#define HOOKHOST_SOURCE_DIR (::hookhost::bench_paths::source_dir())
#define HOOKHOST_BENCH_PLUGIN_DIR (::hookhost::bench_paths::plugin_dir())
#define HOOKHOST_MPIEXEC (::hookhost::bench_paths::mpiexec())
