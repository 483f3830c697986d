package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a text segment before pre-tokenization. Offsets are not
// tracked: servingprobe needs ids and counts, not alignments.
type normalizer func(string) string

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch t.Type {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		// Rust lowercases with str::to_lowercase, which is Unicode's
		// default (locale-free) mapping, as strings.ToLower is.
		return strings.ToLower, nil
	case "Prepend":
		var p struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("normalizer Prepend: %w", err)
		}
		return func(s string) string {
			if s == "" { // HF leaves empty input empty
				return s
			}
			return p.Prepend + s
		}, nil
	case "Replace":
		var r struct {
			Pattern patternJSON `json:"pattern"`
			Content string      `json:"content"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		return replacer(r.Pattern, r.Content)
	case "Strip":
		var s struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("normalizer Strip: %w", err)
		}
		return func(x string) string {
			if s.Left {
				x = strings.TrimLeftFunc(x, isRustWhitespace)
			}
			if s.Right {
				x = strings.TrimRightFunc(x, isRustWhitespace)
			}
			return x
		}, nil
	case "Sequence":
		var seq struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, fmt.Errorf("normalizer Sequence: %w", err)
		}
		var fs []normalizer
		for _, n := range seq.Normalizers {
			f, err := parseNormalizer(n)
			if err != nil {
				return nil, err
			}
			if f != nil {
				fs = append(fs, f)
			}
		}
		return func(s string) string {
			for _, f := range fs {
				s = f(s)
			}
			return s
		}, nil
	default:
		return nil, unsupported("normalizer type %q", t.Type)
	}
}

// replacer builds a replace-all function for HF's Replace pattern, shared by
// the Replace normalizer and the Replace decoder.
func replacer(p patternJSON, content string) (func(string) string, error) {
	switch {
	case p.String != nil:
		old := *p.String
		return func(s string) string { return strings.ReplaceAll(s, old, content) }, nil
	case p.Regex != nil:
		re, err := regexp2.Compile(*p.Regex, regexp2.Unicode)
		if err != nil {
			return nil, fmt.Errorf("replace pattern %q: %w", *p.Regex, err)
		}
		return func(s string) string {
			out, err := re.Replace(s, content, -1, -1)
			if err != nil { // only on timeout, which is not set
				return s
			}
			return out
		}, nil
	default:
		return nil, fmt.Errorf("replace: pattern needs String or Regex")
	}
}

// isRustWhitespace is Rust's char::is_whitespace (Unicode White_Space), which
// HF uses for lstrip/rstrip and Strip. unicode.IsSpace differs on U+0085 only
// in name; both include it, and neither includes U+200B.
func isRustWhitespace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}
