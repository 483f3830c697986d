// Package jsonscan is an allocation-free JSON scanner for the hot path of
// the prober's stream decoders: it reads one event's bytes left to right,
// validates every value it passes over, and hands out strings as the raw
// bodies of their literals (aliasing the input, no copy).
//
// It knows no protocol. The prober's per-protocol scanners (beside each
// protocol's file) walk an event with a Scanner and pick the fields they
// decode; whenever the input is unusual they answer "fall back" and the
// caller decodes the same bytes with encoding/json, which stays the
// reference. So the primitives here refuse rather than guess:
//   - Key refuses a key with an escape or a non-ASCII byte (encoding/json
//     folds such keys in ways we do not reproduce);
//   - Int refuses anything but a plain integer of at most 18 digits;
//   - nesting deeper than MaxDepth fails.
//
// FuzzSkipMatchesValid and FuzzStrMatchesJSON hold the primitives to
// encoding/json on arbitrary input.
package jsonscan
