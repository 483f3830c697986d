package tokenizer

import (
	"encoding/json"
	"fmt"
)

// Config is the part of tokenizer_config.json that changes encoding,
// decoding or chat rendering.
type Config struct {
	BOSToken      string
	EOSToken      string
	PadToken      string
	UnkToken      string
	AddBOSToken   *bool // nil when the file does not say
	AddEOSToken   *bool
	ChatTemplate  string // the default template; see ChatTemplates for named ones
	ChatTemplates map[string]string
	// CleanUpTokenizationSpaces applies transformers' clean-up on decode
	// (" ." -> ".", " n't" -> "n't", ...).
	CleanUpTokenizationSpaces bool
	TokenizerClass            string
	ModelMaxLength            float64
}

type configJSON struct {
	BOSToken                  json.RawMessage `json:"bos_token"`
	EOSToken                  json.RawMessage `json:"eos_token"`
	PadToken                  json.RawMessage `json:"pad_token"`
	UnkToken                  json.RawMessage `json:"unk_token"`
	AddBOSToken               *bool           `json:"add_bos_token"`
	AddEOSToken               *bool           `json:"add_eos_token"`
	ChatTemplate              json.RawMessage `json:"chat_template"`
	CleanUpTokenizationSpaces *bool           `json:"clean_up_tokenization_spaces"`
	TokenizerClass            string          `json:"tokenizer_class"`
	ModelMaxLength            float64         `json:"model_max_length"`
}

// ParseConfig parses tokenizer_config.json.
func ParseConfig(data []byte) (*Config, error) {
	var cj configJSON
	if err := json.Unmarshal(data, &cj); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	c := &Config{
		AddBOSToken:    cj.AddBOSToken,
		AddEOSToken:    cj.AddEOSToken,
		TokenizerClass: cj.TokenizerClass,
		ModelMaxLength: cj.ModelMaxLength,
	}
	// transformers' default for clean_up_tokenization_spaces was true until
	// v4.45 and files written since carry the key explicitly.
	c.CleanUpTokenizationSpaces = cj.CleanUpTokenizationSpaces != nil && *cj.CleanUpTokenizationSpaces
	var err error
	for _, f := range []struct {
		raw json.RawMessage
		dst *string
		key string
	}{
		{cj.BOSToken, &c.BOSToken, "bos_token"},
		{cj.EOSToken, &c.EOSToken, "eos_token"},
		{cj.PadToken, &c.PadToken, "pad_token"},
		{cj.UnkToken, &c.UnkToken, "unk_token"},
	} {
		if *f.dst, err = tokenString(f.raw); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: %s: %w", f.key, err)
		}
	}
	if !isNull(cj.ChatTemplate) {
		// Either a string or a list of {"name","template"} objects.
		var s string
		if err := json.Unmarshal(cj.ChatTemplate, &s); err == nil {
			c.ChatTemplate = s
		} else {
			var named []struct {
				Name     string `json:"name"`
				Template string `json:"template"`
			}
			if err := json.Unmarshal(cj.ChatTemplate, &named); err != nil {
				return nil, fmt.Errorf("tokenizer_config.json: chat_template: %w", err)
			}
			c.ChatTemplates = make(map[string]string, len(named))
			for _, n := range named {
				c.ChatTemplates[n.Name] = n.Template
			}
			c.ChatTemplate = c.ChatTemplates["default"]
		}
	}
	return c, nil
}

// tokenString reads a special token written either as a string or as an
// AddedToken object ({"__type": "AddedToken", "content": "<s>", ...}).
func tokenString(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", err
	}
	return obj.Content, nil
}
