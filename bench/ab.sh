#!/usr/bin/env bash
# Side by side: the bench programs of an older commit against this tree's, alternating round by
# round in the same minutes (a refactor's "no regression" check; ratios to each side's own
# reference still print, but compare the ptyjobs columns of the two sides).
#
#   bench/ab.sh REV [ROUNDS]      e.g. bench/ab.sh 1841c03 2
#
# Builds REV in a temporary worktree (its own target dir) and this tree's release programs.
set -euo pipefail
rev=${1:?usage: bench/ab.sh REV [ROUNDS]}
rounds=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
old=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$old/tree" >/dev/null 2>&1 || true; rm -rf "$old"' EXIT
git -C "$root" worktree add -q --detach "$old/tree" "$rev"
(cd "$old/tree" && CARGO_TARGET_DIR=$old/target cargo build --release --quiet -p ptyjobs-mcp -p ptyjobs-bench)
(cd "$root" && cargo build --release --quiet -p ptyjobs-mcp -p ptyjobs-bench)
new_bin=$(cd "$root" && cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')/release
for round in $(seq "$rounds"); do
  for side in old new; do
    bin=$new_bin
    [ "$side" = old ] && bin=$old/target/release
    state=$(mktemp -d)
    echo "=== round $round, $side: throughput 100"
    PTYJOBS_STATE_DIR=$state "$bin/throughput" 100 | grep -E '^\| (plain|ansi|progress) '
    echo "=== round $round, $side: workloads 3 1"
    PTYJOBS_STATE_DIR=$state "$bin/workloads" 3 1 | grep -E '^\| (1M lines|one 50 MB)' | head -2
    echo "=== round $round, $side: startup 20"
    PTYJOBS_STATE_DIR=$state "$bin/startup" 20 | grep -E '^\| binary start' | head -1
    rm -rf "$state"
  done
done
