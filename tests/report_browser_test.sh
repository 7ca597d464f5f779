#!/usr/bin/env bash
# The run report as a person sees it: a real `hookhost run`, then its report.html rendered by
# Chromium (headless) from disk. Checks that the screenshot is not blank, that the page's DOM
# after rendering has the charts (the loss curve draws the number of points the page states) and
# that the page logged no console error.
#   report_browser_test.sh HOOKHOST CHROMIUM SCREENSHOT
set -euo pipefail
hookhost=$(realpath "$1") chromium=$2 screenshot=$(realpath -m "$3")
work=$(mktemp -d "${TMPDIR:-/tmp}/hookhost-report-browser-XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "report_browser_test: FAIL: $*" >&2; exit 1; }

cat >"$work/job.ini" <<'INI'
[run]
run_dir = run
[workload]
name = linreg
epochs = 100
[hook.stop]
plugin = stop_at_step
last_step = 300
[hook.summaries]
plugin = summary_saver
save_steps = 5
tensors = loss, learning_rate
[hook.checkpoints]
plugin = checkpoint_saver
save_steps = 100
INI
(cd "$work" && "$hookhost" run --config job.ini >"$work/run.out" 2>"$work/run.err") ||
  { cat "$work/run.err" >&2; fail "hookhost run failed"; }
report=$work/run/report.html
[ -f "$report" ] || fail "no $report after hookhost run"

# Chromium's own noise (dbus, GPU, sandbox) goes to stderr too; only the page's console counts.
browse() {
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$work/profile" --enable-logging=stderr --v=0 "$@" "file://$report"
}
browse --screenshot="$screenshot" --window-size=1280,2400 >"$work/shot.out" 2>"$work/shot.err" ||
  { cat "$work/shot.err" >&2; fail "chromium could not take the screenshot"; }
browse --dump-dom >"$work/dom.html" 2>"$work/dom.err" ||
  { cat "$work/dom.err" >&2; fail "chromium could not dump the DOM"; }

[ -f "$screenshot" ] || fail "no screenshot at $screenshot"
size=$(stat -c %s "$screenshot")
# A blank 1280x2400 page compresses to a few kilobytes; charts and tables do not.
[ "$size" -gt 50000 ] || fail "the screenshot $screenshot is $size bytes: the page looks blank"

if grep -hE 'CONSOLE|Uncaught' "$work/shot.err" "$work/dom.err"; then
  fail "the page logged console errors (above)"
fi

dom=$work/dom.html
grep -q '<h1>hookhost run report</h1>' "$dom" || fail "the rendered DOM has no report heading"
grep -q '<h3>loss</h3>' "$dom" || fail "the rendered DOM has no loss chart"
# The loss curve is the first chart: the points its path draws and the number its note states.
drawn=$(grep -oE '<path class="curve" data-points="[0-9]+"' "$dom" | head -1 | grep -oE '[0-9]+')
[ -n "$drawn" ] || fail "the rendered DOM has no curve path with data-points"
[ "$drawn" -gt 1 ] || fail "the loss curve draws $drawn points"
stated=$(grep -A1 '<h3>loss</h3>' "$dom" | grep -oE '[0-9,]+ points, all shown|shown as [0-9,]+:' |
  grep -oE '[0-9][0-9,]*' | head -1 | tr -d ,)
[ "$drawn" = "$stated" ] || fail "the loss curve draws $drawn points but the page states '$stated'"
charts=$(grep -o '<svg ' "$dom" | wc -l)
[ "$charts" -ge 4 ] || fail "the rendered DOM has $charts charts, expected the curves and the cost"
grep -q '<td>checkpoint</td>' "$dom" || fail "the timeline shows no checkpoint"
grep -q '<td>stop</td>' "$dom" || fail "the timeline shows no stop"

echo "report_browser_test: OK: the loss curve draws $drawn points as stated, $charts charts," \
  "no console error; screenshot ($size bytes): $screenshot"
