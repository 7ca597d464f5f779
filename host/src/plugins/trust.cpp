#include "plugins/trust.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "support/unique_fd.hpp"

namespace hookhost {

namespace fs = std::filesystem;

namespace {

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Ownership and write permission of one path (already resolved).
std::string owner_or_mode_problem(const fs::path& path, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return std::string(what) + " " + path.string() + " cannot be examined: " + std::strerror(errno);
  const uid_t me = ::geteuid();
  if (st.st_uid != 0 && st.st_uid != me)
    return std::string(what) + " " + path.string() + " is owned by uid " +
           std::to_string(st.st_uid) + ", neither root nor the user running hookhost (uid " +
           std::to_string(me) + "): have root or uid " + std::to_string(me) + " own it (chown)";
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return std::string(what) + " " + path.string() + " is writable by group or others (mode " +
           octal_mode(st.st_mode) + "): run 'chmod go-w " + path.string() + "'";
  return {};
}

}  // namespace

std::string trust_problem(const fs::path& folder, const fs::path& file) {
  constexpr const char* kOverride =
      "; or set [run] allow_insecure_plugins = true to load it anyway";
  std::error_code ec;
  const fs::path real_folder = fs::canonical(folder, ec);
  if (ec) return "plugin folder " + folder.string() + " cannot be resolved: " + ec.message();
  if (std::string why = owner_or_mode_problem(real_folder, "plugin folder"); !why.empty())
    return why + kOverride;
  const fs::path real_file = fs::canonical(file, ec);
  if (ec) return "plugin file " + file.string() + " cannot be resolved: " + ec.message();
  // A link may point elsewhere inside the folder; outside, it would escape the folder's rules.
  if (real_file.parent_path() != real_folder)
    return "plugin file " + file.string() + " is a link to " + real_file.string() +
           ", outside its plugin folder " + real_folder.string() +
           ": copy the plugin into the folder instead of linking to it" + kOverride;
  if (std::string why = owner_or_mode_problem(real_file, "plugin file"); !why.empty())
    return why + kOverride;
  return {};
}

std::string sha256_of_file(const fs::path& file) {
  const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    throw std::runtime_error("cannot read " + file.string() +
                             " to hash it: " + std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  bool ok = ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1;
  std::array<unsigned char, 1 << 16> buffer;
  while (ok) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    ok = EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(n)) == 1;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (!ok || EVP_DigestFinal_ex(ctx.get(), digest, &size) != 1)
    throw std::runtime_error("cannot hash " + file.string());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace hookhost
