#!/usr/bin/env bash
# Checks tests/ui/xvfb-wm-run.sh itself: the command sees the screen it asked for, with the window manager's
# work area and the xcb platform, and gets its exit status back; whether the command ends, runs past its limit
# or the harness is stopped with SIGTERM, the X server and the window manager are gone afterwards, with their
# socket; bad arguments and a missing window manager are exit 2 with the reason.
#   usage: check-xvfb-wm-run.sh [SCRATCH_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
harness="$here/xvfb-wm-run.sh"
if [ $# -ge 1 ]; then
  scratch=$1
  mkdir -p "$scratch"
else
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
fi
failures=0

fail() { printf 'check-xvfb-wm-run: FAIL: %s\n' "$*" >&2; failures=$((failures + 1)); }
pass() { printf 'check-xvfb-wm-run: ok: %s\n' "$*"; }

# What the command under the harness records: its display, the harness's X server and window manager (the
# harness is the parent of `timeout`, the command's parent), the work area and the platform.
probe='dir=$0
read -r _ _ _ harness _ < "/proc/$PPID/stat"
children() {
  for stat in /proc/[0-9]*/stat; do
    read -r pid comm _ parent _ < "$stat" 2>/dev/null || continue
    [ "$parent" = "$harness" ] && [ "$comm" = "($1)" ] && echo "$pid"
  done
}
children Xvfb > "$dir/xvfb"
children icewm > "$dir/wm"
xprop -root _NET_WORKAREA | sed "s/.* = //" > "$dir/workarea"
echo "${DISPLAY#:}" > "$dir/display"
echo "$QT_QPA_PLATFORM" > "$dir/platform"
exec "$@"'

# Gone: the harness's Xvfb and icewm, and the display's socket and lock file unless a live X server (another
# harness's, beside this one) has taken the display since.
check_gone() {
  local what=$1 dir=$2 d pid program left=0
  d=$(cat "$dir/display" 2>/dev/null) || { fail "$what: the command did not run"; return; }
  for program in xvfb wm; do
    pid=$(cat "$dir/$program")
    [ -n "$pid" ] || { fail "$what: no $program process was found under the harness"; left=1; continue; }
    if [ -d "/proc/$pid" ] && grep -qx 'Xvfb\|icewm' "/proc/$pid/comm" 2>/dev/null; then
      fail "$what: $(cat "/proc/$pid/comm") (pid $pid) is still running"
      left=1
    fi
  done
  if [ -e "/tmp/.X11-unix/X$d" ] || [ -e "/tmp/.X$d-lock" ]; then
    if ! xprop -display ":$d" -root >/dev/null 2>&1; then
      fail "$what: the socket or lock file of display :$d was left behind"
      left=1
    fi
  fi
  [ "$left" = 0 ] && pass "$what: Xvfb, icewm and display :$d are gone"
}

run_case() {
  local name=$1 size=$2 limit=$3
  shift 3
  local dir="$scratch/$name"
  rm -rf "$dir" && mkdir -p "$dir"
  bash "$harness" "$size" "$limit" sh -c "$probe" "$dir" "$@" 2> "$dir/stderr"
  echo $? > "$dir/status"
}

# 1. The command's screen and exit status.
run_case ends 1024x700 60 sh -c 'exit 7'
[ "$(cat "$scratch/ends/status")" = 7 ] || fail "the command's exit status 7 came back as $(cat "$scratch/ends/status")"
[ "$(cat "$scratch/ends/platform" 2>/dev/null)" = xcb ] || fail "QT_QPA_PLATFORM was not xcb"
IFS=', ' read -r x y w h _ < "$scratch/ends/workarea"
if [ "${w:-0}" -ne 1024 ] || [ "${h:-0}" -ge 700 ] || [ "${h:-0}" -lt 600 ]; then
  fail "the work area of a 1024x700 screen is '$x,$y,$w,$h': the window manager reserved no taskbar"
else
  pass "1024x700 screen, work area $x,$y ${w}x$h, exit status 7 returned"
fi
check_gone "after the command ended" "$scratch/ends"

# 2. Past its limit: stopped, exit 124.
run_case limit 1280x800 2 sleep 60
[ "$(cat "$scratch/limit/status")" = 124 ] || fail "a command past its limit gave $(cat "$scratch/limit/status"), not 124"
grep -q "ran past 2 s" "$scratch/limit/stderr" || fail "the harness did not say the command ran past its limit"
check_gone "after the limit" "$scratch/limit"

# 3. The harness stopped with SIGTERM (CTest's --stop-time, a user's kill): exit 143, X stopped.
dir="$scratch/term"
rm -rf "$dir" && mkdir -p "$dir"
bash "$harness" 1280x800 60 sh -c "$probe" "$dir" sleep 60 2> "$dir/stderr" &
harness_pid=$!
for _ in $(seq 100); do [ -s "$dir/platform" ] && break; sleep 0.1; done
kill -TERM "$harness_pid"
wait "$harness_pid"
status=$?
[ "$status" = 143 ] || fail "the harness stopped with SIGTERM exited $status, not 143"
check_gone "after SIGTERM" "$dir"

# 4. Bad arguments and a missing window manager: exit 2, saying why.
bash "$harness" 1280 10 true 2> "$scratch/bad-size"
[ $? = 2 ] && grep -q "is not WIDTHxHEIGHT" "$scratch/bad-size" && pass "a bad size is exit 2 with the reason" ||
  fail "a bad size: $(cat "$scratch/bad-size")"
mkdir -p "$scratch/no-wm-bin"
for tool in bash Xvfb xprop timeout mktemp tr grep sed seq sleep rm mkdir; do
  ln -sf "$(command -v "$tool")" "$scratch/no-wm-bin/$tool"
done
PATH="$scratch/no-wm-bin" bash "$harness" 1280x800 10 true 2> "$scratch/no-wm"
[ $? = 2 ] && grep -q "icewm is not installed (Debian package icewm" "$scratch/no-wm" &&
  pass "no window manager is exit 2 naming the package" || fail "no window manager: $(cat "$scratch/no-wm")"

if [ "$failures" -gt 0 ]; then
  printf 'check-xvfb-wm-run: %d check(s) failed\n' "$failures" >&2
  exit 1
fi
echo "check-xvfb-wm-run: PASS"
