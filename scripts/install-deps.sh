#!/usr/bin/env bash
# Installs the Debian 12 packages hookhost needs, only those that are missing.
# Runs as root, or through sudo when it is available.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkgconf binutils ccache patch
  universal-ctags python3
  libboost-dev libboost-program-options-dev
  libspdlog-dev libfmt-dev libelf-dev
  libseccomp-dev
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev lld
  libdlpack-dev
  libssl-dev
  pybind11-dev python3-dev python3-numpy
  python3-torch python3-sklearn python3-pytest
  chromium
  openmpi-bin libopenmpi-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "hookhost: all build dependencies are installed"
  exit 0
fi

echo "hookhost: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "hookhost: missing packages (${missing[*]}) and not root; install them or run as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
