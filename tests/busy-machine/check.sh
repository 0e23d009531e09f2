#!/usr/bin/env bash
# The busy-machine check: does the default stage of CI (the README's test command) pass while every core
# is kept busy by other work? CI machines are shared; a test that passes only on an idle machine fails
# there at random. This script starts one spinning process per core (or --spinners N), runs the README's
# test command in this checkout and then the whole suite again (three passes in all, or --passes N), stops
# the spinners whatever happens, checks after each pass that the whole suite ran (.ci/check-test-run.py)
# and prints the figures the suite measures but does not assert (the GUI's longest event-loop stall, how
# soon a killed rank ends its job). docs/reliability.md records them.
#
#   usage: tests/busy-machine/check.sh [--spinners N] [--passes N]
#   --spinners  how many spinning processes (default: the number of cores, `nproc`).
#   --passes    how many times the whole suite runs (default 3; the first with the README's set-up and build).
#
# Exit status: 0 when every pass passed and ran the whole suite, 1 otherwise, 2 on a bad argument.
set -uo pipefail
cd "$(dirname "$0")/../.."

spinners=$(nproc)
passes=3
while [ $# -gt 0 ]; do
  case "$1" in
    --passes)
      [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 100 ] ||
        { echo "check: --passes '${2:-}': allowed: a whole number from 1 to 100" >&2; exit 2; }
      passes=$2; shift 2 ;;
    --spinners)
      [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 256 ] ||
        { echo "check: --spinners '${2:-}': allowed: a whole number from 1 to 256" >&2; exit 2; }
      spinners=$2; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# The command CI's default stage runs (.ci/run holds it and checks that the README carries it verbatim).
test_command=$(sed -n "s/^test_command='\(.*\)'$/\1/p" .ci/run)
[ -n "$test_command" ] || { echo "check: .ci/run holds no test_command" >&2; exit 1; }

pids=()
stop_spinners() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  pids=()
}
trap stop_spinners EXIT
trap 'exit 130' INT TERM HUP
for _ in $(seq "$spinners"); do
  bash -c 'while :; do :; done' &
  pids+=($!)
done
echo "check: [$(date -u +%H:%M:%S)] ${spinners} spinning processes started (${pids[*]}); $(nproc) cores"

# Each pass: the figures its log holds (kept before .ci/check-test-run.py, whose `ctest --show-only` starts
# a new LastTest.log), then the check that it ran the whole suite.
figures() {
  grep -hoE 'longest event-loop stall during the run: .*|cancelled after [0-9]+ ms|closed after [0-9]+ ms|rank 0 gave up [0-9]+ ms after joining|[a-z0-9 ,-]+: the launcher ended the job [0-9]+ ms after the death and exited after [0-9]+ ms' \
    build/default/Testing/Temporary/LastTest.log 2>/dev/null | sed 's/^ */    /'
}
status=0
for pass in $(seq "$passes"); do
  rm -f build/default/ctest-results.xml
  started=$(date +%s)
  if [ "$pass" -eq 1 ]; then
    bash -c "$test_command"  # set-up, build and the first pass
  else
    ctest --preset default
  fi
  result=$?
  elapsed=$(( $(date +%s) - started ))
  echo "check: [$(date -u +%H:%M:%S)] pass ${pass} of ${passes} took ${elapsed} s and exited ${result}; figures measured under load (not asserted):"
  figures
  if [ "$result" -eq 0 ]; then
    python3 .ci/check-test-run.py build/default || result=1
  fi
  [ "$result" -eq 0 ] || status=1
done
stop_spinners
echo "check: [$(date -u +%H:%M:%S)] spinners stopped; $( [ "$status" -eq 0 ] && echo "every pass passed" || echo "a pass FAILED")"
exit "$status"
