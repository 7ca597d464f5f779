#!/bin/sh
# Fails when plugin_api/include is not byte for byte the frozen copy of the minor it declares
# (tests/abi/v1.HH_ABI_MINOR/include), so no change to the ABI headers goes in unversioned.
#   tests/abi/current_is_frozen.sh SOURCE_DIR
set -u
root=${1:?usage: current_is_frozen.sh SOURCE_DIR}
minor=$(sed -n 's/^#define HH_ABI_MINOR \([0-9][0-9]*\)$/\1/p' "$root/plugin_api/include/hookhost/version.h")
[ -n "$minor" ] || { echo "no '#define HH_ABI_MINOR N' line in plugin_api/include/hookhost/version.h"; exit 1; }
frozen=$root/tests/abi/v1.$minor/include
advice="Either undo the change to plugin_api/include, or:
  - an ABI change (a field, a function, a service or extension id, a code, a size macro): bump
    HH_ABI_MINOR in plugin_api/include/hookhost/version.h, run tests/abi/freeze.sh NEW_MINOR,
    add tests/abi/v1.NEW_MINOR/CMakeLists.txt (see v1.1's) and say what it added in docs/abi.md;
  - comments only, before 1.$minor is released (or a fix that changes no byte a compiler sees):
    run tests/abi/freeze.sh $minor and say so in the commit message."
if [ ! -d "$frozen" ]; then
  echo "HH_ABI_MINOR is $minor, but there is no frozen copy tests/abi/v1.$minor/include."
  echo "$advice"
  exit 1
fi
tmp=$(mktemp)
if ! diff -r "$frozen" "$root/plugin_api/include" >"$tmp" 2>&1; then
  echo "plugin_api/include differs from its frozen copy tests/abi/v1.$minor/include (HH_ABI_MINOR $minor):"
  head -n 40 "$tmp"
  rm -f "$tmp"
  echo "$advice"
  exit 1
fi
rm -f "$tmp"
echo "plugin_api/include is byte for byte tests/abi/v1.$minor/include"
