// Package jsonscan is an allocation-free JSON scanner, standard library
// only, shared by the two places that read JSON faster than encoding/json
// can: the prober's stream decoders (one event's bytes per call, on the
// hot path) and the tokenizer's loader (a tokenizer.json's vocabulary and
// merges, megabytes at load). It reads left to right, validates every
// value it passes over, and hands out strings as the raw bodies of their
// literals (aliasing the input, no copy).
//
// It knows no protocol and no file format. Its callers walk a document
// with a Scanner and pick what they decode; whenever the input is unusual
// they answer "fall back" and decode the same bytes with encoding/json,
// which stays the reference. So the primitives here refuse rather than
// guess:
//   - Key refuses a key with an escape or a non-ASCII byte (encoding/json
//     folds such keys in ways we do not reproduce when matching a field);
//     Member, for objects keyed by data and for Skip, takes any valid key;
//   - Int refuses anything but a plain integer of at most 18 digits;
//   - nesting deeper than MaxDepth fails.
//
// FuzzSkipMatchesValid and FuzzStrMatchesJSON hold the primitives to
// encoding/json on arbitrary input.
package jsonscan
