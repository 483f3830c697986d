#!/usr/bin/env bash
# The daemon's own cost: 50 targets probed every 15 s against the simulator
# for DURATION seconds (default 180). Prints average CPU (% of one core) and
# peak RSS of the serve process. A measurement, not a test: run it on an
# otherwise idle machine.
#   usage: exporter/cost.sh [DURATION_SECONDS] [TARGETS] [DATASET]
# DATASET is fixed (default: no tokenizer work per probe beyond counting) or
# random (128-token prompts generated with the embedded Qwen3 tokenizer).
set -euo pipefail
dur=${1:-180}
n=${2:-50}
dataset=${3:-fixed}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/servingprobe" ./cmd/servingprobe
"$tmp/servingprobe" simulate --web.listen-address=127.0.0.1:18931 --log.level=warn &
{
  echo "targets:"
  for i in $(seq 1 "$n"); do
    printf '  - name: t%d\n    url: http://127.0.0.1:18931\n    backend: vllm-chat\n    model: servingprobe-sim\n    modules: [m]\n    interval: 15s\n' "$i"
  done
  if [ "$dataset" = fixed ]; then
    printf 'modules:\n  m:\n    dataset: fixed\n    prompt: "Say hello."\n    output_len: 32\n'
  else
    printf 'modules:\n  m:\n    dataset: %s\n    input_len: 128\n    output_len: 32\n' "$dataset"
  fi
} >"$tmp/cfg.yml"
"$tmp/servingprobe" serve --config.file="$tmp/cfg.yml" --web.listen-address=127.0.0.1:18932 --log.level=warn &
pid=$!
sleep 2
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' "/proc/$pid/stat"; }
t0=$(ticks); s0=$(date +%s.%N); peak=0
end=$(( $(date +%s) + dur ))
while [ "$(date +%s)" -lt "$end" ]; do
  rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
  [ "$rss" -gt "$peak" ] && peak=$rss
  sleep 1
done
t1=$(ticks); s1=$(date +%s.%N)
ok=$(curl -s 127.0.0.1:18932/metrics | awk '/^servingprobe_requests_total.*outcome="success"/{s+=$2} END{print s+0}')
awk -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" -v hz="$hz" -v peak="$peak" -v ok="$ok" -v n="$n" 'BEGIN{
  printf "dataset='"$dataset"' targets=%d duration_s=%.0f successful_probes=%d cpu_percent_of_one_core=%.2f peak_rss_mib=%.1f\n",
    n, s1-s0, ok, 100*(t1-t0)/hz/(s1-s0), peak/1024 }'
