#!/usr/bin/env bash
# Peak memory of triage on a file in which every line is junk (each one a
# problem), printed next to the file's line count. The figures are in
# docs/reliability.md ("Bad lines cost bounded memory").
#
#   bench/junk-memory.sh                       # 5,000,000 lines of "x" (10 MB)
#   LINES=30000000 bench/junk-memory.sh        # 30 M lines (60 MB)
#   BIN=target/debug/triage bench/junk-memory.sh
#
# Needs GNU time (/usr/bin/time -v). The file is written once under
# bench/data/ (gitignored) and reused.
set -euo pipefail
cd "$(dirname "$0")/.."

LINES="${LINES:-5000000}"
BIN="${BIN:-target/release/triage}"
if [ ! -x "$BIN" ]; then
  cargo build --release
fi
if [ ! -x /usr/bin/time ]; then
  echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2
  exit 2
fi
DATA=bench/data
mkdir -p "$DATA"
FILE="$DATA/junk-$LINES.jsonl"
if [ ! -f "$FILE" ]; then
  awk -v n="$LINES" 'BEGIN { for (i = 0; i < n; i++) print "x" }' > "$FILE"
fi
echo "file:  $FILE, $(wc -l < "$FILE") lines (wc -l), $(du -h "$FILE" | cut -f1)"
for cmd in check summary "export --format json"; do
  # check and summary exit 2 on a file with no pair: that is expected here.
  # shellcheck disable=SC2086
  /usr/bin/time -v "$BIN" $cmd "$FILE" >/dev/null 2>"$DATA/junk-time.txt" || true
  kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$DATA/junk-time.txt")
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$DATA/junk-time.txt")
  printf 'triage %-20s peak RSS %6d MiB (%d KiB), %s wall\n' "$cmd" $((kib / 1024)) "$kib" "$secs"
done
