// hookhost plugins list / describe: the plugins found and their metadata, read from their notes.
#pragma once

#include <string>
#include <vector>

int cmd_plugins(const std::vector<std::string>& args);
