#!/usr/bin/env bash
# scripts/check_layering.sh on a small tree of its own: an include the table forbids fails, naming
# file:line; one listed as an exception passes; a folder without a row fails.
#   reports_violation.sh SOURCE_DIR
set -euo pipefail
check=$1/scripts/check_layering.sh
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/host/src/support" "$tree/host/src/plugins" "$tree/host/src/job" "$tree/host/app" \
  "$tree/host/runner"
cat >"$tree/host/src/README.md" <<'TABLE'
| Folder | Owns | May include |
|---|---|---|
| `support/` | helpers | nothing |
| `plugins/` | plugin files | `support/` |
| `job/` | jobs | `support/`, `plugins/` |

| File | Includes | Fix |
|---|---|---|
| `plugins/listed.cpp` | `job/job.hpp` | move it |
TABLE
touch "$tree/host/src/support/text.hpp" "$tree/host/src/job/job.hpp"
printf '#include "support/text.hpp"\n#include "hookhost/host/tensor.hpp"\n' >"$tree/host/src/job/job.cpp"
printf '#include "job/job.hpp"\n' >"$tree/host/src/plugins/listed.cpp"
bash "$check" "$tree" | grep -q "every include follows"

printf '// a comment\n#include "support/text.hpp"\n#include "job/job.hpp"\n' \
  >"$tree/host/src/plugins/loader.cpp"
if out=$(bash "$check" "$tree" 2>&1); then
  echo "an include against the table passed: $out" >&2
  exit 1
fi
grep -q 'host/src/plugins/loader.cpp:3: plugins/ may not include job/' <<<"$out"
rm "$tree/host/src/plugins/loader.cpp"

mkdir "$tree/host/src/storage"
if out=$(bash "$check" "$tree" 2>&1); then
  echo "a folder without a row passed: $out" >&2
  exit 1
fi
grep -q 'host/src/storage/: no row' <<<"$out"
echo "check_layering reports what the table forbids"
