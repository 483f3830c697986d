#!/usr/bin/env bash
# CI check of the deployment files, offline:
#  1. go test ./deploy: PrometheusRule equals what dashboards/rules.yaml and
#     alerts.yaml generate; shipped configs pass config.Parse; the manifests
#     agree with each other, the image and the rules; the compose demo mounts
#     files that exist and promtool accepts its Prometheus config with the
#     rule files where the mounts put them.
#  2. kubeconform (pinned in deploy/tools/go.mod) validates deploy/kubernetes
#     strictly against the schemas in deploy/schemas, and must reject every
#     known-invalid manifest in deploy/tools/testdata/invalid.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "check-deploy: FAIL: $*" >&2; exit 1; }

command -v promtool >/dev/null 2>&1 || fail "promtool not found: run scripts/install-deps.sh (Debian's prometheus)"

go test -count=1 ./deploy || fail "go test ./deploy"

schemas="$(pwd)/deploy/schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json"
kubeconform() { (cd deploy/tools && go tool kubeconform -strict -summary -schema-location "$schemas" "$@"); }

# kustomization.yaml is kustomize's own file, not an API object; the Go test
# checks that it lists every manifest.
manifests=()
for f in deploy/kubernetes/*.yaml; do
  [ "$(basename "$f")" = kustomization.yaml ] || manifests+=("$(pwd)/$f")
done
kubeconform "${manifests[@]}" || fail "deploy/kubernetes does not validate against deploy/schemas"

# The schemas must be strict enough to reject each of these.
for f in deploy/tools/testdata/invalid/*.yaml; do
  # Rejected for its content ("is invalid"), not for a missing schema.
  out="$(kubeconform "$(pwd)/$f" 2>&1 || true)"
  if ! grep -q ' is invalid: ' <<<"$out"; then
    fail "kubeconform did not reject $f as invalid: the schemas are not strict"
  fi
done
echo "check-deploy: kubeconform rejected all $(ls deploy/tools/testdata/invalid/*.yaml | wc -l) invalid manifests" >&2
echo "check-deploy: PASS" >&2
