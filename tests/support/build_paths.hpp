// Where the checkout and the build are. Only build_paths.cpp is compiled with the build's absolute
// paths: every other test file then compiles to the same object in any clone, so a second clone on
// the same machine takes them from ccache instead of compiling them again.
#pragma once

namespace hookhost::testing::build_paths {

const char* source_dir();   // the checkout
const char* binary_dir();   // the build folder
const char* fixture_dir();  // the fixture plugins (test_plugins/)
const char* builtin_dir();  // the built-in plugins (lib/hookhost/plugins/)
const char* mpiexec();      // the MPI launcher CMake found ("" without MPI)

}  // namespace hookhost::testing::build_paths

#define HOOKHOST_SOURCE_DIR (::hookhost::testing::build_paths::source_dir())
#define HOOKHOST_BINARY_DIR (::hookhost::testing::build_paths::binary_dir())
#define HOOKHOST_FIXTURE_DIR (::hookhost::testing::build_paths::fixture_dir())
#define HOOKHOST_BUILTIN_DIR (::hookhost::testing::build_paths::builtin_dir())
#define HOOKHOST_MPIEXEC (::hookhost::testing::build_paths::mpiexec())
