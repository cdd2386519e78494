#!/usr/bin/env bash
# Peak memory and time of opening other tools' result files, next to the
# native loader's on the same pairs (docs/performance.md has the figures).
#
#   bench/foreign.sh              # files of about 200 MB each
#   SIZE_MB=1024 bench/foreign.sh # about 1 GB each
#   BIN=path/to/triage bench/foreign.sh
#   ONLY="promptfoo.json inspect.eval" bench/foreign.sh   # some files only
#
# bench/gen_foreign.py writes one file per format (promptfoo JSON and JSONL,
# Inspect JSON and .eval, multivon, CheckList, context-probe) under
# bench/data/foreign-SIZE/ (gitignored, reused; only the files measured are
# made). For each, `triage summary FILE` is timed with
# /usr/bin/time (wall clock, peak RSS), then `triage apply FILE -o
# FILE.native.jsonl` writes the same pairs as native records and `triage
# summary` is timed on those: the native loader on the same pairs.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB="${SIZE_MB:-200}"
DATA="bench/data/foreign-$SIZE_MB"
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=target/release/triage
fi
mkdir -p "$DATA"
# The generator's name for the kind of file each benchmark file is.
kind_of() {
  case "$1" in
    promptfoo.*) echo promptfoo ;;
    inspect.*) echo inspect ;;
    multivon.*) echo multivon ;;
    checklist.*) echo checklist ;;
    context-probe.*) echo context_probe ;;
  esac
}
measure() {
  # wall seconds and peak RSS in MB of `triage summary FILE`
  /usr/bin/time -f "%e %M" -o "$DATA/.time" "$BIN" summary "$1" >/dev/null 2>&1 || true
  read -r secs kb < "$DATA/.time"
  printf "%s %s" "$secs" "$((kb / 1024))"
}
printf "%-20s %8s %8s %8s | %10s %8s %8s %8s\n" \
  file "MB" "s" "peak MB" "native MB" "pairs" "s" "peak MB"
for f in ${ONLY:-promptfoo.json promptfoo.jsonl inspect.json inspect.eval multivon.jsonl checklist.json context-probe.jsonl}; do
  path="$DATA/$f"
  if [ ! -e "$path" ]; then
    echo "== generating $f of about $SIZE_MB MB in $DATA" >&2
    python3 bench/gen_foreign.py "$DATA" "$SIZE_MB" "$(kind_of "$f")"
  fi
  native="$path.native.jsonl"
  [ -e "$native" ] || "$BIN" apply "$path" -o "$native" --force >/dev/null 2>&1
  read -r fs fm <<<"$(measure "$path")"
  read -r ns nm <<<"$(measure "$native")"
  printf "%-20s %8s %8s %8s | %10s %8s %8s %8s\n" \
    "$f" "$(( $(stat -c %s "$path") / 1048576 ))" "$fs" "$fm" \
    "$(( $(stat -c %s "$native") / 1048576 ))" "$(wc -l < "$native")" "$ns" "$nm"
done
