// The job's control token: random bytes the job writes where only its operator can read them, and
// that every client sends before its request. A process that can connect to the socket but not
// read the file (a confined hook granted the network) is refused. The file is outside the run
// directory, which a hook's policy may well grant (a parameter naming a file next to it grants
// its folder): in the user's private folder, /run/user/UID/hookhost/ (else /tmp/hookhost-UID/),
// 0700, named after the run directory's device and inode, so the job and hookhost ctl find it
// from the run directory alone, whatever their environments.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace hookhost::control {

// The first line a client sends: "token\t<64 hex digits>\n".
inline constexpr const char* kTokenWord = "token";

// The folder the tokens are kept in (which may not exist yet).
std::filesystem::path token_folder();

// Makes the token folder (0700, refusing a symlink or another user's folder), writes a new token
// (0600) for the run directory open at `run_dir_fd` and returns it. Throws std::runtime_error
// saying what failed.
std::string write_token(int run_dir_fd);
// Removes the token file (the job ends).
void remove_token(int run_dir_fd);
// The token of the job in the run directory open at `run_dir_fd`; nothing (and `why`) when it
// cannot be read.
std::optional<std::string> read_token(int run_dir_fd, std::string* why);
// Compares in time independent of where they differ.
bool same_token(const std::string& a, const std::string& b);

}  // namespace hookhost::control
