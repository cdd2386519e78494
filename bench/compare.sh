#!/usr/bin/env bash
# Measure triage on a large generated run and print each figure next to its
# target (MET / MISSED). See docs/performance.md for the method.
#
#   bench/compare.sh                 # 1,000,000 pairs (about 2.7 GB)
#   PAIRS=100000 bench/compare.sh    # a smaller run
#   RUNS=5 bench/compare.sh          # more hyperfine runs per command
#   BIN_DIR=DIR bench/compare.sh     # measure the binaries in DIR (triage and
#                                    # examples/{gen_run,index_time,ops_time}),
#                                    # not built here: another build, alternated
#
# Needs: cargo, hyperfine, jq, tmux (installed with apt-get when missing).
# The run is generated once under bench/data/ (gitignored) and reused.
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS="${PAIRS:-1000000}"
RUNS="${RUNS:-3}"
DATA=bench/data
mkdir -p "$DATA"
case "$PAIRS" in
  1000000) FILE="$DATA/run-1m.jsonl" ;;
  *) FILE="$DATA/run-$PAIRS.jsonl" ;;
esac
OUT="$DATA/results"
mkdir -p "$OUT"

need() {
  command -v "$1" >/dev/null 2>&1 && return
  echo "== installing $1"
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq >/dev/null; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
}
need hyperfine
need jq
need tmux

if [ -n "${BIN_DIR:-}" ]; then
  BIN="$BIN_DIR"
  echo "== measuring the binaries in $BIN (not built here)"
else
  TARGET_DIR="${CARGO_TARGET_DIR:-target}"
  echo "== building (release)"
  cargo build --release --quiet --bin triage --example gen_run --example index_time --example ops_time
  BIN="$TARGET_DIR/release"
fi

if [ ! -s "$FILE" ]; then
  echo "== generating $PAIRS pairs into $FILE"
  "$BIN/examples/gen_run" --pairs "$PAIRS" -o "$FILE.tmp"
  mv "$FILE.tmp" "$FILE"
fi
BYTES=$(stat -L -c %s "$FILE")
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== run: $FILE ($PAIRS pairs, $BYTES bytes)"

# The headless full index: `triage summary` when it exists, else the example.
if "$BIN/triage" summary --help >/dev/null 2>&1; then
  INDEX_CMD="$BIN/triage summary $FILE > /dev/null"
else
  INDEX_CMD="$BIN/examples/index_time $FILE > /dev/null"
fi

# Warm the page cache once, so every command reads from memory.
cat "$FILE" > /dev/null

echo "== hyperfine: full index vs wc -l vs jq ($RUNS runs each)"
hyperfine --warmup 1 --runs "$RUNS" --export-json "$OUT/hyperfine.json" \
  -n index "$INDEX_CMD" \
  -n wc "wc -l $FILE" \
  -n jq "jq -c 'select(.passed==false)' $FILE | wc -l"
mean() { jq -r ".results[] | select(.command==\"$1\") | .mean" "$OUT/hyperfine.json"; }
T_INDEX=$(mean index); T_WC=$(mean wc); T_JQ=$(mean jq)
# CPU seconds of one index, for a loaded machine where wall time is noisy.
CPU_INDEX=$( { /usr/bin/time -f "%U %S" "$BIN/examples/index_time" "$FILE" >/dev/null; } 2>&1 | awk '{print $1+$2}')

echo "== peak anonymous memory while indexing"
"$BIN/examples/index_time" "$FILE" > "$OUT/index_time.txt" &
PID=$!
PEAK_ANON=0; PEAK_RSS=0; PEAK_FILE=0
while kill -0 "$PID" 2>/dev/null; do
  if read -r A R F < <(awk '/^RssAnon:/{a=$2} /^VmRSS:/{r=$2} /^RssFile:/{f=$2} END{print a+0, r+0, f+0}' "/proc/$PID/status" 2>/dev/null); then
    [ "$A" -gt "$PEAK_ANON" ] && PEAK_ANON=$A
    [ "$R" -gt "$PEAK_RSS" ] && PEAK_RSS=$R
    [ "$F" -gt "$PEAK_FILE" ] && PEAK_FILE=$F
  fi
  sleep 0.02
done
wait "$PID" || true
cat "$OUT/index_time.txt"

