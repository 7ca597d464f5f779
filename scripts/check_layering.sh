#!/usr/bin/env bash
# The host's structure, checked (ctest Layering.IncludesPointOneWay). Fails naming FILE:LINE and
# what to do for each of:
#  - an include that does not point one way: every `#include "..."` in host/src, host/app,
#    host/runner and host/python, and in the public headers (host/include/hookhost), names its
#    own folder, a folder that the layering table of host/src/README.md lets it include, or is
#    listed there as an exception to remove. A public header (`hookhost/host/NAME.hpp`,
#    `hookhost/testing.hpp`; "..." or <...>) counts as the folder that its row of the public-header
#    table names; the plugin ABI (`hookhost/*.h`, `hookhost/ext/`, the SDK) may be included
#    everywhere;
#  - a function over 150 lines in host/ (C and C++, measured by universal-ctags);
#  - a file over 800 lines in host/ (.cpp .hpp .h .c .py);
#  - README.md over 250 lines;
#  - code written twice in host/ (scripts/find_duplicates.py: 6 or more shared lines) that
#    scripts/duplicates-allowed.txt does not list.
#   scripts/check_layering.sh [SOURCE_DIR]     (default: this checkout)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "${1:-$here/..}" && pwd)
src=$root/host/src
table=$src/README.md
[ -f "$table" ] || { echo "check_layering: no $table" >&2; exit 2; }
max_function_lines=150
max_file_lines=800
max_readme_lines=250
ctags=${CTAGS:-ctags}

# The tables as "rule FOLDER ALLOWED...", "exception FILE INCLUDE" and "public HEADER FOLDER"
# lines. A folder is named relative to host/src: `runtime/`, `../app/`; a file likewise; a public
# header relative to host/include: `hookhost/host/job.hpp`. Columns are found by their header.
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
      if (kind == "public") print "public" names(cell(fcol)) names(cell(acol))
      next
    }
    header = 1; kind = ""; fcol = acol = pcol = foldercol = 0
    for (i = 2; i < NF; ++i) {
      if (cell(i) == "Folder") { kind = "rule"; fcol = i; foldercol = i }
      if (cell(i) == "May include") acol = i
      if (cell(i) == "File") { kind = "exception"; fcol = i }
      if (cell(i) == "Includes") acol = i
      if (cell(i) == "Public header") pcol = i
    }
    if (pcol && foldercol) { kind = "public"; fcol = pcol; acol = foldercol }
    if (!fcol || !acol) kind = ""
    next
  }
  { header = 0 }
' "$table")

declare -A allowed=() exception=() used=() owner=()
while read -r kind rest; do
  if [ "$kind" = rule ]; then
    folder=${rest%% *}
    allowed[$folder]=" ${rest#* : } "
  elif [ "$kind" = exception ]; then
    exception[${rest// /|}]=1
  elif [ "$kind" = public ]; then
    owner[${rest%% *}]=${rest#* }
  fi
done <<<"$rules"
[ ${#allowed[@]} -gt 0 ] || { echo "check_layering: no layering table in $table" >&2; exit 2; }

# The folder a source file belongs to (host/src/NAME/..., app, runner, python, or a public header's
# owner) in `from`, and its name as the exception table writes it in `name`.
folder_of() {
  case $1 in
    host/src/*) name=${1#host/src/}; from=${name%%/*} ;;
    host/include/*) name=${1#host/include/}; from=${owner[$name]-} ;;
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
declare -A public=()
while read -r header; do
  name=${header#host/include/}
  public[$name]=1
  if [ -z "${owner[$name]-}" ]; then
    echo "$header: no row in the public-header table of host/src/README.md: name the folder" \
         "that implements it" >&2
    status=1
  elif [ -z "${allowed[${owner[$name]}]+set}" ]; then
    echo "$header: its folder ${owner[$name]}/ has no row in the layering table" >&2
    status=1
  fi
done < <(find host/include -type f 2>/dev/null | sort)
for name in "${!owner[@]}"; do
  if [ -z "${public[$name]+set}" ]; then
    echo "host/src/README.md: the public-header table names $name, which does not exist:" \
         "remove its row" >&2
    status=1
  fi
done

sources=(host/src host/app host/runner host/python host/include)
existing=()
for dir in "${sources[@]}"; do [ -d "$dir" ] && existing+=("$dir"); done
while IFS=: read -r file line text; do
  if [[ $text =~ \"([^\"]+)\" ]]; then include=${BASH_REMATCH[1]}
  elif [[ $text =~ \<(hookhost/[^\>]+)\> ]]; then include=${BASH_REMATCH[1]}
  else continue
  fi
  folder_of "$file"
  [ -n "$from" ] || continue  # a public header without a row, reported above
  # A public header names another by its bare name.
  if [[ $file == host/include/* && $include != */* && -f "$(dirname "$file")/$include" ]]; then
    dir=${file#host/include/}; include=${dir%/*}/$include
  fi
  what=""
  case $include in
    hookhost/*)
      [ -n "${public[$include]+set}" ] || continue  # the plugin ABI and the SDK
      case $include in hookhost/host/*)
        case ${allowed[$from]- } in *" hookhost/host/... "*) continue ;; esac  # public headers only
      esac
      to=${owner[$include]-}
      [ -n "$to" ] || continue  # reported above
      what=", a public header of $to/"
      ;;
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
  echo "$file:$line: $from/ may not include $to/ (\"$include\"$what); see host/src/README.md:" \
       "move what it needs into a folder it may include" >&2
  status=1
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*("|<hookhost/)' "${existing[@]}" \
           --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.c' | sort -t: -k1,1 -k2,2n)

for key in "${!exception[@]}"; do
  [ -n "${used[$key]+set}" ] || echo "note: the exception ${key/|/ -> } no longer occurs: remove its row"
done

# Functions over the limit: universal-ctags gives each function's first and last line.
if ! "$ctags" --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "check_layering: universal-ctags ($ctags) is not installed, so function lengths cannot be" \
       "measured: run scripts/install-deps.sh (Debian package universal-ctags)" >&2
  exit 2
fi
while read -r end start file function; do
  [[ $end =~ ^[0-9]+$ ]] || continue
  lines=$((end - start + 1))
  if [ "$lines" -gt "$max_function_lines" ]; then
    echo "$file:$start: $function is $lines lines (at most $max_function_lines): split it into" \
         "named steps or a table" >&2
    status=1
  fi
done < <("$ctags" --languages=C,C++ --kinds-C=f --kinds-C++=f --fields=+ne --sort=no -x \
           --_xformat='%{end} %n %F %N' -R "${existing[@]}" | sort -k3,3 -k2,2n)

# Files over the limit.
while read -r lines file; do
  [ "$file" = total ] && continue
  if [ "$lines" -gt "$max_file_lines" ]; then
    echo "$file: $lines lines (at most $max_file_lines): split it by what its parts own" >&2
    status=1
  fi
done < <(find host \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' -o -name '*.py' \) \
           -type f -print0 | sort -z | xargs -0 -r wc -l)

if [ -f README.md ]; then
  lines=$(wc -l <README.md)
  if [ "$lines" -gt "$max_readme_lines" ]; then
    echo "README.md: $lines lines (at most $max_readme_lines): move reference material into docs/" \
         "and link it" >&2
    status=1
  fi
fi

# Code written twice.
python3 "$here/find_duplicates.py" --allow "$root/scripts/duplicates-allowed.txt" "$root" || status=1

[ $status -eq 0 ] && echo "check_layering: every include follows host/src/README.md"
exit $status
