package datasets

import (
	"errors"
	"fmt"
	"strings"
)

// newSpecBench is vLLM's spec_bench (vllm/benchmarks/datasets:
// SpecBench, a CustomDataset): the Spec-Bench question.jsonl at
// --dataset-path, rows of {"category", "turns"}, the first turn of each
// row rendered with the chat template, --spec-bench-category keeping one
// category, --spec-bench-output-len tokens asked of each. The rows are
// speed-bench's shape, so it is read by the same code.
func newSpecBench(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("spec_bench: --dataset-path must point to Spec-Bench's question.jsonl (data/spec_bench/question.jsonl in its repository); nothing is downloaded")
	}
	opts.SpeedBenchCategory = opts.SpecBenchCategory
	opts.SpeedBenchOutputLen = opts.SpecBenchOutputLen
	d, err := newSpeedBench(opts, tok)
	if err != nil {
		return nil, fmt.Errorf("spec_bench: %s", strings.TrimPrefix(err.Error(), "speed-bench: "))
	}
	return d, nil
}
