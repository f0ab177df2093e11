#!/bin/sh
# `mpirun -np 3 ftsim check` on localhost against one process: the same JSON report (verdict,
# counts, split) and the same replay file, byte for byte. Usage: mpi_check.sh FTSIM MPIRUN
set -u
ftsim=$1
mpirun=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0
compare() {
  want=$1
  shift
  failed=$status
  status=0
  "$ftsim" check "$@" --json --quiet --jobs 1 --cex "$dir/one.json" >"$dir/one.out" 2>"$dir/one.err"
  one=$?
  # stdout only: mpirun adds its own notice of a rank's non-zero exit (VIOLATION) on stderr.
  "$mpirun" --allow-run-as-root --oversubscribe -np 3 "$ftsim" check "$@" --json \
    --cex "$dir/mpi.json" >"$dir/mpi.out" 2>"$dir/mpi.err"
  ranks=$?
  if [ "$one" != "$want" ] || [ "$ranks" != "$want" ]; then
    echo "FAIL $*: exit $one alone, $ranks under mpirun (want $want)"
    cat "$dir/mpi.out" "$dir/mpi.err"
    status=1
  fi
  grep -v '"replay"' "$dir/one.out" >"$dir/one.cmp"
  grep -v '"replay"' "$dir/mpi.out" >"$dir/mpi.cmp"
  if ! cmp -s "$dir/one.cmp" "$dir/mpi.cmp"; then
    echo "FAIL $*: the reports differ"
    diff "$dir/one.cmp" "$dir/mpi.cmp"
    status=1
  fi
  if [ "$want" = 1 ] && ! cmp -s "$dir/one.json" "$dir/mpi.json"; then
    echo "FAIL $*: the replay files differ"
    status=1
  fi
  rm -f "$dir"/one.* "$dir"/mpi.*
  [ "$status" = 0 ] && echo "ok $* (exit $want)"
  [ "$failed" = 0 ] || status=1
}
compare 0 --protocol int3 --cpus 2 --sites 2
compare 1 --protocol direct --cpus 3 --sites 2
compare 0 --protocol int3 --cpus 3 --bound 1
# Large enough that its largest subtree splits into pieces, which travel between the ranks.
compare 0 --protocol int3 --cpus 3
exit $status
