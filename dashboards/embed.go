// Package dashboards ships servingprobe's Grafana dashboards and Prometheus
// recording and alerting rules, embedded so that Go programs (tests, the
// generator's checks) read the files users import as they are.
//
// The files are generated from the knobs in internal/mixin; edit those, not
// the files, and run go generate. They query only the metric contract of
// package exporter, and every latency query works whether Prometheus ingests
// the classic or the native form of the histograms.
package dashboards

import "embed"

//go:generate go run ./internal/mixin/gen -out .

// FS holds the dashboards (*.json) and rule files (rules.yaml, alerts.yaml).
//
//go:embed *.json rules.yaml alerts.yaml
var FS embed.FS

// Dashboards are the file names of the Grafana dashboards in FS.
var Dashboards = []string{"overview.json", "bench.json", "client-vs-server.json"}

// RuleFiles are the file names of the Prometheus rule files in FS; alerts.yaml
// reads series recorded by rules.yaml.
var RuleFiles = []string{"rules.yaml", "alerts.yaml"}
