#!/usr/bin/env bash
# Keeps the maps of the source tree true: README.md, docs/architecture.md and host/src/README.md
# may name only repository paths that exist, and link only to files and headings that exist.
#   tests/docs/doc_paths_check.sh SOURCE_DIR
# Prints DOC:LINE: what is wrong, for each problem, and exits 1; exits 0 with one summary line.
#
# What it reads, outside fenced code blocks:
#  - relative markdown links, [text](path) and [text](path#anchor): the file (from the doc's own
#    folder) must exist, and an anchor into a .md file must be the slug of one of its headings
#    (GitHub's rule: lowercase, punctuation dropped but '-' and '_', each space a '-', and a
#    repeated heading's slug followed by -1, -2, ...). URLs (scheme://, mailto:) are skipped.
#  - code spans that look like repository paths: with a '/' (`host/src/runtime/step_engine.cpp`,
#    `runtime/observer_lane.hpp`, `docs/x.md`, `control/`) or a bare file name with a source or doc
#    extension (`step_engine.cpp`). A path with a '/' must exist from the source root, host/src,
#    host, host/include, plugin_api/include or the doc's folder; one without an extension may name
#    a unit (`distributed/state_transfer` for its .hpp/.cpp); `a.{hpp,cpp}` means both. A bare
#    file name must be the name of some file in the tree.
#    Skipped: anything with a space, '*', '?', '<', '>', ':', '=', '|', '$' or '...' (commands,
#    globs, placeholders such as <run_dir> or hookhost/..., C++ names), a segment in capitals (NAME, MINOR: placeholders),
#    absolute paths (the system's), build/ and runs/ (made by a build or a run), and service ids
#    such as hh.steps/1.
#  - "ABI 1.0 to 1.N" (README.md, docs/architecture.md, docs/abi.md) must name HH_ABI_MINOR of
#    plugin_api/include/hookhost/version.h.
#  - README.md is at most 250 lines: the front door, not the reference.
set -uo pipefail
export LC_ALL=C  # byte-wise awk and regular expressions, whatever the awk
root=${1:?usage: doc_paths_check.sh SOURCE_DIR}
cd "$root" || { echo "doc_paths_check: no source directory $root" >&2; exit 2; }
docs=(README.md docs/architecture.md host/src/README.md)
readme_max=250
problems=0

problem() {  # DOC LINE TEXT
  echo "$1:$2: $3" >&2
  problems=$((problems + 1))
}

# Every file name in the tree, one a line (bare file names are looked up here).
names=$(find . -path ./.git -prune -o -path ./build -prune -o -type f -print |
        sed 's|.*/||' | sort -u)

# The GitHub slugs of FILE's headings, one a line.
slugs() {
  awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    /^#+[ \t]/ && match($0, /^#+/) && RLENGTH <= 6 {
      h = $0
      sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#+[ \t]*$/, "", h); sub(/[ \t]+$/, "", h)
      while (match(h, /\[[^]]*\]\([^)]*\)/)) {          # a link: its text
        t = substr(h, RSTART + 1, RLENGTH - 1); sub(/\]\(.*$/, "", t)
        h = substr(h, 1, RSTART - 1) t substr(h, RSTART + RLENGTH)
      }
      h = tolower(h)
      # Punctuation outside ASCII that GitHub drops (em and en dash, arrows, x, ellipsis, quotes).
      gsub(/\342\200[\223\224\230\231\234\235\246]|\342\206[\220-\223]|\303\227/, "", h)
      out = ""
      for (i = 1; i <= length(h); i++) {
        c = substr(h, i, 1)
        if (c ~ /[a-z0-9_-]/ || c > "\177") out = out c
        else if (c == " ") out = out "-"
      }
      n = seen[out]++
      print (n ? out "-" n : out)
    }
  ' "$1"
}

