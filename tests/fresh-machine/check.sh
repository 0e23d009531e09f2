#!/usr/bin/env bash
# The fresh-machine check: does a clean clone build and pass its tests with nothing but the README's two
# commands on a bare Debian 12, with and without a CUDA toolkit, and does the .deb work on another bare
# Debian 12? Too slow for CI (about 15 minutes on 2 cores with a fast mirror): run it whenever set-up,
# presets or packaging change, and write its times in docs/benchmarks.md.
#
#   usage: tests/fresh-machine/check.sh [--toolkit with|without|both] [--no-deb] [--keep]
#                                       [--scratch DIR] [--pip-cache DIR]
#   --toolkit  with: this machine's CUDA toolkit bind-mounted read-only at /usr/local/cuda (the kind of
#              machine the project is developed on); without: no toolkit at all; both (default).
#   --no-deb   skip the package part.
#   --keep     keep the roots (for a look inside); by default each is deleted once checked.
#   --scratch  where the roots, caches and logs go (default /var/tmp/tewb-fresh-machine).
#   --pip-cache  pip's cache, shared by every root so torch is downloaded once (default SCRATCH/cache/pip).
#
# Needs root (debootstrap, chroot, mounts) and Debian's package mirror and PyPI; installs debootstrap on
# this machine if missing. It checks HEAD of this repository (a clean clone), not uncommitted changes.
#
# Parts, each timed and logged in SCRATCH/logs:
#   base       debootstrap a minimal Debian 12 (bookworm, minbase); every root below starts as a copy of it.
#   <case>     a root for each toolkit case, a clean clone copied in, and in a chroot with an empty
#              environment, as root: the README's first command exactly as written, with the window
#              replaced by `--demo quick-cpu --export DIR --quit` under QT_QPA_PLATFORM=offscreen; the
#              README's second command exactly as written; .ci/check-test-run.py (the whole suite ran).
#   deb        cpack -G DEB in the first case's build; the package installed with apt
#              (--no-install-recommends) into a new copy of the bare root without a toolkit; the
#              first-run message checked; LibTorch installed with the command it names; then
#              te-bench --version, te-workbench --version, te-bench info,
#              te-bench run --preset quick-cpu --no-store and te-workbench --demo quick-cpu from the package.
# Shared between roots (downloads only): debootstrap's, apt's and pip's caches.
set -uo pipefail

toolkit=both
with_deb=1
keep=0
scratch=/var/tmp/tewb-fresh-machine
pip_cache=""
value_of() {  # value_of FLAG ARGC VALUE: the flag's value, or exit 2 when it has none
  [ "$2" -ge 2 ] && [ -n "$3" ] || { echo "check: $1 needs a value (see --help)" >&2; exit 2; }
  printf '%s' "$3"
}
while [ $# -gt 0 ]; do
  case "$1" in
    --toolkit) toolkit=$(value_of "$1" $# "${2:-}") || exit 2; shift 2 ;;
    --no-deb) with_deb=0; shift ;;
    --keep) keep=1; shift ;;
    --scratch) scratch=$(value_of "$1" $# "${2:-}") || exit 2; shift 2 ;;
    --pip-cache) pip_cache=$(value_of "$1" $# "${2:-}") || exit 2; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$toolkit" in
  with) cases=(with-toolkit) ;;
  without) cases=(without-toolkit) ;;
  both) cases=(with-toolkit without-toolkit) ;;
  *) echo "check: --toolkit '$toolkit': allowed: with, without, both" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "check: needs root (debootstrap, chroot and mounts)" >&2; exit 2; }