# The run after a repair: the same pairs and inputs, every 7th line's first
# confidence moved (answers change, some statuses with them), every 100th
# line's first question reworded (its inputs change). A build without
# `triage compare` (an older one, alternated with this) skips it.
T_CMP=nan; T_WC2=nan; CMP_RSS_KB=0
if "$BIN/triage" --help 2>/dev/null | grep -q '^  compare '; then
  AFTER="${FILE%.jsonl}-after.jsonl"
  if [ ! -s "$AFTER" ]; then
    echo "== deriving $AFTER from $FILE"
    awk 'NR % 7 == 0 { sub(/"confidence":0\./, "\"confidence\":0.1") }
         NR % 100 == 0 { sub(/"question":"/, "\"question\":\"Reworded: ") }
         { print }' "$FILE" > "$AFTER.tmp"
    mv "$AFTER.tmp" "$AFTER"
  fi
  cat "$AFTER" > /dev/null
  echo "== hyperfine: compare two runs vs wc -l on both ($RUNS runs each)"
  hyperfine --warmup 1 --runs "$RUNS" --export-json "$OUT/hyperfine-compare.json" \
    -n compare "$BIN/triage compare $FILE $AFTER > /dev/null" \
    -n wc2 "wc -l $FILE $AFTER"
  cmean() { jq -r ".results[] | select(.command==\"$1\") | .mean" "$OUT/hyperfine-compare.json"; }
  T_CMP=$(cmean compare); T_WC2=$(cmean wc2)
  CMP_RSS_KB=$( { /usr/bin/time -f "%M" "$BIN/triage" compare "$FILE" "$AFTER" >/dev/null; } 2>&1 | tail -1)
  "$BIN/triage" compare "$FILE" "$AFTER" | sed -n 3,10p | tee "$OUT/compare-counts.txt"
else
  echo "== $BIN/triage has no compare command: the comparison is skipped"
fi

echo "== first screen with rows (tmux, 200x50, TRIAGE_TRACE_FIRST_FRAME=1, 5 starts)"
FIRST=()
for i in 1 2 3 4 5; do
  TRACE="$OUT/trace-$i.txt"
  rm -f "$TRACE"
  SESSION="triage-bench-$$-$i"
  tmux new-session -d -s "$SESSION" -x 200 -y 50 \
    "TRIAGE_TRACE_FIRST_FRAME=1 $BIN/triage --annotations $OUT/bench.triage.jsonl $FILE 2> $TRACE"
  sleep 1.5
  # Keys are answered while indexing continues: quitting mid-index is one.
  tmux send-keys -t "$SESSION" q 2>/dev/null || true
  for _ in $(seq 1 100); do tmux has-session -t "$SESSION" 2>/dev/null || break; sleep 0.05; done
  tmux kill-session -t "$SESSION" 2>/dev/null || true
  MS=$(sed -n 's/^triage: first frame with rows: \([0-9.]*\) ms.*/\1/p' "$TRACE" | head -1)
  FIRST+=("${MS:-nan}")
done
FIRST_MED=$(printf '%s\n' "${FIRST[@]}" | sort -g | sed -n 3p)
rm -f "$OUT/bench.triage.jsonl" "$OUT/bench.triage.jsonl.lock"

echo "== interactive operations on the full run (examples/ops_time.rs)"
"$BIN/examples/ops_time" "$FILE" | tee "$OUT/ops.txt"
op() { awk -v k="$1" '$1==k{print $2}' "$OUT/ops.txt"; }

verdict() { if awk "BEGIN{exit !($1)}"; then echo MET; else echo MISSED; fi; }
RATIO_WC=$(awk "BEGIN{printf \"%.1f\", $T_INDEX/$T_WC}")
RATIO_JQ=$(awk "BEGIN{printf \"%.1f\", $T_JQ/$T_INDEX}")
MEM_BUDGET_KB=$(( (64 * PAIRS) / 1024 + 50 * 1024 ))
BYTES_PER_PAIR=$(awk "BEGIN{printf \"%.1f\", $PEAK_ANON*1024/$PAIRS}")
if [ "$T_CMP" != nan ]; then
  RATIO_CMP=$(awk "BEGIN{printf \"%.2f\", $T_CMP/$T_INDEX}")
  RATIO_CMP_WC=$(awk "BEGIN{printf \"%.1f\", $T_CMP/$T_WC2}")
