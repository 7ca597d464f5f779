#!/bin/sh
# Freezes plugin_api/include as tests/abi/v1.MINOR/include and pins every file in SHA256SUMS.
#   tests/abi/freeze.sh MINOR
# Run it once when a minor is released (after bumping HH_ABI_MINOR), or, for a change to comments
# only, again for the current minor: say so in the commit message. Never for an older minor.
set -eu
minor=${1:?usage: tests/abi/freeze.sh MINOR}
cd "$(dirname "$0")"
dir=v1.$minor
src=../../plugin_api/include
grep -q "^#define HH_ABI_MINOR $minor\$" "$src/hookhost/version.h" || {
  echo "freeze.sh: plugin_api/include/hookhost/version.h does not say HH_ABI_MINOR $minor" >&2
  exit 2
}
mkdir -p "$dir"
rm -rf "$dir/include"
cp -R "$src" "$dir/include"
(cd "$dir" && find include -type f | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
echo "froze plugin_api/include as tests/abi/$dir (SHA256SUMS: $(wc -l < "$dir/SHA256SUMS") files)"
