#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian bookworm machine: Prometheus
# and promtool (the integration tests run a real Prometheus) and the Go
# modules. Idempotent; safe to run on every test run.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]} from Debian" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # Debian's package starts nothing without systemd, but stop it if it did:
  # the tests start their own Prometheus on loopback.
  $SUDO pkill -x prometheus 2>/dev/null || true
fi

go mod download
