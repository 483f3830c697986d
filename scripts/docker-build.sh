#!/usr/bin/env bash
# Builds the servingprobe container image in the Prometheus convention: a
# static binary from `make build` (CGO_ENABLED=0, version ldflags), copied
# into a FROM scratch image together with the host's CA bundle.
#
# Usage: scripts/docker-build.sh [IMAGE]        (default servingprobe:<version>)
# Environment:
#   ENGINE     podman or docker (default: podman if installed, else docker)
#   ARCH       GOARCH of the image (default: the host's, from go env)
#   BINARY     use this prebuilt linux/ARCH binary instead of running make build
#   BUILD_OPTS extra options for "$ENGINE build", word-split
#              (check-image.sh passes --storage-driver=vfs via ENGINE_OPTS)
#   ENGINE_OPTS global options for the engine, word-split
#   CA_BUNDLE  CA certificates to ship (default /etc/ssl/certs/ca-certificates.crt)
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "docker-build: $*" >&2; exit 1; }

VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
REVISION="${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
ARCH="${ARCH:-$(go env GOARCH)}"
IMAGE="${1:-servingprobe:${VERSION}}"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
if [ -z "${ENGINE:-}" ]; then
  if command -v podman >/dev/null 2>&1; then ENGINE=podman; else ENGINE=docker; fi
fi
command -v "$ENGINE" >/dev/null 2>&1 || die "$ENGINE not found (set ENGINE=podman or ENGINE=docker)"
[ -s "$CA_BUNDLE" ] || die "CA bundle $CA_BUNDLE missing or empty (apt-get install ca-certificates, or set CA_BUNDLE)"

out=".build/linux-${ARCH}"
mkdir -p "$out" .build/empty
if [ -n "${BINARY:-}" ]; then
  cp "$BINARY" "$out/servingprobe"
else
  # The Makefile holds the ldflags; build through it so there is one recipe.
  GOOS=linux GOARCH="$ARCH" make --no-print-directory build BIN="$out/servingprobe" VERSION="$VERSION" REVISION="$REVISION"
fi
cp "$CA_BUNDLE" .build/ca-certificates.crt

# A scratch image has no loader: refuse a dynamically linked binary here
# rather than ship an image that fails with "no such file or directory".
if command -v file >/dev/null 2>&1; then
  file -L "$out/servingprobe" | grep -q 'statically linked' || die "$out/servingprobe is not statically linked: $(file -L "$out/servingprobe")"
fi

# shellcheck disable=SC2086 # ENGINE_OPTS and BUILD_OPTS are word-split on purpose
"$ENGINE" ${ENGINE_OPTS:-} build ${BUILD_OPTS:-} \
  --build-arg ARCH="$ARCH" --build-arg OS=linux \
  --build-arg VERSION="$VERSION" --build-arg REVISION="$REVISION" \
  --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  -t "$IMAGE" -f Dockerfile .
echo "docker-build: built $IMAGE" >&2
