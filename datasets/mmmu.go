package datasets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // register decoders for DecodeConfig
	_ "image/png"
	"math/rand/v2"
	"net/http"
	"strings"
)

// mmmuRow is one row of a local MMMU export. image_1 is a data URI, bare
// base64, or the {"bytes": base64} object that HF's to_json writes.
type mmmuRow struct {
	Question string          `json:"question"`
	Image1   json.RawMessage `json:"image_1"`
}

type mmmuItem struct {
	question string
	image    string // data URI
	h, w     int
}

// mmmuDataset is bench_serving's "mmmu" from a local JSONL export.
type mmmuDataset struct {
	opts   Options
	tok    Tokenizer
	vision visionCounter
	items  []mmmuItem
}

func newMMMU(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("mmmu: a local JSONL export is required (the HF datasets library is Python-only)")
	}
	if opts.TokenizePrompt {
		return nil, errors.New("mmmu does not support tokenize prompt")
	}
	d := &mmmuDataset{opts: opts, tok: tok, vision: newVisionCounter(tok)}
	err := readJSONL("mmmu", opts.DatasetPath, func(line []byte) error {
		var row mmmuRow
		if err := json.Unmarshal(line, &row); err != nil {
			return err
		}
		if row.Question == "" {
			return errors.New("question is missing")
		}
		raw, err := mmmuImageBytes(row.Image1)
		if err != nil {
			return fmt.Errorf("image_1: %w", err)
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(raw))
		if err != nil {
			return fmt.Errorf("image_1: %w", err)
		}
		mime := "image/" + format
		if format == "" {
			mime = http.DetectContentType(raw)
		}
		d.items = append(d.items, mmmuItem{question: row.Question, image: dataURI(mime, raw), h: cfg.Height, w: cfg.Width})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func mmmuImageBytes(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("missing")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		var obj struct {
			Bytes *string `json:"bytes"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil || obj.Bytes == nil {
			return nil, errors.New(`want a data URI, base64 bytes or {"bytes": base64}`)
		}
		s = *obj.Bytes
	}
	if strings.HasPrefix(s, "data:") {
		_, payload, ok := strings.Cut(s, ";base64,")
		if !ok {
			return nil, errors.New("data URI is not base64")
		}
		s = payload
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("base64: %w", err)
	}
	return b, nil
}

// Generate picks n rows at random without replacement when the export has
// more than n (sglang's random.sample), else takes all rows in order.
func (d *mmmuDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	idx := make([]int, len(d.items))
	for i := range idx {
		idx[i] = i
	}
	if n > 0 && n < len(d.items) {
		idx = r.Perm(len(d.items))[:n]
	}
	out := make([]Prompt, len(idx))
	for k, i := range idx {
		it := d.items[i]
		text := "Question: " + it.question + "\n\nAnswer: "
		tl, err := countPrompt(d.opts, d.tok, text)
		if err != nil {
			return nil, fmt.Errorf("mmmu row %d: %w", i, err)
		}
		vl := d.vision.tokens(it.h, it.w)
		out[k] = Prompt{
			Text: text, Images: []string{it.image},
			PromptLen: tl + vl, TextPromptLen: tl, VisionPromptLen: vl,
			OutputLen: d.opts.RandomOutputLen,
		}
	}
	return out, nil
}
