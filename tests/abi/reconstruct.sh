#!/bin/sh
# Rebuilds the headers of every released ABI minor, byte for byte, from plugin_api/include.
#   tests/abi/reconstruct.sh SOURCE_DIR OUT_DIR [LOWEST]
# plugin_api/include is the newest frozen minor (the HH_ABI_MINOR it declares). It is copied to
# OUT_DIR/v1.MINOR/include and checked against tests/abi/v1.MINOR.sha256; then, for each older N,
# v1.(N+1)'s tree is copied to OUT_DIR/v1.N, tests/abi/v1.N.patch turns it into 1.N's, and
# tests/abi/v1.N.sha256 checks it (every file's SHA-256, and no file more). LOWEST is the oldest
# minor to rebuild (default 0), or `current` to check plugin_api/include alone. Only trees that
# pass replace those in OUT_DIR, and only when their contents changed (their files keep their
# times, so nothing built against them rebuilds). Exits 1, saying which minor and what to do, when
# one does not match its pin.
set -eu
src=$(cd "${1:?usage: reconstruct.sh SOURCE_DIR OUT_DIR [LOWEST]}" && pwd)
out=${2:?usage: reconstruct.sh SOURCE_DIR OUT_DIR [LOWEST]}
abi=$src/tests/abi
minor=$(sed -n 's/^#define HH_ABI_MINOR \([0-9][0-9]*\)$/\1/p' "$src/plugin_api/include/hookhost/version.h")
[ -n "$minor" ] || { echo "no '#define HH_ABI_MINOR N' line in plugin_api/include/hookhost/version.h"; exit 1; }
lowest=${3:-0}
[ "$lowest" = current ] && lowest=$minor
advice="Either undo the change to plugin_api/include, or:
  - an ABI change (a field, a function, a service or extension id, a code, a size macro): bump
    HH_ABI_MINOR in plugin_api/include/hookhost/version.h, run tests/abi/freeze.sh NEW_MINOR
    and say what it added in docs/abi.md (its section \"Frozen headers\");
  - comments only, before 1.$minor is released (or a fix that changes no byte a compiler sees):
    run tests/abi/freeze.sh $minor and say so in the commit message."
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$out/.stage
rm -rf "$stage"
mkdir "$stage"

# check N WHAT: the tree $stage/v1.N against tests/abi/v1.N.sha256; on a mismatch, says WHAT it is.
check() {
  sums=$abi/v1.$1.sha256
  if [ ! -f "$sums" ]; then
    echo "HH_ABI_MINOR is $minor, but there is no tests/abi/v1.$1.sha256: ABI 1.$1 was never frozen."
    echo "$advice"
    exit 1
  fi
  (cd "$stage/v1.$1" && find include -type f | LC_ALL=C sort) >"$stage/files"
  cut -c67- "$sums" | LC_ALL=C sort >"$stage/pinned"
  if (cd "$stage/v1.$1" && sha256sum --check --strict --quiet "$sums") >"$stage/log" 2>&1 &&
    cmp -s "$stage/files" "$stage/pinned"; then
    return 0
  fi
  echo "$2 is not byte for byte the frozen ABI 1.$1 headers (tests/abi/v1.$1.sha256):"
  sed 's/^/  /' "$stage/log"
  comm -23 "$stage/files" "$stage/pinned" | sed 's/^/  not frozen: /'
  if [ "$1" = "$minor" ]; then
    echo "(git diff -- plugin_api/include shows the change)"
    echo "$advice"
  else
    echo "tests/abi/v1.$1.patch and tests/abi/v1.$1.sha256 are written by tests/abi/freeze.sh alone and"
    echo "never edited: restore them (git checkout -- tests/abi) unless they are what you meant to change."
  fi
  rm -rf "$stage"
  exit 1
}

mkdir "$stage/v1.$minor"
cp -R "$src/plugin_api/include" "$stage/v1.$minor/include"
check "$minor" "plugin_api/include (HH_ABI_MINOR $minor)"
n=$minor
while [ "$n" -gt "$lowest" ]; do
  n=$((n - 1))
  cp -R "$stage/v1.$((n + 1))" "$stage/v1.$n"
  if [ ! -f "$abi/v1.$n.patch" ]; then
    echo "there is no tests/abi/v1.$n.patch to rebuild the ABI 1.$n headers from 1.$((n + 1))'s."
    rm -rf "$stage"
    exit 1
  fi
  if command -v patch >/dev/null 2>&1; then
    apply="patch -p1 -f --fuzz=0 --no-backup-if-mismatch -r -"
  else
    apply="git apply -p1"
  fi
  if ! (cd "$stage/v1.$n" && $apply) <"$abi/v1.$n.patch" >"$stage/log" 2>&1; then
    echo "tests/abi/v1.$n.patch does not apply to the ABI 1.$((n + 1)) headers:"
    sed 's/^/  /' "$stage/log"
    echo "tests/abi/v1.$n.patch is written by tests/abi/freeze.sh alone and never edited: restore it"
    echo "(git checkout -- tests/abi/v1.$n.patch)."
    rm -rf "$stage"
    exit 1
  fi
  check "$n" "tests/abi/v1.$n.patch applied to the ABI 1.$((n + 1)) headers"
done

# Every tree matched its pin: those that changed replace the ones in OUT_DIR.
n=$minor
while [ "$n" -ge "$lowest" ]; do
  if ! diff -r "$stage/v1.$n" "$out/v1.$n" >/dev/null 2>&1; then
    rm -rf "$out/v1.$n"
    mv "$stage/v1.$n" "$out/v1.$n"
  fi
  n=$((n - 1))
done
rm -rf "$stage"
if [ "$lowest" = "$minor" ]; then
  echo "plugin_api/include is byte for byte the frozen ABI 1.$minor headers"
else
  echo "ABI 1.$lowest to 1.$minor headers rebuilt byte for byte as frozen, in $out/v1.N/include"
fi
