#!/usr/bin/env bash
# Installs what `make test` uses on a fresh Debian bookworm machine that has
# only git, make, go and apt-get:
#   prometheus, promtool  the integration tests run a real Prometheus
#   podman                scripts/check-image.sh builds and inspects the image
#   npm                   scripts/check-image.sh lints the Dockerfile with dockerfilelint
#   gcc, libc6-dev        cgo, which -race and the hftokenizers vet need
#   chromium              the report and landing-page tests render pages headless
# and the Go modules. Idempotent; safe to run on every test run.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
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
