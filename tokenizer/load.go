package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	if err := notGGUF(file); err != nil {
		return nil, err
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

// ggufMagic opens every GGUF file (llama.cpp's model format).
const ggufMagic = "GGUF"

// notGGUF refuses a GGUF model file before it is read whole (it is the
// model's weights, gigabytes): its vocabulary is in GGUF's own binary
// format, not a tokenizer.json, and read as JSON it gave only a syntax
// error at its first byte.
func notGGUF(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // readMaybeGzip reports it
	}
	defer f.Close()
	var magic [len(ggufMagic)]byte
	if n, _ := io.ReadFull(f, magic[:]); n == len(magic) && string(magic[:]) == ggufMagic {
		return fmt.Errorf("load tokenizer: %s is a GGUF model file, not a tokenizer.json: servingprobe does not read the vocabulary GGUF embeds; "+
			"pass the tokenizer.json of the model it was converted from (its Hugging Face id, such as --tokenizer Qwen/Qwen3-0.6B, "+
			"or a directory or file holding tokenizer.json)", path)
	}
	return nil
}

func readMaybeGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var magic [2]byte
	n, _ := f.ReadAt(magic[:], 0)
	if !strings.HasSuffix(path, ".gz") && !bytes.HasPrefix(magic[:n], []byte{0x1f, 0x8b}) {
		return os.ReadFile(path) // sized from the file; io.ReadAll would regrow
	}
	data, err := gunzip(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// gunzip decompresses f into one buffer sized from the gzip trailer, which
// holds the uncompressed length (mod 2^32, of the last member; it is only a
// hint). io.ReadAll would regrow its buffer to 11 MB for Qwen3 and leave
// about as much again as garbage, which raises the process's peak RSS.
func gunzip(f fs.File) ([]byte, error) {
	hint := 0
	if ra, ok := f.(io.ReaderAt); ok {
		if fi, err := f.Stat(); err == nil && fi.Size() >= 18 {
			var tail [4]byte
			if _, err := ra.ReadAt(tail[:], fi.Size()-4); err == nil {
				hint = int(min(binary.LittleEndian.Uint32(tail[:]), maxGzipHint))
			}
		}
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer(make([]byte, 0, hint+bytes.MinRead))
	if _, err := buf.ReadFrom(zr); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxGzipHint caps what a trailer can make gunzip allocate up front; the
// largest tokenizer.json files are about 35 MB.
const maxGzipHint = 256 << 20

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

// parseVocab builds the vocabulary table.
func parseVocab(raw json.RawMessage) (*vocabTable, error) {
	var b vocabBuilder
	if isNull(raw) {
		return b.build(), nil
	}
	// Sized to avoid regrowing: Qwen3's tokens average 9 bytes, with their
	// JSON entries 24.
	b.keys = make([]byte, 0, len(raw)/2)
	b.ents = make([]vocabEnt, 0, len(raw)/20)
	if err := scanVocab(raw, &b); !errors.Is(err, errFallback) {
		if err != nil {
			return nil, err
		}
		return b.build(), nil
	}
	var v map[string]int
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	b = vocabBuilder{}
	for tok, id := range v {
		if err := b.add([]byte(tok), id); err != nil {
			return nil, err
		}
	}
	return b.build(), nil
}

// parseMerges builds the merge table. It accepts both forms HF writes:
// ["a b", ...] (older files, Llama 3) and [["a","b"], ...] (tokenizers >=
// 0.20, Qwen3).
func parseMerges(raw json.RawMessage, vocab *vocabTable) (*mergeTable, error) {
	maxID := len(vocab.offs) - 2
	if isNull(raw) {
		return buildMerges(nil, nil, maxID), nil
	}
	// Files usually hold about one merge per token; sizing for that avoids
	// regrowing and lets buildMerges index pairs by merged id in place.
	pairs := make([]uint64, 0, vocab.n)
	newIDs := make([]int32, 0, vocab.n)
	var cat []byte
	add := func(rank int, a, b []byte) error {
		l, okL := vocab.idBytes(a)
		r, okR := vocab.idBytes(b)
		cat = append(append(cat[:0], a...), b...)
		n, okN := vocab.idBytes(cat)
		if !okL || !okR || !okN {
			return fmt.Errorf("merges[%d] %q %q: token not in vocab", rank, a, b)
		}
		pairs = append(pairs, pairKey(int32(l), int32(r)))
		newIDs = append(newIDs, int32(n))
		return nil
	}
	err := scanMerges(raw, add)
	if errors.Is(err, errFallback) {
		pairs, newIDs = pairs[:0], newIDs[:0]
		err = fallbackMerges(raw, add)
	}
	if err != nil {
		return nil, err
	}
	return buildMerges(pairs, newIDs, maxID), nil
}

func fallbackMerges(raw json.RawMessage, add func(rank int, a, b []byte) error) error {
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		for i, p := range pairs {
			if err := add(i, []byte(p[0]), []byte(p[1])); err != nil {
				return err
			}
		}
		return nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err != nil {
		return fmt.Errorf("merges: want [\"a b\"] or [[\"a\",\"b\"]]: %w", err)
	}
	for i, s := range strs {
		// A merge string splits at its first space; tokens never contain a
		// raw space in byte-level or Metaspace vocabularies.
		a, b, ok := strings.Cut(s, " ")
		if !ok {
			return fmt.Errorf("merges[%d] %q: no space separator", i, s)
		}
		if err := add(i, []byte(a), []byte(b)); err != nil {
			return err
		}
	}
	return nil
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
		return nil, nil, unsupported("model type %q", m.Type)
	}
	if m.Type == "" && m.Merges == nil {
		return nil, nil, unsupported("model without type")
	}
	return &f, &m, nil
}
