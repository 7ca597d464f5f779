#!/usr/bin/env bash
# What a third-party author gets: installs a built tree into a temporary prefix, moves the prefix
# (an installation must be relocatable), and from there alone builds and runs what the installed
# docs describe -- the C example with CMake and with plain make + pkg-config, the embedding example,
# `hookhost new` projects in C++ and C (built, tested, run in `hookhost run`), and `hookhost check`
# on every built-in plugin.
#   scripts/install-check.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(cd "${1:-build}" && pwd)
source_dir=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 022
# grep reads its input to the end here (no -q): under pipefail, -q's early exit would fail the
# pipeline with SIGPIPE whenever the program writes on after the line that matched.

step() { echo "-- $*"; }

step "cmake --install into a temporary prefix, then moved"
cmake --install "$build_dir" --prefix "$work/staging" >/dev/null
mv "$work/staging" "$work/prefix"
prefix=$work/prefix
export PATH="$prefix/bin:$PATH" PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
docs=$prefix/share/doc/hookhost

step "no path of the checkout or the build in any installed file"
if grep -rlF -e "$source_dir" -e "$build_dir" "$prefix"; then
  echo "install-check: the files above name a path of this machine" >&2
  exit 1
fi

step "the moved installation finds its plugins and runs a job"
hookhost plugins list | grep "$prefix/lib/hookhost/plugins/stop_at_step.so" >/dev/null
(cd "$work" && hookhost run --run-dir moved --set hook.stop.plugin=stop_at_step \
  --set hook.stop.last_step=20 --log-level warn)

step "examples/c_hook with find_package(hookhost) (default generator)"
cmake -S "$docs/examples/c_hook" -B "$work/c_hook" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/c_hook" >/dev/null
test -f "$work/c_hook/lr_warmup.so"

step "examples/c_hook with plain cc and pkg-config hookhost-plugin"
cc -std=c99 -pedantic -Wall -Wextra -Werror -O2 $(pkg-config --cflags hookhost-plugin) \
  -o "$work/lr_warmup_pc.so" "$docs/examples/c_hook/lr_warmup.c" $(pkg-config --libs hookhost-plugin)
hookhost plugins describe lr_warmup --plugin-dir "$work/c_hook" | grep target_lr >/dev/null

step "examples/embed with find_package(hookhost COMPONENTS host) (Ninja)"
cmake -S "$docs/examples/embed" -B "$work/embed" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/embed" >/dev/null
"$work/embed/embed_example" 2>&1 | grep "stopped at global step 25" >/dev/null

step "hookhost new (C++): CMake + find_package, its GoogleTest test, a job, a check"
(cd "$work" && hookhost new guard_cpp --lang cpp >/dev/null)
cmake -S "$work/guard_cpp" -B "$work/guard_cpp/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/guard_cpp/build" >/dev/null
# Without the installed bin/ on PATH: the sandboxed test finds the package's runner by itself.
env PATH=/usr/bin:/bin ctest --test-dir "$work/guard_cpp/build" --no-tests=error \
  --output-on-failure >/dev/null
(cd "$work" && hookhost run --config guard_cpp/guard_cpp.ini --log-level warn) |
  grep "job stopped (hook 'guard_cpp': loss 7.79022 fell below stop_below 10)" >/dev/null
hookhost check "$work/guard_cpp/build/guard_cpp.so" --set stop_below=10 >/dev/null

step "hookhost new (C): make + pkg-config, its test, a job, a check"
(cd "$work" && hookhost new guard_c --lang c >/dev/null)
make -s -C "$work/guard_c" check >/dev/null
(cd "$work" && hookhost run --config guard_c/guard_c.ini --log-level warn) |
  grep "job stopped (hook 'guard_c': loss 7.79022 fell below stop_below 10)" >/dev/null
hookhost check "$work/guard_c/guard_c.so" --set stop_below=10 >/dev/null

step "hookhost check on every built-in plugin"
for plugin in "$prefix"/lib/hookhost/plugins/*.so; do
  id=$(basename "$plugin" .so)
  case $id in  # required parameters, and one of each exclusive pair create() asks for
    global_step_waiter) set=(--set wait_until_step=0) ;;
    logging_tensor) set=(--set tensors=loss --set every_n_iter=1) ;;
    loss_threshold) set=(--set threshold=0.001) ;;
    stop_at_step) set=(--set num_steps=15) ;;
    summary_saver) set=(--set save_steps=5) ;;
    time_limit) set=(--set max_secs=1000) ;;
    python_hook) set=(--set module=hookhost --set class=SessionRunHook) ;;
    *) set=() ;;
  esac
  if ! out=$(hookhost check "$plugin" "${set[@]}" 2>&1); then
    echo "$out" >&2
    echo "install-check: hookhost check $id failed" >&2
    exit 1
  fi
  echo "   $id: ${out##*$'\n'}"
done

# Where docs/pytorch.md says the package goes: HOOKHOST_PYTHON_INSTALL_DIR, by default
# lib/python3.X/dist-packages for Debian's /usr/bin/python3.
python_dir=""
if ls "$build_dir"/python/hookhost/_host.*.so >/dev/null 2>&1; then
  python_dir=$prefix/$(sed -n 's/^HOOKHOST_PYTHON_INSTALL_DIR:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
  if [ ! -f "$python_dir/hookhost/__init__.py" ] || ! ls "$python_dir"/hookhost/_host.*.so >/dev/null 2>&1; then
    echo "install-check: the Python package is not installed in $python_dir" >&2
    exit 1
  fi
fi
if [ -n "$python_dir" ]; then
  step "the Python package: hookhost.MonitoredSession from the moved prefix, a sandboxed built-in"
  # Neither PATH nor HOOKHOST_RUNNER names the installation: the package finds its plugins and
  # hookhost-runner by its own place in the prefix.
  (cd "$work" && env -u HOOKHOST_RUNNER PATH=/usr/bin:/bin PYTHONPATH="$python_dir" \
    PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 - <<'PY'
import hookhost
with hookhost.MonitoredSession(run_dir="py-run", set=[
        "run.log_level=warn", "hook.stop.plugin=stop_at_step", "hook.stop.last_step=4",
        "hook.stop.isolation=process"]) as session:
    while not session.should_stop():
        session.run(lambda feeds: {"loss": 1.0})
assert session.result["outcome"] == "stopped" and session.global_step == 4, session.result
print("   MonitoredSession: %s at global step %d" % (session.result["outcome"], session.global_step))
PY
  )
fi

echo "install-check: the installed package works"
