#include "build_paths.hpp"

namespace hookhost::testing::build_paths {

const char* source_dir() {
  return HOOKHOST_BUILD_SOURCE_DIR;
}
const char* binary_dir() {
  return HOOKHOST_BUILD_BINARY_DIR;
}
const char* fixture_dir() {
  return HOOKHOST_BUILD_FIXTURE_DIR;
}
const char* builtin_dir() {
  return HOOKHOST_BUILD_BUILTIN_DIR;
}
const char* mpiexec() {
  return HOOKHOST_BUILD_MPIEXEC;
}

}  // namespace hookhost::testing::build_paths
