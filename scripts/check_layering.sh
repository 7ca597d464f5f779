#!/usr/bin/env bash
# Checks that the host's includes point one way: every `#include "..."` in host/src, host/app and
# host/runner names its own folder, a public header (hookhost/...), or a folder that the layering
# table of host/src/README.md lets it include, or is listed there as an exception to remove.
# Prints FILE:LINE for each include that breaks the rule and exits 1.
#   scripts/check_layering.sh [SOURCE_DIR]     (default: this checkout)
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
src=$root/host/src
table=$src/README.md
[ -f "$table" ] || { echo "check_layering: no $table" >&2; exit 2; }

# The tables as "rule FOLDER ALLOWED..." and "exception FILE INCLUDE" lines. A folder is named
# relative to host/src: `runtime/`, `../app/`; a file likewise. Columns are found by their header.
rules=$(awk -F'|' '
  function cell(i) { s = $i; gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
  function names(text,   out, t) {
    out = ""
    while (match(text, /`[^`]+`/)) {
      t = substr(text, RSTART + 1, RLENGTH - 2); text = substr(text, RSTART + RLENGTH)
      sub(/^\.\.\//, "", t); sub(/\/$/, "", t); out = out " " t
    }
    return out
  }
  /^\|/ {
    if (header) {
      if ($0 ~ /^\|[-| :]+\|?$/) next
      if (kind == "rule") print "rule" names(cell(fcol)) " :" names(cell(acol))
      if (kind == "exception") print "exception" names(cell(fcol)) names(cell(acol))
      next
    }
    header = 1; kind = ""; fcol = acol = 0
    for (i = 2; i < NF; ++i) {
      if (cell(i) == "Folder") { kind = "rule"; fcol = i }
      if (cell(i) == "May include") acol = i
      if (cell(i) == "File") { kind = "exception"; fcol = i }
      if (cell(i) == "Includes") acol = i
    }
    if (!fcol || !acol) kind = ""
    next
  }
  { header = 0 }
' "$table")

declare -A allowed=() exception=() used=()
while read -r kind rest; do
  if [ "$kind" = rule ]; then
    folder=${rest%% *}
    allowed[$folder]=" ${rest#* : } "
  elif [ "$kind" = exception ]; then
    exception[${rest// /|}]=1
  fi
done <<<"$rules"
[ ${#allowed[@]} -gt 0 ] || { echo "check_layering: no layering table in $table" >&2; exit 2; }

# The folder a source file belongs to (host/src/NAME/..., or app, runner) in `from`, and its name
# as the exception table writes it in `name`.
folder_of() {
  case $1 in
    host/src/*) name=${1#host/src/}; from=${name%%/*} ;;
    *) name=${1#host/}; from=${name%%/*} ;;
  esac
}

status=0
cd "$root"
for dir in host/src/*/; do
  dir=${dir%/}
  if [ -z "${allowed[${dir##*/}]+set}" ]; then
    echo "$dir/: no row in the layering table of host/src/README.md" >&2
    status=1
  fi
done
while IFS=: read -r file line text; do
  [[ $text =~ \"([^\"]+)\" ]] || continue
  include=${BASH_REMATCH[1]}
  folder_of "$file"
  case $include in
    hookhost/*) continue ;;  # the public headers
    */*)
      to=${include%%/*}
      [ -d "host/src/$to" ] || continue  # generated (proto/...) or not the host's
      ;;
    *)
      # A bare name: the including file's folder, else the sandbox (the runner's include path).
      if [ -f "$(dirname "$file")/$include" ]; then continue
      elif [ -f "host/src/sandbox/$include" ]; then to=sandbox
      else continue
      fi
      ;;
  esac
  [ "$to" = "$from" ] && continue
  case ${allowed[$from]- } in *" $to "*) continue ;; esac
  key="$name|$include"
  if [ -n "${exception[$key]+set}" ]; then
    used[$key]=1
    continue
  fi
  echo "$file:$line: $from/ may not include $to/ (\"$include\"); see host/src/README.md" >&2
  status=1
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' host/src host/app host/runner \
           --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.c' | sort -t: -k1,1 -k2,2n)

for key in "${!exception[@]}"; do
  [ -n "${used[$key]+set}" ] || echo "note: the exception ${key/|/ -> } no longer occurs: remove its row"
done
[ $status -eq 0 ] && echo "check_layering: every include follows host/src/README.md"
exit $status
