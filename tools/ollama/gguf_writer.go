//go:build ignore

// Writes a tiny random-weight llama-architecture GGUF using a real HF tokenizer.json vocab.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
)

const (
	tU32  = 4
	tI32  = 5
	tF32  = 6
	tBool = 7
	tStr  = 8
	tArr  = 9
)

type kv struct {
	k string
	v any
}

type w struct{ *bufio.Writer }

func (w w) u32(x uint32) { binary.Write(w, binary.LittleEndian, x) }
func (w w) u64(x uint64) { binary.Write(w, binary.LittleEndian, x) }
func (w w) str(s string) { w.u64(uint64(len(s))); w.WriteString(s) }
func (w w) val(v any) {
	switch x := v.(type) {
	case uint32:
		w.u32(tU32)
		w.u32(x)
	case int32:
		w.u32(tI32)
		binary.Write(w, binary.LittleEndian, x)
	case float32:
		w.u32(tF32)
		binary.Write(w, binary.LittleEndian, x)
	case bool:
		w.u32(tBool)
		if x {
			w.WriteByte(1)
		} else {
			w.WriteByte(0)
		}
	case string:
		w.u32(tStr)
		w.str(x)
	case []string:
		w.u32(tArr)
		w.u32(tStr)
		w.u64(uint64(len(x)))
		for _, s := range x {
			w.str(s)
		}
	case []int32:
		w.u32(tArr)
		w.u32(tI32)
		w.u64(uint64(len(x)))
		for _, s := range x {
			binary.Write(w, binary.LittleEndian, s)
		}
	default:
		panic("type")
	}
}

type tensor struct {
	name string
	ne   []uint64
}

