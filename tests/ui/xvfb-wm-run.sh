#!/usr/bin/env bash
# Runs one command (a window suite) in a real X server with a window manager, as a user's screen is:
# Xvfb at WIDTHxHEIGHT and icewm, whose taskbar makes the available area smaller than the screen.
#
#   usage: xvfb-wm-run.sh WIDTHxHEIGHT LIMIT_SECONDS COMMAND [ARG...]
#
# The command runs with DISPLAY set and QT_QPA_PLATFORM=xcb, for at most LIMIT_SECONDS (then it is killed
# and this script exits 124). Xvfb and the window manager are stopped whatever happens (the command's
# end, a failure, a timeout, SIGINT or SIGTERM), so no process, socket or /tmp/.X<n>-lock is left behind;
# keep LIMIT_SECONDS under CTest's TIMEOUT, as CTest kills with SIGKILL, which no trap sees.
# Xvfb picks a free display itself (-displayfd), so harnesses running side by side never race for one.
# Exit status: the command's; 2 when the arguments are wrong or Xvfb, the window manager or xprop is
# missing or does not come up, with the reason on stderr.
set -uo pipefail
# Every background job gets its own process group, so that stopping it stops whatever it started.
set -m

say() { printf 'xvfb-wm-run: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }

[ $# -ge 3 ] || die "usage: xvfb-wm-run.sh WIDTHxHEIGHT LIMIT_SECONDS COMMAND [ARG...]"
size=$1
limit=$2
shift 2
[[ $size =~ ^([0-9]{3,4})x([0-9]{3,4})$ ]] || die "screen size '$size' is not WIDTHxHEIGHT (e.g. 1280x800)"
width=${BASH_REMATCH[1]}
height=${BASH_REMATCH[2]}
[[ $limit =~ ^[1-9][0-9]*$ ]] || die "time limit '$limit' is not a whole number of seconds"

for tool in Xvfb:xvfb icewm:icewm xprop:x11-utils timeout:coreutils; do
  command -v "${tool%%:*}" >/dev/null 2>&1 ||
    die "${tool%%:*} is not installed (Debian package ${tool##*:}; bash packaging/setup-deps.sh installs it)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/xvfb-wm-run.XXXXXX") || die "cannot create a temporary folder"
xvfb_pid=""
wm_pid=""
suite_pid=""
display=""

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# Stops a process group: TERM, up to 5 s to go, then KILL.
stop_group() {
  local pid=$1
  alive "$pid" || return 0
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 50); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    say "$2 did not stop on SIGTERM; killing it"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
}

cleanup() {
  stop_group "$suite_pid" "the command"
  stop_group "$wm_pid" "the window manager"
  stop_group "$xvfb_pid" "Xvfb"
  # Xvfb removes its socket (and lock, where it made one) when it exits on SIGTERM; after a KILL they are
  # removed here: a lock only when it names our Xvfb, a socket only when no server answers on it.
  if [ -n "$display" ] && [ -n "$xvfb_pid" ]; then
    local lock="/tmp/.X$display-lock" socket="/tmp/.X11-unix/X$display"
    if [ -f "$lock" ] && [ "$(tr -d ' \n' < "$lock")" = "$xvfb_pid" ]; then
      rm -f "$lock" "$socket"
    elif [ ! -f "$lock" ] && [ -S "$socket" ] && ! xprop -display ":$display" -root >/dev/null 2>&1; then
      rm -f "$socket"
    fi
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

log_tail() { [ -s "$1" ] && sed 's/^/  | /' "$1" | tail -n 15 >&2; }

# --- the X server -----------------------------------------------------------------------------------------
Xvfb -displayfd 3 -screen 0 "${width}x${height}x24" -nolisten tcp -noreset \
  3>"$work/display" >"$work/xvfb.log" 2>&1 &
xvfb_pid=$!
# Xvfb writes the display number and a newline once it accepts connections (read fails until the newline).
for _ in $(seq 200); do
  read -r display < "$work/display" 2>/dev/null && break
  display=""
  alive "$xvfb_pid" || break
  sleep 0.05
done
if ! [[ $display =~ ^[0-9]+$ ]] || ! alive "$xvfb_pid"; then
  say "error: Xvfb did not start a ${width}x${height} display within 10 s; its output:"
  log_tail "$work/xvfb.log"
  exit 2
fi
export DISPLAY=":$display"

# --- the window manager -------------------------------------------------------------------------------------
# Its own empty configuration folder: the user's ~/.icewm must not change the taskbar, nor be written.
mkdir -p "$work/icewm"
ICEWM_PRIVCFG="$work/icewm" icewm >"$work/wm.log" 2>&1 &
wm_pid=$!

# Up when it has announced itself (_NET_SUPPORTING_WM_CHECK) and published the work area, which
# QScreen::availableGeometry() reads.
wm_up() {
  xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id' &&
    xprop -root _NET_WORKAREA 2>/dev/null | grep -q '= '
}
for _ in $(seq 150); do
  wm_up && break
  alive "$wm_pid" || break
  sleep 0.1
done
if ! alive "$wm_pid" || ! wm_up; then
  say "error: the window manager (icewm) did not come up on $DISPLAY within 15 s; its output:"
  log_tail "$work/wm.log"
  exit 2
fi
# The taskbar's strut reaches the work area a moment after the check window: wait for it (briefly).
for _ in $(seq 30); do
  area=$(xprop -root _NET_WORKAREA | sed -n 's/.*= \([0-9]*\), \([0-9]*\), \([0-9]*\), \([0-9]*\).*/\1,\2,\3,\4/p')
  [ "${area##*,}" != "$height" ] && break
  sleep 0.1
done
say "display $DISPLAY ${width}x${height}, window manager icewm, work area (x,y,w,h) $area"

# --- the command ------------------------------------------------------------------------------------------------
unset WAYLAND_DISPLAY
# No session bus: without an address libdbus autolaunches one (dbus-launch, where installed, leaves a daemon
# behind), and a user's own bus would bring their desktop's portal and theme into the suite.
export DBUS_SESSION_BUS_ADDRESS=disabled:
# Under the asan preset: Debian 12's libxkbcommon-x11, which the xcb platform loads, strndup()s key names that
# have no NUL inside their buffer; strict_string_checks reports that as an overflow although strndup reads at
# most n bytes. Later flags override earlier ones, so only this check is relaxed.
if [ -n "${ASAN_OPTIONS:-}" ]; then
  export ASAN_OPTIONS="$ASAN_OPTIONS:strict_string_checks=0"
fi
QT_QPA_PLATFORM=xcb timeout -k 10 "$limit" "$@" &
suite_pid=$!
wait "$suite_pid"
status=$?
suite_pid=""
[ "$status" -eq 124 ] && say "the command ran past $limit s and was stopped"
exit "$status"
