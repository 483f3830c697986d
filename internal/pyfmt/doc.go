// Package pyfmt writes values as Python writes them, for the outputs that
// must match a Python tool byte for byte: repr(float) and format(f, ".2f")
// (Float, Fixed2), json.dumps with its defaults (Encoder, the bench_serving
// JSONL record), and repr() of None, bool, int, float, str, list and dict
// (AppendRepr, bench_serving's --print-requests dataclass reprs).
//
// It is a ground-floor primitive: it imports only the standard library, so
// that every package that writes a Python-compatible byte (prober's
// request bodies, bench's table, record and request log, cmd's
// flag defaults) shares one formatter and none of them imports another
// for it.
package pyfmt
