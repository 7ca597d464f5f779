// Whether a plugin file may be loaded at all: the rules ssh applies to its key files. A file or
// folder that someone else could write to would let them run code inside the training job.
#pragma once

#include <filesystem>
#include <string>

namespace hookhost {

// Why `file`, found in the plugin folder `folder`, must not be loaded, or "" when it may: the
// folder or the file (after following links) is writable by group or others, or owned by a user
// other than root or the one running hookhost; or a link leads out of the folder. The text says
// how to fix it.
std::string trust_problem(const std::filesystem::path& folder, const std::filesystem::path& file);

// The SHA-256 of a file's bytes as 64 lowercase hex digits (OpenSSL's libcrypto). Throws
// std::runtime_error naming the file when it cannot be read.
std::string sha256_of_file(const std::filesystem::path& file);

}  // namespace hookhost
