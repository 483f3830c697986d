package prober

import (
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
)

// truss is a Baseten Truss model's predict endpoint (bench_serving's truss backend):
// the completions body and stream, on another path. A model whose predict
// returns a generator is served raw instead (application/octet-stream, the
// chunks concatenated, no terminator, no counts: truss_server.py), which
// the prober reads as FormatRaw.
type truss struct{}

var _ Backend = truss{}

func (truss) NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error) {
	return newJSONRequest(o, pathTruss, completionsBody(o, p), p)
}

func (truss) Decode(ev SSEEvent) (Delta, error) {
	var d Delta
	err := decodeCompletions(ev, nil, &d)
	return d, err
}

func (truss) decodeMemo(ev SSEEvent, m *scanMemo, d *Delta) error { return decodeCompletions(ev, m, d) }

func (truss) framing() Framing { return Framing{Raw: true} }
