#!/usr/bin/env bash
# scripts/check_layering.sh on a small tree of its own: a clean tree passes; then each thing the
# check guards is planted in turn and must fail, naming file:line: an include the table forbids
# (a folder's, a public header's, a public header's own), a folder or public header without a row,
# a 151-line function, an 801-line file, a 251-line README, a block written twice (which passes
# once allowlisted), and a missing ctags. An include listed as an exception passes, and each limit
# itself passes.
#   reports_violation.sh SOURCE_DIR
set -euo pipefail
check=$1/scripts/check_layering.sh
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree"/host/src/{support,plugins,context,services,runtime,job} "$tree/host/app" \
  "$tree/host/runner" "$tree/host/include/hookhost/host" "$tree/scripts"
cat >"$tree/host/src/README.md" <<'TABLE'
| Folder | Owns | May include |
|---|---|---|
| `support/` | helpers | nothing |
| `plugins/` | plugin files | `support/` |
| `context/` | the job's state | `support/` |
| `services/` | services | `support/`, `context/` |
| `runtime/` | the runtime | `support/`, `context/`, `services/` |
| `job/` | jobs | `support/`, `plugins/`, `runtime/` |

| Public header | Folder | What |
|---|---|---|
| `hookhost/host/run_events.hpp` | `context/` | events |
| `hookhost/host/runtime.hpp` | `runtime/` | the runtime |

| File | Includes | Fix |
|---|---|---|
| `plugins/listed.cpp` | `job/job.hpp` | move it |
TABLE
printf '#pragma once\nstruct RunEvent {};\n' >"$tree/host/include/hookhost/host/run_events.hpp"
printf '#pragma once\n#include "run_events.hpp"\n#include <hookhost/hook.h>\n' \
  >"$tree/host/include/hookhost/host/runtime.hpp"
touch "$tree/host/src/support/text.hpp" "$tree/host/src/job/job.hpp" "$tree/host/src/runtime/x.hpp"
printf '#include "support/text.hpp"\n#include "hookhost/host/runtime.hpp"\n' >"$tree/host/src/job/job.cpp"
printf '#include "hookhost/host/run_events.hpp"\n#include "hookhost/hook.h"\n' \
  >"$tree/host/src/context/job_state.hpp"
printf '#include "job/job.hpp"\n' >"$tree/host/src/plugins/listed.cpp"
printf '# hookhost\n\nA short README.\n' >"$tree/README.md"

passes() {  # passes WHAT: the check passes on the tree
  local out
  if ! out=$(bash "$check" "$tree" 2>&1) || ! grep -q "every include follows" <<<"$out"; then
    echo "$1 failed: $out" >&2
    exit 1
  fi
}
fails() {  # fails WHAT TEXT...: the check fails on the tree, saying each TEXT
  local what=$1 out text
  shift
  if out=$(bash "$check" "$tree" 2>&1); then
    echo "$what passed: $out" >&2
    exit 1
  fi
  if grep -q "every include follows" <<<"$out"; then
    echo "$what printed the success line: $out" >&2
    exit 1
  fi
  for text in "$@"; do
    if ! grep -qF -- "$text" <<<"$out"; then
      echo "$what: the check did not say \"$text\": $out" >&2
      exit 1
    fi
  done
}

passes "the clean tree"

printf '// a comment\n#include "support/text.hpp"\n#include "job/job.hpp"\n' \
  >"$tree/host/src/plugins/loader.cpp"
fails "an include against the table" 'host/src/plugins/loader.cpp:3: plugins/ may not include job/'
rm "$tree/host/src/plugins/loader.cpp"

printf '#include "runtime/x.hpp"\n' >"$tree/host/src/services/clock.cpp"
fails "services/ including runtime/" \
  'host/src/services/clock.cpp:1: services/ may not include runtime/ ("runtime/x.hpp")'
rm "$tree/host/src/services/clock.cpp"

printf '#pragma once\n\n#include "hookhost/host/runtime.hpp"\n' >"$tree/host/src/context/uses_runtime.hpp"
fails "context/ including the runtime's public header" \
  'host/src/context/uses_runtime.hpp:3: context/ may not include runtime/ ("hookhost/host/runtime.hpp", a public header of runtime/)'
printf '#include <hookhost/host/runtime.hpp>\n' >"$tree/host/src/context/uses_runtime.hpp"
fails "context/ including the runtime's public header in <...>" \
  'host/src/context/uses_runtime.hpp:1: context/ may not include runtime/'
