#!/usr/bin/env bash
# CI's time, cold or warm, on this machine: `bash .ci/run` in a clean clone of HEAD, as CI runs it, with an empty
# compiler cache of its own (cold; the default) or with that cache as the previous run of this script left it
# (--warm: what CI finds after a run on the same machine). The virtual environment with
# LibTorch is reused when present (packaging/setup-deps.sh installs it otherwise, and the table's set-up row says
# how long that took). Prints .ci/run's stage table and keeps it; docs/reliability.md ("CI's time") records the
# last three cold and warm tables. About 35 minutes cold (2026-12-05, f50c032) and 19 warm after a change of
# 22 sources (a655ac8) on 2 cores; the budget is 45 and 20.
#
#   usage: tests/fresh-machine/cold-ci.sh [--warm] [--scratch DIR] [--table FILE]
#   --warm     keep SCRATCH's compiler cache from the previous run instead of emptying it
#   --scratch  where the clone and the empty cache go (default /var/tmp/tewb-cold-ci; emptied first)
#   --table    where the stage table is written (default SCRATCH/stage-table.txt)
# Exit status: .ci/run's.
set -uo pipefail

warm=0
scratch=/var/tmp/tewb-cold-ci
table=""
value_of() {  # value_of FLAG ARGC VALUE: the flag's value, or exit 2 when it has none
  [ "$2" -ge 2 ] && [ -n "$3" ] || { echo "cold-ci: $1 needs a value (see --help)" >&2; exit 2; }
  printf '%s' "$3"
}
while [ $# -gt 0 ]; do
  case "$1" in
    --warm) warm=1; shift ;;
    --scratch) scratch=$(value_of "$1" $# "${2:-}") || exit 2; shift 2 ;;
    --table) table=$(value_of "$1" $# "${2:-}") || exit 2; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cold-ci: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$scratch" in
  /|"") echo "cold-ci: --scratch '$scratch': give a folder of its own" >&2; exit 2 ;;
esac

repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$scratch" || { echo "cold-ci: cannot create $scratch" >&2; exit 2; }
scratch=$(cd "$scratch" && pwd)
table=${table:-$scratch/stage-table.txt}
rm -rf "$scratch/clone"
[ $warm = 1 ] || rm -rf "$scratch/ccache"
git clone --quiet --no-hardlinks "$repo" "$scratch/clone" || { echo "cold-ci: git clone of $repo failed" >&2; exit 1; }
echo "cold-ci: $(git -C "$scratch/clone" log -1 --format='%h %s') in $scratch/clone"

environment=(CI=true "TEWB_CI_TABLE=$table" "CCACHE_DIR=$scratch/ccache")
mkdir -p "$scratch/ccache"
if [ $warm = 0 ]; then
  echo "cold-ci: an empty compiler cache at $scratch/ccache"
else
  echo "cold-ci: the compiler cache the previous run left at $scratch/ccache (warm)"
fi
(cd "$scratch/clone" && env "${environment[@]}" bash .ci/run </dev/null) > "$scratch/ci.log" 2>&1
status=$?
echo "cold-ci: .ci/run exited $status; its log: $scratch/ci.log"
[ -f "$table" ] && cat "$table"
exit $status
