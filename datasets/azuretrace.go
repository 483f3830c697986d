package datasets

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

// azureColumns are the header of Azure's LLM inference traces
// (github.com/Azure/AzurePublicDataset, AzureLLMInferenceTrace_{code,conv}
// of 2023 and their _1week versions of 2024): one row per request, its
// arrival time and its prompt and output token counts.
var azureColumns = []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}

// azureTimeLayouts are the TIMESTAMP forms of the two releases: 2023's
// "2023-11-16 18:15:46.6805900" (100 ns ticks, no zone) and 2024's
// "2024-05-10 00:00:00.009930+00:00". Go reads any number of fractional
// digits under .999999999, and none.
var azureTimeLayouts = []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"}

// azureTraceDataset is "azure-trace": neither vLLM's nor sglang's
// benchmark reads these traces, so the name follows ours (token-trace,
// agentic-trace) and the rows are made into requests as burstgpt's are
// (see traceRowPrompts): the same synthetic prompt of ContextTokens ids
// and GeneratedTokens as the output length, the same slowdown factor and
// --max-duration cap when the run replays the timestamps.
//
// The 2024 traces are a week long (tens of millions of rows, over a
// gigabyte), so the rows are not held: New reads the header and the first
// row, and Generate reads the file again and keeps only the n rows it
// returns.
type azureTraceDataset struct {
	opts Options
	tok  Tokenizer
}

func newAzureTrace(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("azure-trace: the trace CSV is required (--dataset-path)")
	}
	if !(opts.MooncakeSlowdownFactor > 0) || math.IsInf(opts.MooncakeSlowdownFactor, 0) {
		return nil, fmt.Errorf("azure-trace: slowdown factor must be a finite number > 0, got %v", opts.MooncakeSlowdownFactor)
	}
	if tok.VocabSize() <= 0 {
		return nil, fmt.Errorf("azure-trace: tokenizer vocab size is %d", tok.VocabSize())
	}
	d := &azureTraceDataset{opts: opts, tok: tok}
	// Fail before the run on a file that is not such a trace; a bad row
	// further on fails Generate, which also runs before any request.
	found := false
	if err := d.each(func(traceRow) bool { found = true; return false }); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("azure-trace %s: no row with GeneratedTokens above 0", opts.DatasetPath)
	}
	return d, nil
}

// each calls fn with every usable row in file order until fn returns
// false. A row's ts is its seconds after the file's first row (a float64
// of Unix seconds would keep only about a quarter of a microsecond). A
// row with GeneratedTokens 0 is skipped, as burstgpt skips a row with no
// response tokens: no server can be asked for zero tokens the way the
// trace's request was served.
func (d *azureTraceDataset) each(fn func(traceRow) bool) error {
	path := d.opts.DatasetPath
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("azure-trace: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return fmt.Errorf("azure-trace %s: header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	idx := make([]int, len(azureColumns))
	for i, name := range azureColumns {
		c, ok := col[name]
		if !ok {
			return fmt.Errorf("azure-trace %s: no %q column (have %q; want %q)", path, name, header, azureColumns)
		}
		idx[i] = c
	}
	var first time.Time
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("azure-trace %s: %w", path, err)
		}
		at, err1 := parseAzureTime(rec[idx[0]])
		in, err2 := strconv.Atoi(rec[idx[1]])
		out, err3 := strconv.Atoi(rec[idx[2]])
		if err := errors.Join(err1, err2, err3); err != nil || in < 0 || out < 0 {
			line, _ := r.FieldPos(0)
			return fmt.Errorf("azure-trace %s:%d: want a TIMESTAMP (2006-01-02 15:04:05.999) and token counts >= 0: %q", path, line, rec)
		}
		if first.IsZero() {
			first = at
		}
		if out == 0 {
			continue
		}
		if !fn(traceRow{ts: at.Sub(first).Seconds(), in: in, out: out}) {
			return nil
		}
	}
}

func parseAzureTime(s string) (time.Time, error) {
	var err error
	for _, layout := range azureTimeLayouts {
		var t time.Time
		if t, err = time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// Generate makes n prompts of n rows, as traceRowPrompts does. Replaying
// timestamps, they are the first n rows; otherwise n rows drawn without
// replacement (a reservoir sample, in an order r shuffles) while the
// trace has n, else with replacement. Only the rows kept are held; n <= 0
// keeps them all.
func (d *azureTraceDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	var rows []traceRow
	seen := 0
	err := d.each(func(row traceRow) bool {
		seen++
		switch {
		case n <= 0 || len(rows) < n:
			rows = append(rows, row)
		case d.opts.TraceOrder:
			return false
		default:
			if j := r.IntN(seen); j < n {
				rows[j] = row
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("azure-trace %s: no row with GeneratedTokens above 0", d.opts.DatasetPath)
	}
	switch {
	case d.opts.TraceOrder:
	case n > len(rows):
		rows = drawTraceRows(rows, n, r, false)
	default:
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	}
	return traceRowPrompts("azure-trace", rows, d.opts, d.tok)
}
