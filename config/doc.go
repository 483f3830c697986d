// Package config holds the servingprobe configuration file: its types, their
// defaults, strict decoding and validation.
//
// Decoding is strict: an unknown field is an error that names its line.
// Defaults are applied before decoding, so an absent key keeps its default.
// Validate returns every problem at once, each prefixed with the path of the
// field (targets[1].modules[0]: unknown module "x"). Secrets come from
// prometheus/common/config and render as <secret> in Redacted; a password
// in a server_metrics URL (SecretURL) renders as xxxxx, so that the
// rendered URL still parses.
//
// This package imports only the standard library, yaml and
// prometheus/common; the reload gauges live in the exporter.
package config
