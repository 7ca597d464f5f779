#!/usr/bin/env bash
# doc_paths_check.sh fails, naming the doc, line and path, for each kind of stale pointer, and
# passes on the same small tree once the pointers are right.
#   tests/docs/doc_paths_check_reports.sh SOURCE_DIR
set -uo pipefail
root=$(cd "${1:?usage: doc_paths_check_reports.sh SOURCE_DIR}" && pwd)
check=$root/tests/docs/doc_paths_check.sh
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/docs" "$tree/host/src/runtime" "$tree/scripts" "$tree/plugin_api/include/hookhost"
touch "$tree/host/src/runtime/step_engine.cpp" "$tree/scripts/demo.sh"
echo '#define HH_ABI_MINOR 6' >"$tree/plugin_api/include/hookhost/version.h"
cat >"$tree/docs/architecture.md" <<'DOC'
# Architecture

## The plugin ABI in brief

The engine is `runtime/step_engine.cpp`; a hook's folder is `<run_dir>/hooks/NAME/`.
```
not/checked/in/a/code/block.cpp
```
DOC
cat >"$tree/host/src/README.md" <<'DOC'
# host/src

`runtime/step_engine.cpp`, `hh.steps/1`, `*.so`, `tests/abi/v1.MINOR/`, [arch](../../docs/architecture.md).
DOC
good_readme='# hookhost

`scripts/demo.sh`; **ABI 1.0 to 1.6 are frozen**; [in brief](docs/architecture.md#the-plugin-abi-in-brief).
See `host/src/runtime/step_engine.cpp` and [the site](https://example.org/x.md).'
echo "$good_readme" >"$tree/README.md"

out=$(bash "$check" "$tree" 2>&1)
status=$?
if [ $status -ne 0 ] || [[ $out != *"every path and anchor"* ]]; then
  echo "FAIL: the check refused a tree whose pointers are right (exit $status):"
  echo "$out"
  exit 1
fi

cat >"$tree/README.md" <<'DOC'
# hookhost

`scripts/demo.sh`; **ABI 1.0 to 1.5 are frozen**; [in brief](docs/architecture.md#the-plugin-abi-in-brief-abi-15-frozen).
See `host/src/runtime/live_hooks.cpp`, [deps](docs/dependencies.md), `gone.cpp`.
DOC
echo '`runtime/step_boundary.cpp`' >>"$tree/docs/architecture.md"
for i in $(seq 1 250); do echo "line $i" >>"$tree/README.md"; done

out=$(bash "$check" "$tree" 2>&1)
status=$?
fail=0
[ $status -eq 1 ] || { echo "FAIL: exit status $status, not 1"; fail=1; }
for expected in \
  'README.md:3: link to docs/architecture.md#the-plugin-abi-in-brief-abi-15-frozen: no heading' \
  'README.md:4: `host/src/runtime/live_hooks.cpp` names no file or folder' \
  'README.md:4: link to docs/dependencies.md: no file docs/dependencies.md' \
  'README.md:4: `gone.cpp` is the name of no file in the tree' \
  'docs/architecture.md:9: `runtime/step_boundary.cpp` names no file or folder' \
  'README.md:3: says ABI 1.0 to 1.5, but HH_ABI_MINOR is 6' \
  'README.md is 254 lines, over 250'; do
  [[ $out == *"$expected"* ]] || { echo "FAIL: not reported: $expected"; fail=1; }
done
[[ $out == *"not/checked"* || $out == *"hh.steps"* || $out == *"MINOR/"* || $out == *"<run_dir>"* ]] &&
  { echo "FAIL: reported a code block, a service id or a placeholder"; fail=1; }
if [ $fail -ne 0 ]; then
  echo "$out"
  exit 1
fi
echo "doc_paths_check reports every stale pointer"
