// Package deploy holds servingprobe's deployment files: the image's default
// configuration, the Kubernetes manifests (kubernetes/) and the pinned schema
// tooling (tools/, a separate module). It has no code; its tests keep the
// files honest:
//
//   - kubernetes/prometheusrule.yaml is generated from the rule files in
//     package dashboards and must equal what they generate
//     (go test ./deploy -run PrometheusRule -update rewrites it);
//   - every shipped servingprobe config passes config.Parse;
//   - the manifests agree with each other and with the image (selectors,
//     ports, mounts, probe paths, the job label the rules select), name one
//     image, and give every pod that may fetch a tokenizer from the hub a
//     writable HF_HOME (the root is read-only, the user has no home);
//   - the compose demo mounts files that exist and its Prometheus config
//     passes promtool with the rule files where the mounts put them.
//
// Schema validation of the manifests (kubeconform, strict) runs from
// scripts/check-deploy.sh, because its dependencies stay out of this module.
package deploy
