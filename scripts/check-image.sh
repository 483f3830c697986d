#!/usr/bin/env bash
# CI check of the container image: lints the Dockerfile offline, builds the
# image with podman (vfs storage, no network: the image is FROM scratch and
# needs nothing from a registry), then checks its metadata with
# `podman image inspect`. Exits non-zero with a message on the first failure.
#
# Usage: scripts/check-image.sh
# Environment: BINARY (a prebuilt static linux binary, skips make build),
#              IMAGE (default servingprobe:ci), DOCKERFILELINT_VERSION.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${IMAGE:-servingprobe:ci}"
DOCKERFILELINT_VERSION="${DOCKERFILELINT_VERSION:-1.8.0}"
fail() { echo "check-image: FAIL: $*" >&2; exit 1; }
say() { echo "check-image: $*" >&2; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# 1. Lint the Dockerfile with npm's dockerfilelint, installed into a temp dir.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
say "linting Dockerfile with dockerfilelint@${DOCKERFILELINT_VERSION}"
npm install --silent --no-audit --no-fund --prefix "$tmp" "dockerfilelint@${DOCKERFILELINT_VERSION}" >/dev/null \
  || fail "cannot install dockerfilelint from npm"
# Default rules, nothing ignored: it exits non-zero on any finding.
"$tmp/node_modules/.bin/dockerfilelint" -o cli Dockerfile || fail "dockerfilelint reported problems in Dockerfile"

# 2. Build the image.
if ! command -v podman >/dev/null 2>&1; then
  say "installing podman from Debian"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq podman >/dev/null || fail "cannot install podman"
fi
say "building $IMAGE"
ENGINE=podman ENGINE_OPTS="--storage-driver=vfs" BUILD_OPTS="--network=none" \
  scripts/docker-build.sh "$IMAGE" || fail "image build failed"

# 3. Inspect it.
inspect() { podman --storage-driver=vfs image inspect --format "$1" "$IMAGE"; }
expect() { # name got want
  if [ "$2" != "$3" ]; then fail "$1 is '$2', want '$3'"; fi
  say "ok: $1 = $2"
}

user="$(inspect '{{.Config.User}}')"
case "$user" in
  ""|0|0:*|root|root:*) fail "image runs as root (User='$user')" ;;
esac
[[ "$user" =~ ^[0-9]+(:[0-9]+)?$ ]] || fail "User '$user' is not numeric: Kubernetes runAsNonRoot cannot verify a name"
say "ok: user $user is numeric and non-root"

expect entrypoint "$(inspect '{{json .Config.Entrypoint}}')" '["/bin/servingprobe"]'
expect cmd "$(inspect '{{json .Config.Cmd}}')" '["serve","--config.file=/etc/servingprobe/servingprobe.yml"]'
expect "exposed ports" "$(inspect '{{range $p, $_ := .Config.ExposedPorts}}{{$p}} {{end}}')" '9775/tcp '
expect volumes "$(inspect '{{range $v, $_ := .Config.Volumes}}{{$v}} {{end}}')" '/var/lib/servingprobe '

for label in title description source url version revision created; do
  v="$(inspect "{{index .Config.Labels \"org.opencontainers.image.$label\"}}")"
  [ -n "$v" ] && [ "$v" != "<no value>" ] || fail "label org.opencontainers.image.$label is missing"
done
say "ok: OCI labels present (version $(inspect '{{index .Config.Labels "org.opencontainers.image.version"}}'))"

# podman run does not work in this sandbox, so look at the files instead:
# mount the image's root filesystem and check what the entrypoint needs.
root="$(podman --storage-driver=vfs image mount "$IMAGE" 2>/dev/null)" || root=""
if [ -n "$root" ]; then
  [ -x "$root/bin/servingprobe" ] || fail "/bin/servingprobe missing or not executable"
  [ -s "$root/etc/ssl/certs/ca-certificates.crt" ] || fail "CA bundle missing"
  [ -s "$root/etc/servingprobe/servingprobe.yml" ] || fail "default config missing"
  grep -q '^nobody:x:65534:65534:' "$root/etc/passwd" || fail "/etc/passwd has no nobody entry"
  owner="$(stat -c %u:%g "$root/var/lib/servingprobe")"
  expect "owner of /var/lib/servingprobe" "$owner" "65534:65534"
  if [ -x "$root/bin/servingprobe" ]; then
    "$root/bin/servingprobe" check-config --config.file="$root/etc/servingprobe/servingprobe.yml" >/dev/null \
      || fail "the image's default config does not pass check-config"
    say "ok: default config passes the image's own check-config"
  fi
  podman --storage-driver=vfs image unmount "$IMAGE" >/dev/null || true
else
  say "note: podman image mount unavailable; file checks skipped"
fi
say "PASS: $IMAGE"
