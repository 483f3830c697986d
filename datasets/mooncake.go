package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Mooncake prompt-building constants, as in sglang's mooncake replay.
const (
	mooncakeHiPerBlock      = 128
	mooncakeQuery           = "Tell me a story based on this context."
	mooncakeDefaultOutput   = 256
	mooncakePlaceholderWord = "story"
)

type mooncakeRecord struct {
	Timestamp    float64 `json:"timestamp"` // ms
	InputLength  int     `json:"input_length"`
	OutputLength *int    `json:"output_length"`
	HashIDs      []int64 `json:"hash_ids"`
}

// mooncakeDataset replays a Mooncake FAST'25 trace.
type mooncakeDataset struct {
	opts    Options
	tok     Tokenizer
	records []mooncakeRecord
}

func newMooncake(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("mooncake: a trace path is required (this package does not download)")
	}
	if !(opts.MooncakeSlowdownFactor > 0) || math.IsInf(opts.MooncakeSlowdownFactor, 0) {
		return nil, fmt.Errorf("mooncake slowdown factor must be a finite number > 0, got %v", opts.MooncakeSlowdownFactor)
	}
	if opts.MooncakeNumRounds < 1 {
		return nil, fmt.Errorf("mooncake num rounds must be at least 1, got %d", opts.MooncakeNumRounds)
	}
	d := &mooncakeDataset{opts: opts, tok: tok}
	err := readJSONL("mooncake", opts.DatasetPath, func(line []byte) error {
		var rec mooncakeRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&rec); err != nil {
			return err
		}
		if rec.OutputLength != nil && *rec.OutputLength < 0 {
			return fmt.Errorf("output_length %d is negative", *rec.OutputLength)
		}
		d.records = append(d.records, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Generate takes the first n records (all if n <= 0), sorts them by
// timestamp and emits MooncakeNumRounds prompts per record, so it returns
// n·rounds prompts. input_length is ignored, as in sglang: prompts are
// built from hash_ids. Timestamp is the session's start offset scaled by
// the slowdown factor; every round of a session shares it (sglang sends
// the rounds back-to-back). r is not used.
func (d *mooncakeDataset) Generate(n int, _ *rand.Rand) ([]Prompt, error) {
	recs := d.records
	if n > 0 && n < len(recs) {
		recs = recs[:n]
	}
	recs = append([]mooncakeRecord(nil), recs...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Timestamp < recs[j].Timestamp })
	rounds := d.opts.MooncakeNumRounds
	out := make([]Prompt, 0, len(recs)*rounds)
	hi := strings.Repeat(" hi", mooncakeHiPerBlock)[1:]
	for i, rec := range recs {
		offsetMS := (rec.Timestamp - recs[0].Timestamp) * d.opts.MooncakeSlowdownFactor
		ts := time.Duration(math.Round(offsetMS * float64(time.Millisecond)))
		var base strings.Builder
		for _, h := range rec.HashIDs {
			base.WriteString(strconv.FormatInt(h, 10)) // no separator: sglang writes f"{id}" + "hi hi ..."
			base.WriteString(hi)
		}
		base.WriteString(mooncakeQuery)
		outLen := mooncakeDefaultOutput
		if rec.OutputLength != nil {
			outLen = *rec.OutputLength
		}
		var history []Message
		for k := range rounds {
			history = append(history, Message{Role: "user", Content: "Round " + strconv.Itoa(k+1) + ": " + base.String()})
			text := d.render(history)
			ids, err := d.tok.Encode(text, true)
			if err != nil {
				return nil, fmt.Errorf("mooncake record %d round %d: encode: %w", i, k+1, err)
			}
			out = append(out, Prompt{
				Text:          text,
				Messages:      append([]Message(nil), history...),
				PromptLen:     len(ids),
				TextPromptLen: len(ids),
				OutputLen:     outLen,
				Timestamp:     ts,
			})
			// A placeholder reply stands in for the unknown real one.
			history = append(history, Message{Role: "assistant", Content: strings.TrimSuffix(strings.Repeat(mooncakePlaceholderWord+" ", outLen), " ")})
		}
	}
	return out, nil
}

// render applies the chat template, falling back (as sglang does on any
// template error) to "role: content" lines.
func (d *mooncakeDataset) render(history []Message) string {
	if d.opts.ChatTemplate != nil {
		if s, err := d.opts.ChatTemplate.ApplyChatTemplate(history, true); err == nil {
			return s
		}
	}
	lines := make([]string, len(history))
	for i, m := range history {
		lines[i] = m.Role + ": " + m.Content
	}
	return strings.Join(lines, "\n")
}
