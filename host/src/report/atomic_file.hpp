// A file replaced whole or not at all: written to NAME.tmp in the same folder, synced, renamed
// over NAME, and the folder synced, so a reader (or a crash) never sees half of it.
#pragma once

#include <filesystem>
#include <string_view>

namespace hookhost {

// Throws std::runtime_error naming the file; NAME.tmp is removed on failure.
void write_file_atomically(const std::filesystem::path& file, std::string_view content);

}  // namespace hookhost
