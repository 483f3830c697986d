package tokenizer

import (
	"encoding/json"
	"fmt"
)

// template is a single-sequence post-processor: ids to put before and after
// the encoded text when special tokens are requested. Pairs are not needed
// by servingprobe and are not supported.
type template struct {
	prefix, suffix []int
}

func (t template) apply(ids []int) []int {
	if len(t.prefix) == 0 && len(t.suffix) == 0 {
		return ids
	}
	out := make([]int, 0, len(t.prefix)+len(ids)+len(t.suffix))
	out = append(out, t.prefix...)
	out = append(out, ids...)
	return append(out, t.suffix...)
}

func (t template) count() int { return len(t.prefix) + len(t.suffix) }

func parsePostProcessor(raw json.RawMessage) (template, error) {
	var tpl template
	if isNull(raw) {
		return tpl, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return tpl, fmt.Errorf("post_processor: %w", err)
	}
	switch t.Type {
	case "ByteLevel":
		return tpl, nil // only trims offsets
	case "TemplateProcessing":
		var tp struct {
			Single []struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			} `json:"single"`
			SpecialTokens map[string]struct {
				IDs []int `json:"ids"`
			} `json:"special_tokens"`
		}
		if err := json.Unmarshal(raw, &tp); err != nil {
			return tpl, fmt.Errorf("post_processor TemplateProcessing: %w", err)
		}
		seenSeq := false
		for _, p := range tp.Single {
			switch {
			case p.Sequence != nil:
				seenSeq = true
			case p.SpecialToken != nil:
				st, ok := tp.SpecialTokens[p.SpecialToken.ID]
				if !ok {
					return tpl, fmt.Errorf("post_processor: special token %q not in special_tokens", p.SpecialToken.ID)
				}
				if seenSeq {
					tpl.suffix = append(tpl.suffix, st.IDs...)
				} else {
					tpl.prefix = append(tpl.prefix, st.IDs...)
				}
			}
		}
		return tpl, nil
	case "RobertaProcessing", "BertProcessing":
		var rp struct {
			Sep [2]json.RawMessage `json:"sep"`
			Cls [2]json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &rp); err != nil {
			return tpl, fmt.Errorf("post_processor %s: %w", t.Type, err)
		}
		var sep, cls int
		if err := json.Unmarshal(rp.Sep[1], &sep); err != nil {
			return tpl, fmt.Errorf("post_processor %s: sep: %w", t.Type, err)
		}
		if err := json.Unmarshal(rp.Cls[1], &cls); err != nil {
			return tpl, fmt.Errorf("post_processor %s: cls: %w", t.Type, err)
		}
		return template{prefix: []int{cls}, suffix: []int{sep}}, nil
	case "Sequence":
		var seq struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return tpl, fmt.Errorf("post_processor Sequence: %w", err)
		}
		for _, p := range seq.Processors {
			sub, err := parsePostProcessor(p)
			if err != nil {
				return tpl, err
			}
			// Each processor wraps the output of the previous one.
			tpl.prefix = append(append([]int(nil), sub.prefix...), tpl.prefix...)
			tpl.suffix = append(tpl.suffix, sub.suffix...)
		}
		return tpl, nil
	default:
		return tpl, unsupported("post_processor type %q", t.Type)
	}
}
