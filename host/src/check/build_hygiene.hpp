// What a plugin file's build says about it, read with libelf without loading it: what it exports,
// how it binds its symbols, whether it wants an executable stack, which process-wide calls it
// imports, and whether 'hookhost run' would trust the file where it lies.
#pragma once

#include <vector>

#include "check/finding.hpp"
#include "hookhost/host/discovery.hpp"

namespace hookhost::check {

// Warnings only: each of these loads and runs, and each is a risk worth fixing in the build.
std::vector<Finding> check_build_hygiene(const DiscoveredPlugin& plugin);

}  // namespace hookhost::check
