#!/usr/bin/env bash
# Check what bench/compare.sh does with the files it generates, on a small
# run in a temporary folder: deleted when it ends, kept with KEEP=1, and a
# file that was there before never deleted.
#
#   bench/test-compare-keep.sh                # builds in release first
#   BIN_DIR=target/release bench/test-compare-keep.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
PAIRS=${PAIRS:-300}
RUN="$DIR/run-$PAIRS.jsonl"
AFTER="$DIR/run-$PAIRS-after.jsonl"
LOG="$DIR/log.txt"
fail() { echo "FAIL: $*" >&2; tail -20 "$LOG" >&2; exit 1; }
bench() { DATA_DIR="$DIR" PAIRS="$PAIRS" RUNS=1 bench/compare.sh > "$LOG" 2>&1 || fail "bench/compare.sh $* exited with $?"; }

echo "== 1: without KEEP, the generated files are gone afterwards"
bench
grep -q "generating $PAIRS pairs" "$LOG" || fail "the run was not generated"
grep -q "== figures ($PAIRS pairs" "$LOG" || fail "no figures printed"
[ ! -e "$RUN" ] || fail "$RUN was left behind"
[ ! -e "$AFTER" ] || fail "$AFTER was left behind"
grep -q "deleted $RUN" "$LOG" || fail "the deletion was not reported"

echo "== 2: with KEEP=1, both are kept"
KEEP=1 bench
[ -s "$RUN" ] || fail "KEEP=1 did not keep $RUN"
[ -s "$AFTER" ] || fail "KEEP=1 did not keep $AFTER"
grep -q "KEEP=1: kept" "$LOG" || fail "keeping was not reported"

echo "== 3: files that were there before are used and never deleted"
before=$(stat -c %Y "$RUN")
bench
grep -q "generating" "$LOG" && fail "an existing run was generated again"
[ -s "$RUN" ] && [ -s "$AFTER" ] || fail "a file that was there before was deleted"
[ "$(stat -c %Y "$RUN")" = "$before" ] || fail "the existing run was rewritten"

echo "== 4: a run stopped by a signal deletes what it generated"
rm -f "$RUN" "$AFTER"
DATA_DIR="$DIR" PAIRS="$PAIRS" RUNS=1 bench/compare.sh > "$LOG" 2>&1 &
PID=$!
for _ in $(seq 1 600); do grep -q "== hyperfine" "$LOG" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$PID" 2>/dev/null || true
wait "$PID" && fail "an interrupted run exited with 0"
[ ! -e "$RUN" ] || fail "$RUN was left behind after an interruption"

echo "OK: bench/compare.sh deletes what it generated unless KEEP=1"