rm "$tree/host/src/context/uses_runtime.hpp"

cp "$tree/host/include/hookhost/host/run_events.hpp" "$tree/run_events.hpp"
printf '#include "runtime.hpp"\n' >>"$tree/host/include/hookhost/host/run_events.hpp"
fails "a public header including a higher one" \
  'host/include/hookhost/host/run_events.hpp:3: context/ may not include runtime/ ("hookhost/host/runtime.hpp"'
mv "$tree/run_events.hpp" "$tree/host/include/hookhost/host/run_events.hpp"

touch "$tree/host/include/hookhost/unlisted.hpp"
fails "a public header without a row" 'host/include/hookhost/unlisted.hpp: no row in the public-header table'
rm "$tree/host/include/hookhost/unlisted.hpp"

mkdir "$tree/host/src/storage"
fails "a folder without a row" 'host/src/storage/: no row'
rmdir "$tree/host/src/storage"

function_of() {  # function_of NAME LINES: a C++ function of LINES lines, each statement its own
  echo "int $1() {"
  echo "  int sum = 0;"
  for ((i = 1; i <= $2 - 4; ++i)); do echo "  sum += $i * $i + $((i * 7));"; done
  echo "  return sum;"
  echo "}"
}
{ echo '#include "support/text.hpp"'; echo; function_of at_the_limit 150; } \
  >"$tree/host/src/job/long.cpp"
passes "a 150-line function"
{ echo '#include "support/text.hpp"'; echo; function_of too_long 151; } \
  >"$tree/host/src/job/long.cpp"
fails "a 151-line function" 'host/src/job/long.cpp:3: too_long is 151 lines (at most 150)'
rm "$tree/host/src/job/long.cpp"

for ((i = 1; i <= 800; ++i)); do echo "constexpr int table_$i = $i;"; done >"$tree/host/runner/big.hpp"
passes "an 800-line file"
echo "constexpr int table_801 = 801;" >>"$tree/host/runner/big.hpp"
fails "an 801-line file" 'host/runner/big.hpp: 801 lines (at most 800)'
rm "$tree/host/runner/big.hpp"

for ((i = 4; i <= 250; ++i)); do echo "line $i"; done >>"$tree/README.md"
passes "a 250-line README"
echo "line 251" >>"$tree/README.md"
fails "a 251-line README" 'README.md: 251 lines (at most 250)'
head -n 3 "$tree/README.md" >"$tree/README.tmp" && mv "$tree/README.tmp" "$tree/README.md"

block='  const int width = columns * 8;
  const int height = rows * 16;
  int area = width * height;
  if (area > limit) area = limit;
  // a comment, which does not count
  total += area;
  count += 1;

  last = area;
  seen = true;'
printf 'void first(int columns, int rows) {\n%s\n}\n' "$block" >"$tree/host/src/job/one.cpp"
printf 'int unrelated = 0;\n\nvoid second(int columns, int rows) {\n  begin();\n%s\n}\n' \
  "$block" >"$tree/host/app/two.cpp"
fails "a block written twice" \
  'host/app/two.cpp:5-14 and host/src/job/one.cpp:2-11 share 8 lines'
key=$({ bash "$check" "$tree" 2>&1 || true; } | sed -n 's/.*share 8 lines.*\[\(.*\)\]$/\1/p')
echo "$key a block kept twice on purpose" >"$tree/scripts/duplicates-allowed.txt"
passes "a block written twice and listed"
echo "  extra();" >>"$tree/host/src/job/one.cpp"
passes "a listed pair after an edit elsewhere in its file"
rm "$tree/host/app/two.cpp"
out=$(bash "$check" "$tree" 2>&1)
if ! grep -qF "note: scripts/duplicates-allowed.txt:1: the pair $key no longer occurs" <<<"$out"; then
  echo "a listed pair that no longer occurs was not noted" >&2
  exit 1
fi
rm "$tree/host/src/job/one.cpp" "$tree/scripts/duplicates-allowed.txt"

printf 'int small() { return 1; }\n' >"$tree/host/src/job/small.cpp"
if out=$(CTAGS=/nonexistent/ctags bash "$check" "$tree" 2>&1); then
  echo "the check passed without ctags: $out" >&2
  exit 1
fi
grep -q 'universal-ctags (/nonexistent/ctags) is not installed' <<<"$out"
passes "the clean tree again"
echo "check_layering reports what the table forbids"
