#!/usr/bin/env bash
# Runs every ptyjobs benchmark and writes the results to docs/BENCHMARKS.md.
#
#   bench/run.sh                 full run (about 10 minutes on 2 cores, plus the release build)
#   BENCH_QUICK=1 bench/run.sh   small sizes, results to stdout only (about 1 minute: for
#   bench/run.sh --quick         iterating, and a smoke test of the benches)
#
# Builds the release `ptyjobs` binary and the bench programs into $CARGO_TARGET_DIR (default:
# the workspace's target/), then runs, one after another: workloads, throughput, parse,
# roundtrip, startup, scale, bounded, persist, ensure, ports, keep, policy, control (each documented at the top of
# bench/src/bin/<name>.rs). Every
# figure is printed beside its reference measured in the same run, with the ratio; the rows
# that carry a target verdict are gathered into the summary at the top. Not part of the tests.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
quick=false
[[ ${1:-} == --quick || -n ${BENCH_QUICK:-} && ${BENCH_QUICK:-} != 0 ]] && quick=true

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
date_start=$(date -u '+%Y-%m-%d %H:%M UTC')
cargo build --release --quiet -p ptyjobs-mcp -p ptyjobs-bench
bin=$CARGO_TARGET_DIR/release

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The servers the benches start keep their job history in a fresh directory per bench, never
# in the user's state dir (persistence stays on: it is the default the benches must measure).
state() { mkdir -p "$tmp/state-$1"; echo "$tmp/state-$1"; }

# workloads: rounds and scale; throughput MB; parse MB; roundtrip calls; startup runs;
# scale jobs and short jobs; bounded MB; persist MB; ports calls.
if $quick; then
  sizes=(5 0.1 20 5 1000 5 100 100 50 5 100)
else
  sizes=(5 1 200 50 10000 20 1000 2000 1000 50 2000)
fi
started=$(date +%s)
PTYJOBS_STATE_DIR=$(state workloads) "$bin/workloads" "${sizes[0]}" "${sizes[1]}" >"$tmp/s0.md"
PTYJOBS_STATE_DIR=$(state throughput) "$bin/throughput" "${sizes[2]}" >"$tmp/s1.md"
PTYJOBS_STATE_DIR=$(state parse) "$bin/parse" "${sizes[3]}" >"$tmp/s2.md"
PTYJOBS_STATE_DIR=$(state roundtrip) "$bin/roundtrip" "${sizes[4]}" >"$tmp/s3.md"
PTYJOBS_STATE_DIR=$(state startup) "$bin/startup" "${sizes[5]}" >"$tmp/s4.md"
PTYJOBS_STATE_DIR=$(state scale) "$bin/scale" "${sizes[6]}" "${sizes[7]}" >"$tmp/s5.md"
PTYJOBS_STATE_DIR=$(state bounded) "$bin/bounded" "${sizes[8]}" >"$tmp/s6.md"
PTYJOBS_STATE_DIR=$(state persist) "$bin/persist" "${sizes[9]}" >"$tmp/s7.md"
PTYJOBS_STATE_DIR=$(state ensure) "$bin/ensure" "${sizes[4]}" >"$tmp/s8.md"
PTYJOBS_STATE_DIR=$(state ports) "$bin/ports" "${sizes[10]}" >"$tmp/s9.md"
PTYJOBS_STATE_DIR=$(state keep) "$bin/keep" "$($quick && echo 20 || echo 200)" >"$tmp/s9k.md"
# policy: calls and seq lines (its servers run with --no-persist; issue 24).
"$bin/policy" "$($quick && echo 50 || echo 500)" "$($quick && echo 100000 || echo 1000000)" >"$tmp/s9p.md"
# Two servers on one state directory (sa: after s9 in every locale's order).
PTYJOBS_STATE_DIR=$(state control) "$bin/control" "${sizes[10]}" >"$tmp/sa.md"
took=$(( $(date +%s) - started ))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# ptyjobs benchmarks"
  echo
  echo "Written by \`bench/run.sh\`; do not edit by hand (the analysis at the end comes from"
  echo "\`bench/ANALYSIS.md\`). Every figure stands beside its reference measured in the same run:"
  echo "on a shared, noisy machine only the ratios mean something."
  echo
  echo "- Command: \`bench/run.sh\` (from the repository root)"
  echo "- Date: $date_start; the run took ${took} s"
  if commit=$(git rev-parse --short HEAD 2>/dev/null); then
    git diff --quiet HEAD -- crates Cargo.toml || commit="$commit (crates/ modified in the work tree)"
  else
    commit="${PTYJOBS_BENCH_COMMIT:-unknown (not a git work tree)}"
  fi
  echo "- Commit: $commit"
  echo "- Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'),"
  echo "  Linux $(uname -r), $(awk '/MemTotal/ {printf "%.1f GB", $2/1048576}' /proc/meminfo) RAM"
  echo "- Load average (1, 5, 15 min): $load_start at the start, $load_end at the end"
  echo
  echo "## Targets"
  echo
  echo "| target | measured | verdict |"
  echo "|---|---|---|"
  grep -h -e '| \*\*met\*\* |$' -e '| \*\*not met\*\* |$' "$tmp"/s*.md
  echo
  cat "$tmp"/s*.md
  if [[ -f bench/ANALYSIS.md ]]; then
    cat bench/ANALYSIS.md
  fi
} >"$tmp/all.md"

if $quick; then
  cat "$tmp/all.md"
else
  mkdir -p docs
  cp "$tmp/all.md" docs/BENCHMARKS.md
  echo "wrote docs/BENCHMARKS.md"
fi
