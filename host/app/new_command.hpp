// hookhost new: writes a ready plugin project from the templates compiled into the program.
#pragma once

#include <string>
#include <vector>

int cmd_new(const std::vector<std::string>& args);