# "LINE<TAB>link|code<TAB>TEXT" for each link target and code span of DOC outside code blocks.
references() {
  awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
      line = $0
      rest = line
      while (match(rest, /\]\([^) \t]+\)/)) {
        print NR "\tlink\t" substr(rest, RSTART + 2, RLENGTH - 3)
        rest = substr(rest, RSTART + RLENGTH)
      }
      rest = line
      while (match(rest, /`[^`]+`/)) {
        print NR "\tcode\t" substr(rest, RSTART + 1, RLENGTH - 2)
        rest = substr(rest, RSTART + RLENGTH)
      }
    }
  ' "$1"
}

# True when PATH (no braces) names something from one of the roots.
exists_from_roots() {  # DOC_DIR PATH
  local dir=$1 path=${2%/} r
  for r in . host/src host host/include plugin_api/include "$dir"; do
    [ -e "$r/$path" ] && return 0
    # A unit named without its extension: distributed/state_transfer.
    case ${path##*/} in
      *.*) ;;
      *) compgen -G "$r/$path.*" >/dev/null && return 0 ;;
    esac
  done
  return 1
}

is_source_name() {
  [[ $1 =~ \.(cpp|hpp|h|c|cc|md|sh|py|cmake|in|proto|ini|txt)$ ]]
}

# Characters no repository path here has: commands, globs, placeholders, C++ names, key=value.
not_path_chars='[][[:space:]*?<>:=|$"(),;@!#%~'"'"']'

# True for a code span that is no repository path, or is a placeholder.
not_a_path() {
  local t=$1 seg
  [[ $t =~ $not_path_chars ]] && return 0
  [[ $t == *...* ]] && return 0                               # hookhost/...: any of them
  [[ $t == -* || $t == /* || $t == .* && $t != ./* && $t != ../* ]] && return 0
  [[ $t =~ ^(\./)?(build|runs)(/|$) ]] && return 0
  [[ $t =~ ^[a-z]+\.[a-z.-]+/[0-9]+$ ]] && return 0          # hh.steps/1
  if [[ $t != */* ]]; then is_source_name "$t" || return 0; fi
  [[ $t =~ ^[A-Za-z0-9_.+{}/-]+$ ]] || return 0
  IFS=/ read -ra segs <<<"$t"
  for seg in "${segs[@]}"; do
    [[ $seg =~ (^|[^A-Za-z])[A-Z][A-Z0-9_]+([^A-Za-z0-9_]|$) ]] || continue
    [[ ${BASH_REMATCH[0]} =~ README|LICENSE|CHANGELOG|CONTRIBUTING|HOWTO ]] || return 0
  done
  return 1
}

# The alternatives of one {a,b} in PATH, one a line (none: PATH itself).
expand_braces() {
  local t=$1
  if [[ $t =~ ^([^{]*)\{([^}]*)\}(.*)$ ]]; then
    local pre=${BASH_REMATCH[1]} alts=${BASH_REMATCH[2]} post=${BASH_REMATCH[3]} a
    IFS=, read -ra parts <<<"$alts"
    for a in "${parts[@]}"; do echo "$pre$a$post"; done
  else
    echo "$t"
  fi
}

check_link() {  # DOC LINE TARGET
  local doc=$1 n=$2 target=$3 dir file anchor
  [[ $target =~ ^[a-zA-Z][a-zA-Z0-9+.-]*: ]] && return 0     # https:, mailto:
  dir=$(dirname "$doc")
  file=${target%%#*}
  anchor=
  [[ $target == *#* ]] && anchor=${target#*#}
  if [ -z "$file" ]; then
    file=$doc
  else
    file=$dir/$file
    if [ ! -e "$file" ]; then
      problem "$doc" "$n" "link to $target: no file ${file#./}"
      return
    fi
  fi
  if [ -n "$anchor" ] && [[ $file == *.md ]] && [ -f "$file" ]; then
    if ! slugs "$file" | grep -qxF -- "$anchor"; then
      problem "$doc" "$n" "link to $target: no heading in $(realpath -m --relative-to=. "$file") has the anchor #$anchor"
    fi
  fi
}

check_code() {  # DOC LINE SPAN
  local doc=$1 n=$2 t=$3 p
  not_a_path "$t" && return 0
  while IFS= read -r p; do
    if [[ $p == */* ]]; then
      exists_from_roots "$(dirname "$doc")" "$p" ||
        problem "$doc" "$n" "\`$p\` names no file or folder (looked from the source root, host/src, host, host/include, plugin_api/include and $(dirname "$doc"))"
    else
      grep -qxF -- "$p" <<<"$names" || problem "$doc" "$n" "\`$p\` is the name of no file in the tree"
    fi
  done < <(expand_braces "$t")
}

for doc in "${docs[@]}"; do
  if [ ! -f "$doc" ]; then
    problem "$doc" 0 "missing"
    continue
  fi
  while IFS=$'\t' read -r n kind text; do
    case $kind in
      link) check_link "$doc" "$n" "$text" ;;
      code) check_code "$doc" "$n" "$text" ;;
    esac
  done < <(references "$doc")
done

# The frozen range of ABI minors, wherever a doc states it.
minor=$(sed -n 's/^#define HH_ABI_MINOR \([0-9]*\).*/\1/p' plugin_api/include/hookhost/version.h)
if [ -z "$minor" ]; then
  problem plugin_api/include/hookhost/version.h 0 "no HH_ABI_MINOR"
else
  for doc in README.md docs/architecture.md docs/abi.md; do
    [ -f "$doc" ] || continue
    while IFS=: read -r n text; do
      [[ $text =~ 1\.0\ to\ 1\.([0-9]+) ]] || continue
      [ "${BASH_REMATCH[1]}" = "$minor" ] ||
        problem "$doc" "$n" "says ABI 1.0 to 1.${BASH_REMATCH[1]}, but HH_ABI_MINOR is $minor"
    done < <(grep -n 'ABI 1\.0 to 1\.[0-9]' "$doc")
  done
fi

lines=$(wc -l <README.md)
[ "$lines" -le "$readme_max" ] ||
  problem README.md "$lines" "README.md is $lines lines, over $readme_max: move reference material to docs/"

if [ "$problems" -ne 0 ]; then
  echo "doc_paths_check: $problems problem(s) in ${docs[*]}" >&2
  exit 1
fi
echo "doc_paths_check: every path and anchor in ${docs[*]} exists; README.md is $lines lines"
