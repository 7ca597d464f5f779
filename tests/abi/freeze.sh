#!/bin/sh
# Freezes plugin_api/include as the headers of ABI 1.MINOR, the minor it declares.
#   tests/abi/freeze.sh MINOR [REV]
# plugin_api/include is always the newest frozen minor; each older one is kept as a reverse patch
# from the next (v1.N.patch turns 1.(N+1)'s tree into 1.N's) and every minor's tree is pinned, file
# by file, by v1.N.sha256 (reconstruct.sh rebuilds and checks them all). This script writes
#   - v1.MINOR.sha256, the pin of plugin_api/include as it is now, and
#   - v1.(MINOR-1).patch, from plugin_api/include as it is now back to the 1.(MINOR-1) tree.
# The 1.(MINOR-1) tree is rebuilt from the headers, patches and pins of git revision REV (default
# HEAD, where plugin_api/include is still the last frozen tree: run it before committing the
# change), checked against its pin first. Run it
#   - when a minor is released, after bumping HH_ABI_MINOR to MINOR in the headers: it adds
#     v1.MINOR.sha256 and v1.(MINOR-1).patch (1.(MINOR-1)'s pin stays as it is);
#   - for a change to comments only, before MINOR is released, again for the current minor: it
#     rewrites v1.MINOR.sha256 and v1.(MINOR-1).patch. Say so in the commit message.
# Never for an older minor: their trees never change.
# Then it checks that reconstruct.sh rebuilds every minor from the new files.
set -eu
minor=${1:?usage: tests/abi/freeze.sh MINOR [REV]}
rev=${2:-HEAD}
cd "$(dirname "$0")/../.."
grep -q "^#define HH_ABI_MINOR $minor\$" plugin_api/include/hookhost/version.h || {
  echo "freeze.sh: plugin_api/include/hookhost/version.h does not say HH_ABI_MINOR $minor" >&2
  exit 2
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prev=$((minor - 1))
if [ "$minor" -gt 0 ]; then
  # The 1.(MINOR-1) tree, from REV's own headers, patches and pins.
  mkdir "$tmp/rev"
  git archive "$rev" plugin_api/include tests/abi | tar -x -C "$tmp/rev"
  cp tests/abi/reconstruct.sh "$tmp/rev/tests/abi/"
  sh "$tmp/rev/tests/abi/reconstruct.sh" "$tmp/rev" "$tmp/out" "$prev" || {
    echo "freeze.sh: cannot rebuild the ABI 1.$prev headers from revision $rev (above)" >&2
    exit 1
  }
  [ -d "$tmp/out/v1.$prev" ] || {
    echo "freeze.sh: plugin_api/include at $rev is older than ABI 1.$prev" >&2
    exit 1
  }
fi

# The pin of plugin_api/include, as include/PATH like the trees reconstruct.sh writes.
mkdir "$tmp/new"
cp -R plugin_api/include "$tmp/new/include"
(cd "$tmp/new" && find include -type f | LC_ALL=C sort | xargs sha256sum) >tests/abi/v1.$minor.sha256

# The reverse patch: plugin_api/include to the 1.(MINOR-1) tree, one unified diff per file (1 line
# of context; a file 1.(MINOR-1) lacks is deleted whole, from /dev/null the other way round).
if [ "$minor" -gt 0 ]; then
  new=$tmp/new old=$tmp/out/v1.$prev
  { (cd "$new" && find include -type f) && (cd "$old" && find include -type f); } |
    LC_ALL=C sort -u | while IFS= read -r f; do
    a=a/$f b=b/$f fa=$new/$f fb=$old/$f
    [ -f "$fa" ] || { a=/dev/null fa=/dev/null; }
    [ -f "$fb" ] || { b=/dev/null fb=/dev/null; }
    diff -U1 --label "$a" --label "$b" "$fa" "$fb" || [ $? -eq 1 ]
  done >tests/abi/v1.$prev.patch
fi
sh tests/abi/reconstruct.sh . "$tmp/check"
echo "froze plugin_api/include as ABI 1.$minor (tests/abi/v1.$minor.sha256: $(wc -l <tests/abi/v1.$minor.sha256) files)"
