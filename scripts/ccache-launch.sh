#!/usr/bin/env bash
# The compiler launcher scripts/ccache.sh sets: ccache, except for the making of a clang
# precompiled header. A clang .pch records the absolute paths of the folder it was made in, and
# ccache hashes the .pch of every file that uses it, so without this every such file would miss the
# cache in another clone. Here the .pch is made by the compiler itself, and beside it goes
# <pch>.sum, a hash of the contents (not the paths) of every file it was made from; ccache hashes
# that instead (pch_external_checksum, which scripts/ccache.sh sets).
#   ccache-launch.sh COMPILER ARGS...      (as CMAKE_<LANG>_COMPILER_LAUNCHER)
set -uo pipefail
pch="" depfile=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    -emit-pch) pch=pending ;;
    -o) output=${args[i + 1]:-} ;;
    -MF) depfile=${args[i + 1]:-} ;;
  esac
done
if [ "$pch" != pending ]; then
  # base_dir makes paths of the checkout relative, but not one behind -Xclang (CMake's
  # `-Xclang -include -Xclang /abs/cmake_pch.hxx`): that one is made relative here.
  for ((i = 3; i < ${#args[@]}; i++)); do
    if [ "${args[i - 3]}" = -Xclang ] && [ "${args[i - 2]}" = -include ] &&
      [ "${args[i - 1]}" = -Xclang ] && [[ "${args[i]}" = /* ]]; then
      args[i]=$(realpath --relative-to=. "${args[i]}")
    fi
  done
  exec ccache "${args[@]}"
fi
pch=$output
rm -f "$pch.sum"
"$@" || exit
[ -n "$depfile" ] && [ -f "$depfile" ] || exit 0
# The depfile: "target: dep dep \" lines; the contents of the deps, in order, make the sum.
sed -e '1s/^[^:]*://' -e 's/\\$//' "$depfile" | tr -s ' \t' '\n\n' | sed '/^$/d' |
  while read -r dep; do sha256sum <"$dep"; done | sha256sum | cut -d' ' -f1 >"$pch.sum"