func main() {
	tj := flag.String("tokenizer", "", "tokenizer.json")
	tc := flag.String("config", "", "tokenizer_config.json")
	out := flag.String("o", "tiny.gguf", "output")
	pre := flag.String("pre", "llama-bpe", "tokenizer.ggml.pre")
	nEmbd := flag.Int("embd", 64, "")
	nLayer := flag.Int("layers", 2, "")
	flag.Parse()

	var t struct {
		AddedTokens []struct {
			ID      int32  `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Vocab  map[string]int32  `json:"vocab"`
			Merges []json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	b, _ := os.ReadFile(*tj)
	if err := json.Unmarshal(b, &t); err != nil {
		panic(err)
	}
	var cfg map[string]any
	b, _ = os.ReadFile(*tc)
	json.Unmarshal(b, &cfg)

	n := len(t.Model.Vocab)
	for _, a := range t.AddedTokens {
		if int(a.ID) >= n {
			n = int(a.ID) + 1
		}
	}
	tokens := make([]string, n)
	types := make([]int32, n)
	for s, id := range t.Model.Vocab {
		tokens[id] = s
		types[id] = 1
	}
	ids := map[string]int32{}
	for _, a := range t.AddedTokens {
		tokens[a.ID] = a.Content
		ids[a.Content] = a.ID
		if a.Special {
			types[a.ID] = 3
		} else {
			types[a.ID] = 4
		}
	}
	for i := range tokens {
		if tokens[i] == "" {
			tokens[i] = "[PAD" + string(rune('0'+i%10)) + "]"
			types[i] = 5
		}
	}
	merges := make([]string, 0, len(t.Model.Merges))
	for _, m := range t.Model.Merges {
		var s string
		if json.Unmarshal(m, &s) == nil {
			merges = append(merges, s)
			continue
		}
		var p []string
		json.Unmarshal(m, &p)
		merges = append(merges, strings.Join(p, " "))
	}
	tokStr := func(k string) string {
		switch v := cfg[k].(type) {
		case string:
			return v
		case map[string]any:
			s, _ := v["content"].(string)
			return s
		}
		return ""
	}
	E, H, F := *nEmbd, 4, *nEmbd*2
	kvs := []kv{
		{"general.architecture", "llama"},
		{"general.name", "tiny-random-llama"},
		{"general.alignment", uint32(32)},
		{"llama.block_count", uint32(*nLayer)},
		{"llama.context_length", uint32(4096)},
		{"llama.embedding_length", uint32(E)},
		{"llama.feed_forward_length", uint32(F)},
		{"llama.attention.head_count", uint32(H)},
		{"llama.attention.head_count_kv", uint32(H)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.rope.dimension_count", uint32(E / H)},
		{"llama.vocab_size", uint32(n)},
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", *pre},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.merges", merges},
	}
	if id, ok := ids[tokStr("bos_token")]; ok {
		kvs = append(kvs, kv{"tokenizer.ggml.bos_token_id", uint32(id)}, kv{"tokenizer.ggml.add_bos_token", true})
	}
	if id, ok := ids[tokStr("eos_token")]; ok {
		kvs = append(kvs, kv{"tokenizer.ggml.eos_token_id", uint32(id)})
	}
	if ct, ok := cfg["chat_template"].(string); ok {
		kvs = append(kvs, kv{"tokenizer.chat_template", ct})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })

	ts := []tensor{{"token_embd.weight", []uint64{uint64(E), uint64(n)}}, {"output_norm.weight", []uint64{uint64(E)}}, {"output.weight", []uint64{uint64(E), uint64(n)}}}
	for l := 0; l < *nLayer; l++ {
		p := "blk." + itoa(l) + "."
		ts = append(ts,
			tensor{p + "attn_norm.weight", []uint64{uint64(E)}},
			tensor{p + "attn_q.weight", []uint64{uint64(E), uint64(E)}},
			tensor{p + "attn_k.weight", []uint64{uint64(E), uint64(E)}},
			tensor{p + "attn_v.weight", []uint64{uint64(E), uint64(E)}},
			tensor{p + "attn_output.weight", []uint64{uint64(E), uint64(E)}},
			tensor{p + "ffn_norm.weight", []uint64{uint64(E)}},
			tensor{p + "ffn_gate.weight", []uint64{uint64(E), uint64(F)}},
			tensor{p + "ffn_up.weight", []uint64{uint64(E), uint64(F)}},
			tensor{p + "ffn_down.weight", []uint64{uint64(F), uint64(E)}},
		)
	}
	f, _ := os.Create(*out)
	defer f.Close()
	bw := w{bufio.NewWriterSize(f, 1<<20)}
	bw.WriteString("GGUF")
	bw.u32(3)
	bw.u64(uint64(len(ts)))
	bw.u64(uint64(len(kvs)))
	for _, e := range kvs {
		bw.str(e.k)
		bw.val(e.v)
	}
	var off uint64
	sizes := make([]uint64, len(ts))
	for i, x := range ts {
		cnt := uint64(1)
		for _, d := range x.ne {
			cnt *= d
		}
		sizes[i] = cnt
		bw.str(x.name)
		bw.u32(uint32(len(x.ne)))
		for _, d := range x.ne {
			bw.u64(d)
		}
		bw.u32(0) // F32
		bw.u64(off)
		off += cnt * 4
		off = (off + 31) / 32 * 32
	}
	bw.Flush()
	pos, _ := f.Seek(0, 1)
	pad := (32 - pos%32) % 32
	bw.Write(make([]byte, pad))
	r := rand.New(rand.NewPCG(1, 2))
	var written uint64
	for i, x := range ts {
		norm := strings.HasSuffix(x.name, "norm.weight")
		buf := make([]byte, 4)
		for j := uint64(0); j < sizes[i]; j++ {
			v := float32(r.NormFloat64() * 0.05)
			if norm {
				v = 1
			}
			binary.LittleEndian.PutUint32(buf, math.Float32bits(v))
			bw.Write(buf)
		}
		written += sizes[i] * 4
		p := (32 - written%32) % 32
		bw.Write(make([]byte, p))
		written += p
	}
	bw.Flush()
}

func itoa(i int) string { return strings.TrimSpace(strings.Replace(string(rune('0'+i)), "", "", 0)) }
