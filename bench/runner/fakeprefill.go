package runner

import "github.com/servingprobe/servingprobe/internal/pyfmt"

// fakePrefillFields are the fields --fake-prefill puts in every request
// body, in the order bench_serving inserts them into its
// extra_request_body (sglang python/sglang/benchmark/serving.py at
// 00f9ec47, run_benchmark):
//
//	# Inject bootstrap fields for fake decode benchmarking
//	if getattr(args, "fake_prefill", False):
//	    extra_request_body["bootstrap_host"] = FAKE_BOOTSTRAP_HOST
//	    extra_request_body["bootstrap_room"] = 0
//
// That runs after extra_request_body = json.loads(args.extra_request_body),
// so the two fields replace a user's values for them, and for every
// backend, not only sglang's: each request function merges
// extra_request_body into its payload. No bootstrap_port is sent. The
// decode server, launched with --disaggregation-transfer-backend fake,
// skips the KV transfer for this host.
func fakePrefillFields(s Spec) []pyfmt.Field {
	if !s.FakePrefill {
		return nil
	}
	return []pyfmt.Field{{Key: "bootstrap_host", Value: FakeBootstrapHost}, {Key: "bootstrap_room", Value: 0}}
}
