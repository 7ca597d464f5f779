#include "control/token.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "support/unique_fd.hpp"

namespace hookhost::control {
namespace {

constexpr std::size_t kTokenBytes = 32;

std::runtime_error token_error(const std::string& what) {
  return std::runtime_error(std::string("control token: ") + what + ": " + std::strerror(errno));
}

// The token's file name: the run directory's device and inode.
std::string token_name(int run_dir_fd) {
  struct stat st {};
  if (::fstat(run_dir_fd, &st) != 0) throw token_error("cannot stat the run directory");
  return "control-" + std::to_string(st.st_dev) + "-" + std::to_string(st.st_ino);
}

// The token folder, made when missing; never a symlink, never another user's, never open to
// others.
UniqueFd open_token_folder(bool create) {
  const std::filesystem::path folder = token_folder();
  if (create && ::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST)
    throw token_error("cannot make " + folder.string());
  UniqueFd fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return fd;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    errno = EPERM;  // planted by someone else, or opened up: not trusted with a token
    return {};
  }
  return fd;
}

}  // namespace

std::string write_token(int run_dir_fd) {
  unsigned char bytes[kTokenBytes];
  for (std::size_t done = 0; done < sizeof bytes;) {
    const ssize_t n = ::getrandom(bytes + done, sizeof bytes - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw token_error("getrandom");
    done += static_cast<std::size_t>(n);
  }
  static const char digits[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += digits[b >> 4];
    token += digits[b & 15];
  }
  const std::string name = token_name(run_dir_fd);
  const UniqueFd folder = open_token_folder(/*create=*/true);
  if (!folder) throw token_error("cannot use " + token_folder().string());
  // A new file each time: one left behind is never written through.
  if (::unlinkat(folder.get(), name.c_str(), 0) != 0 && errno != ENOENT)
    throw token_error("cannot remove the previous token");
  const UniqueFd file(::openat(folder.get(), name.c_str(),
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!file) throw token_error("cannot create the token file");
  const std::string line = token + "\n";
  if (::write(file.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    throw token_error("cannot write the token file");
  return token;
}

void remove_token(int run_dir_fd) {
  try {
    const std::string name = token_name(run_dir_fd);
    if (const UniqueFd folder = open_token_folder(/*create=*/false))
      ::unlinkat(folder.get(), name.c_str(), 0);
  } catch (const std::exception&) {
    // Nothing to remove.
  }
}

std::filesystem::path token_folder() {
  const std::string uid = std::to_string(::geteuid());
  // The user's runtime folder when the system has one (systemd's, 0700), else one in /tmp.
  const std::filesystem::path runtime = "/run/user/" + uid;
  struct stat st {};
  if (::stat(runtime.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
      ::access(runtime.c_str(), W_OK) == 0)
    return runtime / "hookhost";
  return "/tmp/hookhost-" + uid;
}

std::optional<std::string> read_token(int run_dir_fd, std::string* why) {
  std::string name;
  try {
    name = token_name(run_dir_fd);
  } catch (const std::exception& e) {
    *why = e.what();
    return std::nullopt;
  }
  const std::filesystem::path path = token_folder() / name;
  const UniqueFd folder = open_token_folder(/*create=*/false);
  UniqueFd file;
  if (folder) file.reset(::openat(folder.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!file) {
    *why = path.string() + ": " + std::strerror(errno);
    return std::nullopt;
  }
  char buffer[2 * kTokenBytes + 2];
  const ssize_t n = ::read(file.get(), buffer, sizeof buffer);
  if (n < static_cast<ssize_t>(2 * kTokenBytes)) {
    *why = path.string() + ": cut short";
    return std::nullopt;
  }
  return std::string(buffer, 2 * kTokenBytes);
}

bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace hookhost::control
