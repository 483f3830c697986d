package bench

import (
	"encoding/json"
	"fmt"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
)

// EmbeddingBatch is how many inputs the embedding requests carried: the
// embedding dataset's list rows send several texts in one request
// (datasets.Prompt.Inputs), which bench_serving's table does not show
// (its embeddings layout has no such row). It is counted over the
// successful requests, as Total input tokens is, a string row counting
// one input, and exists only for a run in which some row was a list, so
// that every other run's table and record stay as they were.
type EmbeddingBatch struct {
	Requests int `json:"requests"` // successful requests
	Inputs   int `json:"inputs"`   // their inputs, added up
	Max      int `json:"max"`      // the most inputs in one of them
}

// Mean is the inputs per successful request (0 with none).
func (b *EmbeddingBatch) Mean() float64 {
	if b.Requests == 0 {
		return 0
	}
	return float64(b.Inputs) / float64(b.Requests)
}

// batchTally counts EmbeddingBatch as an Accumulator adds requests.
type batchTally struct {
	lists bool // some row, sent or failed, was a list
	b     EmbeddingBatch
}

// add counts one request built from row; ok is its success.
func (t *batchTally) add(ok bool, row datasets.Prompt) {
	if row.Inputs != nil {
		t.lists = true
	}
	if !ok {
		return
	}
	n := max(len(row.Inputs), 1)
	t.b.Requests++
	t.b.Inputs += n
	t.b.Max = max(t.b.Max, n)
}

// merge adds a shard's figures (nil: the shard had no list row).
func (t *batchTally) merge(b *EmbeddingBatch) {
	if b == nil {
		return
	}
	t.lists = true
	t.b.Requests += b.Requests
	t.b.Inputs += b.Inputs
	t.b.Max = max(t.b.Max, b.Max)
}

// summary is the run's EmbeddingBatch, nil without a list row.
func (t *batchTally) summary() *EmbeddingBatch {
	if !t.lists {
		return nil
	}
	b := t.b
	return &b
}

// writeEmbeddingBatch writes the "Inputs per request (mean/max):" row of
// servingprobe's block.
func (s *Summary) writeEmbeddingBatch(t *tableWriter) {
	if b := s.EmbeddingBatch; b != nil {
		t.row("Inputs per request (mean/max):", fmt.Sprintf("%s/%d", pyfmt.Fixed2(b.Mean()), b.Max))
	}
}

// embeddingBatchFields is the record's servingprobe.embedding_batch:
// {"requests", "inputs", "mean", "max"} (requests and inputs, so that a
// merge of shards and a record read back are exact; mean is derived).
func (s *Summary) embeddingBatchFields() []field {
	b := s.EmbeddingBatch
	if b == nil {
		return nil
	}
	return []field{{"embedding_batch", record{
		{"requests", b.Requests}, {"inputs", b.Inputs}, {"mean", b.Mean()}, {"max", b.Max},
	}}}
}

// parseEmbeddingBatch reads servingprobe.embedding_batch back, refusing a
// malformed one or a mean that does not follow from its counts.
func (s *Summary) parseEmbeddingBatch(sp map[string]json.RawMessage) error {
	raw, ok := present(sp["embedding_batch"])
	if !ok {
		return nil
	}
	var b EmbeddingBatch
	if err := json.Unmarshal(raw, &b); err != nil {
		return fmt.Errorf("servingprobe.embedding_batch: %w", err)
	}
	empty := b.Requests == 0 && b.Inputs == 0 && b.Max == 0
	fits := b.Requests > 0 && b.Max >= 1 && b.Inputs >= b.Requests && b.Inputs <= b.Max*b.Requests
	if !empty && !fits {
		return fmt.Errorf("servingprobe.embedding_batch: %d requests, %d inputs, max %d do not fit together", b.Requests, b.Inputs, b.Max)
	}
	s.EmbeddingBatch = &b
	if err := checkDerived(s.embeddingBatchFields()[0].value, raw, "mean"); err != nil {
		return fmt.Errorf("servingprobe.embedding_batch%w", err)
	}
	return nil
}
