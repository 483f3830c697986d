package datasets

import "time"

// PieceShare exposes, to the external tests that load real tokenizers,
// which token ids random-ids text can be built from: the lead and first
// pieces (see wordPieces), or false when tok's pieces do not verify.
func PieceShare(tok Tokenizer) (lead, first []int, ok bool) {
	w := piecesFor(tok)
	if w == nil {
		return nil, nil, false
	}
	return w.lead, w.first, true
}

// NewMeasuredRandomIDs is random-ids without its pieces, so that tests
// reach the measured path a tokenizer whose pieces do not verify takes.
func NewMeasuredRandomIDs(opts Options, tok Tokenizer) (Dataset, error) {
	d, err := newRandomIDs(opts, tok)
	if err != nil {
		return nil, err
	}
	d.(*randomIDsDataset).pieces = nil
	return d, nil
}

// BuildPieces finds and verifies tok's pieces afresh, bypassing the cache,
// for the benchmark of that one-time cost.
func BuildPieces(tok Tokenizer) bool { return newWordPieces(tok) != nil }

// SetAhead sets the budget of prompts a stream makes before the run, for
// tests: a time that cannot run out makes the bytes the only limit, so
// that which prompts are made ahead does not depend on the machine's
// speed. It returns a function that restores the defaults.
func SetAhead(bytes int) (restore func()) {
	t, b := aheadTime, aheadBytes
	aheadTime, aheadBytes = time.Hour, bytes
	return func() { aheadTime, aheadBytes = t, b }
}
