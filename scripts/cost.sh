#!/usr/bin/env bash
# The daemon's own cost: TARGETS targets (default 50), each probed every
# INTERVAL (default 15s) against the simulator, for DURATION seconds (default
# 180). A measurement, not a test: run it on an otherwise idle machine.
#
#   usage: [OUTPUT_LEN=32] [INTERVAL=15s] [FLOOR=1] scripts/cost.sh [DURATION_SECONDS] [TARGETS] [DATASET]
#
# DATASET is fixed (default) or random (128-token prompts generated with the
# embedded Qwen3 tokenizer). Prints, for the serve process:
#   - CPU as % of one core, from the scheduler's own per-thread run time
#     (/proc/PID/task/*/schedstat, in ns; not tick-sampled), over the steady
#     state (after the first INTERVAL, once every loop has connected and
#     probed) and over the whole run including start-up;
#   - context switches per second (each is a wakeup the process paid for);
#   - peak RSS over the whole run (sampled each second) and RSS at the end.
# With FLOOR=1 it then runs tools/costfloor, the cheapest Go client for the
# same requests (no parsing, timing or metrics), under the same load, so the
# daemon's figure can be read against what the Go runtime and the kernel charge
# for the same connections and reads.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-180}
n=${2:-50}
dataset=${3:-fixed}
outlen=${OUTPUT_LEN:-32}
interval=${INTERVAL:-15s}
ivs=${interval%s}
case $ivs in '' | *[!0-9]*) echo "INTERVAL must be whole seconds, like 15s" >&2; exit 2 ;; esac
[ "$dur" -gt "$ivs" ] || { echo "DURATION must exceed INTERVAL" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/servingprobe" ./cmd/servingprobe
go build -o "$tmp/costfloor" ./tools/costfloor
"$tmp/servingprobe" simulate --web.listen-address=127.0.0.1:18931 --log.level=warn &
{
  echo "targets:"
  for i in $(seq 1 "$n"); do
    printf '  - name: t%d\n    url: http://127.0.0.1:18931\n    backend: vllm-chat\n    model: servingprobe-sim\n    modules: [m]\n    interval: %s\n' "$i" "$interval"
  done
  if [ "$dataset" = fixed ]; then
    printf 'modules:\n  m:\n    dataset: fixed\n    prompt: "Say hello."\n    output_len: %s\n' "$outlen"
  else
    printf 'modules:\n  m:\n    dataset: %s\n    input_len: 128\n    output_len: %s\n' "$dataset" "$outlen"
  fi
} >"$tmp/cfg.yml"

cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{s+=$1} END{printf "%d", s}'; }
csw() { cat /proc/"$1"/task/*/status | awk '/ctxt_switches/{s+=$2} END{print s+0}'; }
rss_kib() { awk '/VmRSS/{print $2}' /proc/"$1"/status; }

# measure PID NAME: samples RSS every second for $dur seconds and prints one line.
measure() {
  local pid=$1 name=$2 peak=0 r t0 c0 s0 tw cw sw t1 c1 s1
  t0=$(cpu_ns "$pid"); c0=$(csw "$pid"); s0=$(date +%s.%N)
  local end=$(($(date +%s) + dur)) steady=$(($(date +%s) + ivs))
  tw=
  while [ "$(date +%s)" -lt "$end" ]; do
    r=$(rss_kib "$pid"); [ "$r" -gt "$peak" ] && peak=$r
    if [ -z "$tw" ] && [ "$(date +%s)" -ge "$steady" ]; then
      tw=$(cpu_ns "$pid"); cw=$(csw "$pid"); sw=$(date +%s.%N)
    fi
    sleep 1
  done
  t1=$(cpu_ns "$pid"); c1=$(csw "$pid"); s1=$(date +%s.%N); r=$(rss_kib "$pid")
  awk -v name="$name" -v t0="$t0" -v tw="$tw" -v t1="$t1" -v s0="$s0" -v sw="$sw" -v s1="$s1" \
    -v cw="$cw" -v c1="$c1" -v peak="$peak" -v rss="$r" -v n="$n" -v iv="$interval" -v out="$outlen" -v ds="$dataset" 'BEGIN{
    printf "%s: targets=%d interval=%s dataset=%s output_len=%d duration_s=%.0f cpu_percent_of_one_core steady=%.2f whole_run=%.2f context_switches_per_s=%.0f peak_rss_mib=%.1f end_rss_mib=%.1f\n",
      name, n, iv, ds, out, s1-s0, 100*(t1-tw)/1e9/(s1-sw), 100*(t1-t0)/1e9/(s1-s0), (c1-cw)/(s1-sw), peak/1024, rss/1024 }'
}

"$tmp/servingprobe" serve --config.file="$tmp/cfg.yml" --web.listen-address=127.0.0.1:18932 --log.level=warn &
pid=$!
sleep 1
measure "$pid" serve
ok=$(curl -s 127.0.0.1:18932/metrics | awk '/^servingprobe_requests_total.*outcome="success"/{s+=$2} END{print s+0}')
bad=$(curl -s 127.0.0.1:18932/metrics | awk '/^servingprobe_requests_total/ && !/outcome="success"/{s+=$2} END{print s+0}')
echo "serve: successful_probes=$ok other_outcomes=$bad"
kill "$pid"; wait "$pid" 2>/dev/null || true

if [ "${FLOOR:-0}" = 1 ]; then
  "$tmp/costfloor" -n "$n" -interval "$interval" -tokens "$outlen" &
  fpid=$!
  sleep 1
  measure "$fpid" floor
  kill "$fpid"; wait "$fpid" 2>/dev/null || true
fi
echo "loadavg at the end: $(cat /proc/loadavg)"
