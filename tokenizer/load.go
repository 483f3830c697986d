package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// File names looked up in a tokenizer directory, as the HF hub lays them out.
const (
	TokenizerFile       = "tokenizer.json"
	TokenizerConfigFile = "tokenizer_config.json"
)

// Load reads a tokenizer from path, which is a tokenizer.json file, a gzipped
// tokenizer.json(.gz), or a directory holding tokenizer.json (or
// tokenizer.json.gz) and, optionally, tokenizer_config.json. A file given
// directly also picks up a tokenizer_config.json that sits next to it.
func Load(path string) (*Tokenizer, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	file, dir := path, filepath.Dir(path)
	if fi.IsDir() {
		dir = path
		file = filepath.Join(path, TokenizerFile)
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			if _, gzErr := os.Stat(file + ".gz"); gzErr == nil {
				file += ".gz"
			}
		}
	}
	data, err := readMaybeGzip(file)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	var cfg []byte
	if c, err := os.ReadFile(filepath.Join(dir, TokenizerConfigFile)); err == nil {
		cfg = c
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := New(data, cfg)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", file, err)
	}
	return t, nil
}

func readMaybeGzip(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".gz") && !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// The tokenizer.json schema, as written by HF tokenizers. Only the fields we
// act on are declared; components are decoded lazily by type.
type fileJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
	Model         json.RawMessage  `json:"model"`
}

type addedTokenJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type modelJSON struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// typed peeks at a component's "type" field.
type typed struct {
	Type string `json:"type"`
}

// isNull reports whether a component is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// pattern is HF's {"String": "..."} or {"Regex": "..."}.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// parseMerges accepts both forms HF writes: ["a b", ...] (older files,
// Llama 3) and [["a","b"], ...] (tokenizers >= 0.20, Qwen3).
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	if pairs, err := scanMerges(raw); !errors.Is(err, errFallback) {
		return pairs, err
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err != nil {
		return nil, fmt.Errorf("merges: want [\"a b\"] or [[\"a\",\"b\"]]: %w", err)
	}
	pairs = make([][2]string, len(strs))
	for i, s := range strs {
		// A merge string splits at its first space; tokens never contain a
		// raw space in byte-level or Metaspace vocabularies.
		a, b, ok := strings.Cut(s, " ")
		if !ok {
			return nil, fmt.Errorf("merges[%d] %q: no space separator", i, s)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

func parseVocab(raw json.RawMessage) (map[string]int, error) {
	if isNull(raw) {
		return map[string]int{}, nil
	}
	if v, err := scanVocab(raw); !errors.Is(err, errFallback) {
		return v, err
	}
	var v map[string]int
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	return v, nil
}

// parseFile decodes tokenizer.json. The big members (model.vocab,
// model.merges) are located by rawObject and scanned by hand; the rest goes
// through encoding/json.
func parseFile(data []byte) (*fileJSON, *modelJSON, error) {
	var f fileJSON
	var m modelJSON
	top, err := rawObject(data)
	if err != nil {
		// Malformed or unusual: let encoding/json report it.
		if err := json.Unmarshal(data, &f); err != nil {
			return nil, nil, fmt.Errorf("tokenizer.json: %w", err)
		}
	} else {
		f.Normalizer, f.PreTokenizer = top["normalizer"], top["pre_tokenizer"]
		f.PostProcessor, f.Decoder, f.Model = top["post_processor"], top["decoder"], top["model"]
		if raw, ok := top["added_tokens"]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, &f.AddedTokens); err != nil {
				return nil, nil, fmt.Errorf("tokenizer.json: added_tokens: %w", err)
			}
		}
	}
	if isNull(f.Model) {
		return nil, nil, fmt.Errorf("tokenizer.json: no model")
	}
	members, err := rawObject(f.Model)
	if err != nil {
		if err := json.Unmarshal(f.Model, &m); err != nil {
			return nil, nil, fmt.Errorf("tokenizer.json: model: %w", err)
		}
	} else {
		vocab, merges := members["vocab"], members["merges"]
		delete(members, "vocab")
		delete(members, "merges")
		small, err := json.Marshal(members) // RawMessage values re-emit verbatim
		if err == nil {
			err = json.Unmarshal(small, &m)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("tokenizer.json: model: %w", err)
		}
		m.Vocab, m.Merges = vocab, merges
	}
	if m.Type != "BPE" && m.Type != "" {
		return nil, nil, fmt.Errorf("unsupported model type %q", m.Type)
	}
	if m.Type == "" && m.Merges == nil {
		return nil, nil, fmt.Errorf("unsupported model without type")
	}
	return &f, &m, nil
}
