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

// traceRow is what a run needs of one row of a length trace (BurstGPT,
// Azure): its time and its lengths.
type traceRow struct {
	ts      float64 // seconds, from any origin: only differences are used
	in, out int
}

// burstGPTDataset is vLLM's BurstGPTDataset (vllm/benchmarks/datasets/
// burstgpt.py): the rows of the BurstGPT CSV whose Model is GPT-4 and
// whose Response tokens are above 0, each a synthetic prompt of Request
// tokens ids. Only the lengths and times are kept.
type burstGPTDataset struct {
	opts Options
	tok  Tokenizer
	rows []traceRow
}

// burstGPTColumns are the CSV header's names of the columns read.
var burstGPTColumns = []string{"Timestamp", "Model", "Request tokens", "Response tokens"}

func newBurstGPT(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("burstgpt: the BurstGPT CSV is required (--dataset-path)")
	}
	if !(opts.MooncakeSlowdownFactor > 0) || math.IsInf(opts.MooncakeSlowdownFactor, 0) {
		return nil, fmt.Errorf("burstgpt: slowdown factor must be a finite number > 0, got %v", opts.MooncakeSlowdownFactor)
	}
	if tok.VocabSize() <= 0 {
		return nil, fmt.Errorf("burstgpt: tokenizer vocab size is %d", tok.VocabSize())
	}
	f, err := os.Open(opts.DatasetPath)
	if err != nil {
		return nil, fmt.Errorf("burstgpt: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("burstgpt %s: header: %w", opts.DatasetPath, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	idx := make([]int, len(burstGPTColumns))
	for i, name := range burstGPTColumns {
		c, ok := col[name]
		if !ok {
			return nil, fmt.Errorf("burstgpt %s: no %q column (have %q)", opts.DatasetPath, name, header)
		}
		idx[i] = c
	}
	d := &burstGPTDataset{opts: opts, tok: tok}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("burstgpt %s: %w", opts.DatasetPath, err)
		}
		if rec[idx[1]] != "GPT-4" {
			continue
		}
		ts, err1 := strconv.ParseFloat(rec[idx[0]], 64)
		in, err2 := strconv.Atoi(rec[idx[2]])
		out, err3 := strconv.Atoi(rec[idx[3]])
		if err := errors.Join(err1, err2, err3); err != nil || math.IsNaN(ts) || math.IsInf(ts, 0) || in < 0 {
			line, _ := r.FieldPos(0)
			return nil, fmt.Errorf("burstgpt %s:%d: want a finite Timestamp and token counts >= 0: %q", opts.DatasetPath, line, rec)
		}
		if out <= 0 { // a failed request, as vLLM drops it
			continue
		}
		d.rows = append(d.rows, traceRow{ts: ts, in: in, out: out})
	}
	if len(d.rows) == 0 {
		return nil, fmt.Errorf("burstgpt %s: no GPT-4 row with response tokens", opts.DatasetPath)
	}
	return d, nil
}

// Generate makes n prompts of n rows (see drawTraceRows and
// traceRowPrompts).
func (d *burstGPTDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	return traceRowPrompts("burstgpt", drawTraceRows(d.rows, n, r, d.opts.TraceOrder), d.opts, d.tok)
}

// drawTraceRows picks n rows of a length trace (all if n <= 0). As vLLM's
// BurstGPTDataset draws them with pandas' sample, without replacement
// unless n exceeds the rows; here r draws them the same way, so the rows
// differ from vLLM's for the same seed. When the run replays trace
// timestamps (inOrder) they are the first n in file order instead.
func drawTraceRows(all []traceRow, n int, r *rand.Rand, inOrder bool) []traceRow {
	if n <= 0 {
		n = len(all)
	}
	var rows []traceRow
	switch {
	case inOrder:
		rows = all[:min(n, len(all))]
	case n <= len(all):
		for _, i := range r.Perm(len(all))[:n] {
			rows = append(rows, all[i])
		}
	default:
		for range n {
			rows = append(rows, all[r.IntN(len(all))])
		}
	}
	return rows
}

// traceRowPrompts makes one prompt of each row. As vLLM's BurstGPTDataset,
// request i's prompt is the ids (i+j) mod the vocab size, j < the row's
// input tokens, decoded, and its lengths are the row's. When the run
// replays trace timestamps, each is at its row's time from the earliest
// row's, stretched by the slowdown factor.
func traceRowPrompts(name string, rows []traceRow, opts Options, tok Tokenizer) ([]Prompt, error) {
	origin := math.Inf(1)
	for _, row := range rows {
		origin = min(origin, row.ts)
	}
	vocab := tok.VocabSize()
	out := make([]Prompt, 0, len(rows))
	for i, row := range rows {
		ids := make([]int, row.in)
		for j := range ids {
			ids[j] = (i + j) % vocab
		}
		text, err := tok.Decode(ids, false)
		if err != nil {
			return nil, fmt.Errorf("%s request %d: decode: %w", name, i, err)
		}
		p := Prompt{Text: text, PromptLen: row.in, TextPromptLen: row.in, OutputLen: row.out}
		if opts.TraceOrder {
			s := (row.ts - origin) * opts.MooncakeSlowdownFactor
			p.Timestamp = time.Duration(math.Round(s * float64(time.Second)))
		}
		out = append(out, p)
	}
	return out, nil
}
