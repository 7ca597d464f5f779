// hookhost run: runs (or, with --check, validates) a training job with hooks from a config file.
#pragma once

#include <string>
#include <vector>

int cmd_run(const std::vector<std::string>& args);