fi
# Two indexes (as measured for one) plus 32 bytes per pair.
CMP_BUDGET_KB=$(( 2 * PEAK_ANON + (32 * PAIRS) / 1024 ))

echo
echo "== figures ($PAIRS pairs, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-34s %-26s %-40s %s\n' "measure" "target" "measured" "verdict"
printf '%-34s %-26s %-40s %s\n' "first screen with rows (median/5)" "<= 50 ms" "${FIRST_MED} ms (all: ${FIRST[*]})" "$(verdict "$FIRST_MED <= 50")"
printf '%-34s %-26s %-40s %s\n' "full index vs wc -l" "<= 6x" "${RATIO_WC}x (${T_INDEX}s vs ${T_WC}s)" "$(verdict "$RATIO_WC <= 6")"
printf '%-34s %-26s %-40s %s\n' "jq vs full index" ">= 10x" "${RATIO_JQ}x (jq ${T_JQ}s)" "$(verdict "$RATIO_JQ >= 10")"
if [ "$T_CMP" != nan ]; then
  printf '%-34s %-26s %-40s %s\n' "compare two runs vs index one" "<= 2.5x" "${RATIO_CMP}x (${T_CMP}s vs ${T_INDEX}s)" "$(verdict "$RATIO_CMP <= 2.5")"
  printf '%-34s %-26s %-40s %s\n' "compare vs wc -l on both files" "(info)" "${RATIO_CMP_WC}x (${T_CMP}s vs ${T_WC2}s)" "-"
  printf '%-34s %-26s %-40s %s\n' "peak RSS, compare" "<= $((CMP_BUDGET_KB / 1024)) MB (2 idx+32B/pair)" "$((CMP_RSS_KB / 1024)) MB" "$(verdict "$CMP_RSS_KB <= $CMP_BUDGET_KB")"
else
  printf '%-34s %-26s %-40s %s\n' "compare two runs vs index one" "<= 2.5x" "(no compare command in this build)" "-"
fi
printf '%-34s %-26s %-40s %s\n' "full index CPU (user+sys)" "(info)" "${CPU_INDEX} s" "-"
printf '%-34s %-26s %-40s %s\n' "peak anonymous RSS, indexing" "<= $((MEM_BUDGET_KB / 1024)) MB (64 B/pair+50MB)" "$((PEAK_ANON / 1024)) MB = ${BYTES_PER_PAIR} B/pair (file-backed $((PEAK_FILE / 1024)) MB, not mapped: read())" "$(verdict "$PEAK_ANON <= $MEM_BUDGET_KB")"
printf '%-34s %-26s %-40s %s\n' "query keystroke (max over keys)" "<= 10 ms" "$(op query_keystroke_max) ms (p50 $(op query_keystroke_p50), CPU $(op query_keystroke_max_cpu) ms)" "$(verdict "$(op query_keystroke_max) <= 10")"
printf '%-34s %-26s %-40s %s\n' "whole query applied at once (p50)" "(info)" "$(op query_apply_p50) ms (CPU $(op query_apply_p50_cpu) ms)" "-"
printf '%-34s %-26s %-40s %s\n' "text search on Enter (not a key)" "(info)" "$(op text_search_ms) ms, $(op text_search_matches) matches" "-"
printf '%-34s %-26s %-40s %s\n' "sort all pairs (worst key)" "<= 150 ms" "$(op sort_max) ms (CPU $(op sort_max_cpu) ms)" "$(verdict "$(op sort_max) <= 150")"
printf '%-34s %-26s %-40s %s\n' "first string sort, with ranking" "(info)" "$(op sort_first_with_ranking_Case_ms) ms" "-"
printf '%-34s %-26s %-40s %s\n' "frame render 200x50 p99" "<= 2 ms" "$(op render_p99) ms (p50 $(op render_p50))" "$(verdict "$(op render_p99) <= 2")"
printf '%-34s %-26s %-40s %s\n' "next pair with its diff p99" "<= 5 ms" "$(op next_pair_p99) ms (p50 $(op next_pair_p50))" "$(verdict "$(op next_pair_p99) <= 5")"
