// Module tools pins the programs that check deploy/ (kubeconform and the
// schema generator), kept out of servingprobe's own go.mod.
module github.com/servingprobe/servingprobe/deploy/tools

go 1.26.8

tool github.com/yannh/kubeconform/cmd/kubeconform

require go.yaml.in/yaml/v3 v3.0.4

require (
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.7 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.1 // indirect
	github.com/yannh/kubeconform v0.7.0 // indirect
	golang.org/x/text v0.25.0 // indirect
	sigs.k8s.io/yaml v1.4.0 // indirect
)
