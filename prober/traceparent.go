package prober

import (
	"encoding/hex"
	"math/rand/v2"
	"net/http"
)

// TraceparentHeader is the W3C Trace Context header a request carries so
// that the server's own spans (vLLM's and sglang's OpenTelemetry tracing
// continue the trace it names) can be found from the probe's result.
const TraceparentHeader = "traceparent"

// newTraceparent returns a new traceparent value (version 00, a random
// 16-byte trace id and 8-byte parent id, the sampled flag set, so that a
// server sampling by its parent records the request) and its trace id.
//
// The ids come from math/rand/v2's top-level functions: the runtime's
// per-thread ChaCha8 generator, seeded from the operating system's random
// source. That is lock-free and cheap (BenchmarkNewTraceparent), where crypto/rand
// may cost a system call on the request's path. A trace id has to be
// unique, not secret: nothing is authorised by knowing one.
func newTraceparent() (header, traceID string) {
	var b [55]byte // 00-<32 hex>-<16 hex>-01
	var id [24]byte
	for {
		for i := 0; i < len(id); i += 8 {
			u := rand.Uint64()
			for k := range 8 {
				id[i+k] = byte(u >> (8 * k))
			}
		}
		// All-zero ids are invalid; redraw (about never).
		if !allZero(id[:16]) && !allZero(id[16:]) {
			break
		}
	}
	copy(b[:], "00-")
	hex.Encode(b[3:35], id[:16])
	b[35] = '-'
	hex.Encode(b[36:52], id[16:])
	copy(b[52:], "-01")
	h := string(b[:])
	return h, h[3:35] // the id shares the header's bytes: one allocation
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// TraceIDOf returns the trace id of a traceparent value, or "" when the
// value is not a valid one by the W3C Trace Context rules: a two-digit
// version other than ff, a 32-digit trace id and a 16-digit parent id in
// lower-case hex, neither all zeros, two flag digits; version 00 is
// exactly that long, later versions may append "-" and more.
func TraceIDOf(v string) string {
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return ""
	}
	if !lowerHex(v[:2]) || v[:2] == "ff" || !lowerHex(v[3:35]) || !lowerHex(v[36:52]) || !lowerHex(v[53:55]) {
		return ""
	}
	if len(v) > 55 && (v[:2] == "00" || v[55] != '-') {
		return ""
	}
	if v[3:35] == "00000000000000000000000000000000" || v[36:52] == "0000000000000000" {
		return ""
	}
	return v[3:35]
}

func lowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// traceContext gives req its trace context and returns the trace id it
// carries. A traceparent the request already has (a module's header)
// is kept, so that its trace id is the one recorded; an invalid one is
// sent as given and no id is recorded. Otherwise, unless off, a new one
// is set. It runs before the send timestamp, so that none of its work
// is counted in the request's times.
func traceContext(req *http.Request, off bool) string {
	if vs := req.Header.Values(TraceparentHeader); len(vs) > 0 {
		if len(vs) != 1 {
			return ""
		}
		return TraceIDOf(vs[0])
	}
	if off {
		return ""
	}
	h, id := newTraceparent()
	req.Header.Set(TraceparentHeader, h)
	return id
}