repo=$(cd "$(dirname "$0")/../.." && pwd)
mirror=${TEWB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${TEWB_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
scratch=$(mkdir -p "$scratch" && cd "$scratch" && pwd)
pip_cache=${pip_cache:-$scratch/cache/pip}
logs=$scratch/logs
mkdir -p "$logs" "$pip_cache" "$scratch/cache/debootstrap" "$scratch/cache/apt" "$scratch/out"
rm -f "$logs"/*.log

results=()   # "part|seconds|PASS or FAIL|note"
failed=0

say() { printf 'check: %s\n' "$*"; }
record() {
  results+=("$1|$2|$3|${4:-}")
  [ "$3" = PASS ] || failed=1
  printf 'check: %-34s %-4s %6s s  %s\n' "$1" "$3" "$2" "${4:-}"
}

# --- roots, mounts and their safe removal -------------------------------------------------------
# Unmounting reads /proc/self/mountinfo, so nothing is left mounted when a root is deleted, whatever
# stopped the check; a root is deleted only when nothing is mounted under it.
mount_into() {  # mount_into ROOT TARGET_IN_ROOT MOUNT_ARGS...
  local root=$1 target=$2; shift 2
  mkdir -p "$root$target"
  mount "$@" "$root$target"
}
bind_file_into() {  # bind one device node (/dev is a private tmpfs in the root, never this machine's)
  local root=$1 node=$2
  touch "$root$node"
  mount --bind "$node" "$root$node"
}
unmount_under() {  # every mount point at or below a folder, deepest first
  local dir=$1 point
  for point in $(awk -v d="$dir" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
    umount "$point" 2>/dev/null || umount -l "$point"
  done
}
remove_root() {
  local root=$1
  [ -d "$root" ] || return 0
  unmount_under "$root"
  if awk -v d="$root" 'index($5, d "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    say "NOT deleting $root: something is still mounted under it"
    return 1
  fi
  rm -rf --one-file-system "$root"
}
cleanup() {
  for root in "$scratch"/root-*; do
    [ -d "$root" ] || continue
    if [ $keep -eq 1 ]; then unmount_under "$root"; else remove_root "$root"; fi
  done
  if [ -d "$scratch/base" ]; then remove_root "$scratch/base"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

make_root() {  # make_root NAME: sets root to a new copy of the bare base, with network settings, mounts, caches
  root=$scratch/root-$1
  remove_root "$root" || return 1
  cp -a "$scratch/base" "$root" || return 1
  # This machine's network settings: name resolution, and the trust store and pip settings through which
  # it reaches PyPI (a TLS-inspecting proxy's CA, where there is one). Machine settings, not set-up.
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  if [ -d /usr/local/share/ca-certificates ]; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  fi
  mkdir -p "$root/etc/ssl/certs"
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  [ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
  mount_into "$root" /proc -t proc proc || return 1
  mount_into "$root" /sys -t sysfs sysfs -o ro || return 1
  mount_into "$root" /dev -t tmpfs tmpfs -o mode=0755,nosuid || return 1
  local node
  for node in /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty; do
    bind_file_into "$root" "$node" || return 1
  done
  ln -s /proc/self/fd "$root/dev/fd"
  ln -s /proc/self/fd/0 "$root/dev/stdin"; ln -s /proc/self/fd/1 "$root/dev/stdout"; ln -s /proc/self/fd/2 "$root/dev/stderr"
  mount_into "$root" /dev/shm -t tmpfs tmpfs -o mode=1777,nosuid,nodev || return 1
  mount_into "$root" /dev/pts -t devpts devpts -o newinstance,ptmxmode=0666 && ln -sf pts/ptmx "$root/dev/ptmx"
  mount_into "$root" /root/.cache/pip --bind "$pip_cache" || return 1
  mount_into "$root" /var/cache/apt/archives --bind "$scratch/cache/apt" || return 1
}

in_root() {  # in_root ROOT LOG COMMAND: bash -c COMMAND in the root, clean environment, as root
  local root=$1 log=$2 command=$3
  chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ${EXTRA_ENV:-} \
    /bin/bash -c "$command" >> "$log" 2>&1
}

log_of() { echo "$logs/$(echo "$1" | tr -c 'A-Za-z0-9.\n-' '_').log"; }

run_part() {  # run_part NAME ROOT COMMAND: one timed part; on failure the log's tail is shown
  local name=$1 root=$2 command=$3 log start rc note
  log=$(log_of "$1")
  echo "\$ $command" >> "$log"
  start=$(date +%s)
  # xtrace stamps each command of an `a && b && c` chain as it starts: the README commands' steps are
  # timed without rewriting them.
  in_root "$root" "$log" "PS4='+[step \$(date +%s)] '; set -x; $command"
  rc=$?
  note=""
  case "$name" in *"README command"*) note=$(step_times "$log" "$(date +%s)") ;; esac
  if [ $rc -eq 0 ]; then
    record "$name" $(( $(date +%s) - start )) PASS "$note"
  else
    record "$name" $(( $(date +%s) - start )) FAIL "exit $rc, log $log"
    tail -30 "$log" | sed 's/^/    | /'
  fi
  return $rc
}

step_times() {  # step_times LOG END: "setup-deps.sh 91 s, cmake 20 s, ..." from the top-level xtrace stamps
  awk -v end="$2" '
    /^\+\[step [0-9]+\] / {
      t = substr($2, 1, length($2) - 1); cmd = $3
      if (cmd == "bash" || cmd == "cmake" || cmd == "ctest") cmd = cmd " " $4
      sub(/.*\//, "", cmd)
      if (n > 0 && name !~ /^cd/) out = out sprintf("%s%s %d s", (out == "" ? "" : ", "), name, t - last)
      name = cmd; last = t; n++
    }
    END { if (n > 0 && name !~ /^cd/) out = out sprintf("%s%s %d s", (out == "" ? "" : ", "), name, end - last); print out }
  ' "$1"
}

# The README's commands, exactly as written there: the fenced lines that start with the set-up script.
readme_command() {  # readme_command N: the Nth of the two
  grep -E '^bash packaging/setup-deps.sh && ' "$repo/README.md" | sed -n "${1}p"
}

# --- start ---------------------------------------------------------------------------------------
say "repository $repo, HEAD $(git -C "$repo" rev-parse --short=12 HEAD)"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  say "note: uncommitted changes are not checked (a clean clone of HEAD is)"
fi
launch_command=$(readme_command 1)
test_command=$(readme_command 2)
window=build/default/app/te-workbench
if [ -z "$launch_command" ] || [ -z "$test_command" ] || [ "${launch_command% && $window}" = "$launch_command" ]; then
  say "README.md does not carry the two commands (set-up ... && $window; set-up ... && ctest --preset default)"
  exit 1
fi
say "README command 1: $launch_command"
say "README command 2: $test_command"
total_start=$(date +%s)

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap on this machine"
  apt-get install -y -qq --no-install-recommends debootstrap > "$logs/host-debootstrap.log" 2>&1 ||
    { say "could not install debootstrap (log $logs/host-debootstrap.log)"; exit 1; }
fi

start=$(date +%s)
remove_root "$scratch/base" || exit 1
if debootstrap --variant=minbase --cache-dir="$scratch/cache/debootstrap" bookworm "$scratch/base" "$mirror" \
     > "$logs/base.log" 2>&1; then
  # A Debian 12 machine also has the updates and security suites.
  cat > "$scratch/base/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security_mirror bookworm-security main
EOF
  base_size=$(du -sh "$scratch/base" | cut -f1)
  record base $(( $(date +%s) - start )) PASS "debootstrap bookworm minbase, $base_size"
else
  record base $(( $(date +%s) - start )) FAIL "log $logs/base.log"
  tail -20 "$logs/base.log"
  exit 1
fi

rm -rf "$scratch/clone"
git clone -q --no-hardlinks "$repo" "$scratch/clone" || { say "git clone failed"; exit 1; }

deb_file=""
for case_name in "${cases[@]}"; do
  make_root "$case_name" || { record "$case_name: root" 0 FAIL "could not make the root"; continue; }
  if [ "$case_name" = with-toolkit ]; then
    toolkit_dir=$(readlink -f /usr/local/cuda)
    if [ ! -x "$toolkit_dir/bin/nvcc" ]; then
      record "$case_name: toolkit" 0 FAIL "this machine has no CUDA toolkit at /usr/local/cuda"
      remove_root "$root"; continue
    fi
    mount_into "$root" "$toolkit_dir" --bind "$toolkit_dir" && mount -o remount,bind,ro "$root$toolkit_dir"
    ln -sfn "$toolkit_dir" "$root/usr/local/cuda"
  fi
  cp -a "$scratch/clone" "$root/root/te-workbench"

  # Command 1, with the window replaced by the unattended demo.
  demo_command="${launch_command% && $window} && $window --demo quick-cpu --export /root/demo --quit"
  EXTRA_ENV=QT_QPA_PLATFORM=offscreen run_part "$case_name: README command 1" "$root" \
    "cd /root/te-workbench && $demo_command" &&
    run_part "$case_name: demo files" "$root" \
      "cd /root/demo && ls && test -s window.png && test -s dashboard.png && test -s steps.csv && test -s runs.json"
  # Command 2, exactly as written; then: did the whole suite run?
  if run_part "$case_name: README command 2" "$root" "cd /root/te-workbench && $test_command"; then
    run_part "$case_name: whole suite ran" "$root" "cd /root/te-workbench && python3 .ci/check-test-run.py build/default"
    grep '^check: ' "$(log_of "$case_name: whole suite ran")" | sed 's/^/    /'
  fi

  if [ $with_deb -eq 1 ] && [ -z "$deb_file" ] && [ -f "$root/root/te-workbench/build/default/app/te-workbench" ]; then
    if run_part "$case_name: cpack -G DEB" "$root" "cd /root/te-workbench/build/default && cpack -G DEB"; then
      built=$(ls "$root"/root/te-workbench/build/default/te-workbench_*.deb 2>/dev/null | head -1)
      if [ -n "$built" ]; then
        cp "$built" "$scratch/out/" && deb_file=$scratch/out/$(basename "$built")
        say "package: $(basename "$built"), $(du -h "$deb_file" | cut -f1)"
      fi
    fi
  fi
  # Disk use, measured with nothing mounted (bind mounts would count this machine's toolkit and caches).
  unmount_under "$root"
  say "$case_name: disk: root $(du -sh "$root" | cut -f1) (bare base $base_size): venv" \
      "$(du -sh "$root/root/.local/share/te-workbench/venv" 2>/dev/null | cut -f1), build" \
      "$(du -sh "$root/root/te-workbench/build" 2>/dev/null | cut -f1), ccache $(du -sh "$root/root/.cache/ccache" 2>/dev/null | cut -f1)"
  [ $keep -eq 1 ] || remove_root "$root"
done

if [ $with_deb -eq 1 ]; then
  if [ -z "$deb_file" ]; then
    record "deb: package" 0 FAIL "no .deb was made (see the parts above)"
  elif make_root deb; then
    cp "$deb_file" "$root/tmp/"
    deb_in_root=/tmp/$(basename "$deb_file")
    run_part "deb: apt install" "$root" \
      "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $deb_in_root" &&
    run_part "deb: first-run message" "$root" \
      "te-bench info; rc=\$?; test \$rc -eq 1 || { echo \"exit \$rc, expected 1\"; exit 1; }; te-bench info 2>&1 | grep -q 'Install it once with:  te-workbench-setup'" &&
    run_part "deb: te-workbench-setup" "$root" "te-workbench-setup" &&
    run_part "deb: --version" "$root" "te-bench --version && te-workbench --version" &&
    run_part "deb: te-bench info" "$root" "te-bench info" &&
    run_part "deb: te-bench run quick-cpu" "$root" "te-bench run --preset quick-cpu --no-store" &&
    EXTRA_ENV=QT_QPA_PLATFORM=offscreen run_part "deb: te-workbench --demo" "$root" \
      "te-workbench --demo quick-cpu --export /tmp/demo --quit && test -s /tmp/demo/window.png" &&
    run_part "deb: desktop entry and icon" "$root" \
      "test -f /usr/share/icons/hicolor/scalable/apps/te-workbench.svg &&
       DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends desktop-file-utils >/dev/null &&
       desktop-file-validate /usr/share/applications/te-workbench.desktop"
    grep -E '^(te-bench|te-workbench) [0-9]' "$(log_of "deb: --version")" 2>/dev/null | sed 's/^/    /'
    if [ $keep -eq 0 ]; then remove_root "$root"; else unmount_under "$root"; fi
  else
    record "deb: root" 0 FAIL "could not make the root"
  fi
fi

echo
echo "fresh-machine check, $(date -u '+%Y-%m-%d %H:%M UTC'), HEAD $(git -C "$repo" rev-parse --short=12 HEAD), $(nproc) cores"
printf '%-34s %-5s %8s  %s\n' part result seconds note
for row in "${results[@]}"; do
  IFS='|' read -r part secs verdict note <<<"$row"
  printf '%-34s %-5s %8s  %s\n' "$part" "$verdict" "$secs" "$note"
done
echo "total: $(( $(date +%s) - total_start )) s; logs in $logs"
if [ $failed -eq 0 ]; then echo "fresh-machine check: PASS"; else echo "fresh-machine check: FAIL"; fi
exit $failed
