#!/usr/bin/env bash
# Run a command and print its peak anonymous resident memory (RssAnon, kB),
# polled every 20 ms from /proc as bench/compare.sh does, on stderr:
#
#   bench/peak_anon.sh target/release/examples/index_time RUN.jsonl
#
# The command's own output and exit status pass through.
set -u
"$@" &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
  v=$(awk '/^RssAnon:/{print $2}' "/proc/$pid/status" 2>/dev/null)
  [ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
  sleep 0.02
done
wait "$pid"
rc=$?
echo "peak_rssanon_kb $peak" >&2
exit $rc
