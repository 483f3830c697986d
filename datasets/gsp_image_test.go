package datasets_test

import (
	"encoding/base64"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
)

func gspOpts(g, p, s, q, o, turns int, ratio float64) datasets.Options {
	opts := datasets.DefaultOptions()
	opts.GSPNumGroups, opts.GSPPromptsPerGroup, opts.GSPSystemPromptLen = g, p, s
	opts.GSPQuestionLen, opts.GSPOutputLen, opts.GSPNumTurns, opts.GSPRangeRatio = q, o, turns, ratio
	return opts
}

func TestGSPExactLengths(t *testing.T) {
	tok := qwen3(t)
	o := gspOpts(4, 5, 200, 30, 16, 3, 1.0)
	o.GSPOrdered, o.GSPSendRoutingKey, o.GSPRoutingKeyPrefix = true, true, "run1"
	ps := generate(t, mustNew(t, "generated-shared-prefix", o, tok), 1, 1) // n is ignored
	if len(ps) != 20 {
		t.Fatalf("got %d prompts, want G·P = 20", len(ps))
	}
	for i, p := range ps {
		g := i / 5
		sys, q, ok := strings.Cut(p.Text, "\n\n")
		if !ok {
			t.Fatalf("prompt %d has no system/question separator", i)
		}
		if n := count(t, tok, sys, false); n != 200 {
			t.Errorf("prompt %d: system prompt has %d tokens, want 200", i, n)
		}
		if n := count(t, tok, q, false); n != 30 {
			t.Errorf("prompt %d: question has %d tokens, want 30", i, n)
		}
		if first, _, _ := strings.Cut(ps[g*5].Text, "\n\n"); first != sys {
			t.Errorf("prompt %d does not share group %d's system prompt", i, g)
		}
		if p.PromptLen != count(t, tok, p.Text, true) || p.OutputLen != 16 {
			t.Errorf("prompt %d: PromptLen %d OutputLen %d", i, p.PromptLen, p.OutputLen)
		}
		if want := "run1_" + itoa(g); p.RoutingKey != want {
			t.Errorf("prompt %d: RoutingKey %q, want %q", i, p.RoutingKey, want)
		}
		if len(p.Messages) != 3 || p.Messages[0].Content != p.Text {
			t.Fatalf("prompt %d: %d messages, want 3 with the first equal to Text", i, len(p.Messages))
		}
		for _, m := range p.Messages[1:] {
			if n := count(t, tok, m.Content, false); m.Role != "user" || n != 30 {
				t.Errorf("prompt %d: later turn %s with %d tokens, want user with 30", i, m.Role, n)
			}
		}
	}
}

func TestGSPBoundsAndOptions(t *testing.T) {
	tok := qwen3(t)
	o := gspOpts(8, 50, 20, 10, 12, 1, 0.0)
	o.GSPFastPrepare = true
	ps := generate(t, mustNew(t, "generated-shared-prefix", o, tok), 0, 5)
	seen := map[int]bool{}
	for _, p := range ps {
		if p.PromptLen != 1 {
			t.Fatalf("fast prepare: PromptLen %d, want 1", p.PromptLen)
		}
		if p.OutputLen < 1 || p.OutputLen > 12 {
			t.Fatalf("OutputLen %d outside [1, 12]", p.OutputLen)
		}
		seen[p.OutputLen] = true
		sys, q, _ := strings.Cut(p.Text, "\n\n")
		if n, m := count(t, tok, sys, false), count(t, tok, q, false); n < 1 || n > 20 || m < 1 || m > 10 {
			t.Fatalf("system %d / question %d tokens outside [1,20]/[1,10]", n, m)
		}
	}
	if len(seen) != 12 {
		t.Errorf("saw %d output lengths, want all 12", len(seen))
	}

	// Zipf: group 0 is the hottest; every slot still exists.
	z := gspOpts(4, 250, 8, 4, 4, 1, 1.0)
	z.GSPGroupDistribution, z.GSPZipfAlpha, z.GSPSendRoutingKey = "zipf", 1.5, true
	counts := map[string]int{}
	for _, p := range generate(t, mustNew(t, "generated-shared-prefix", z, tok), 0, 5) {
		counts[p.RoutingKey]++
	}
	// Expected shares for α=1.5 over 4 ranks: 0.56, 0.20, 0.11, 0.07.
	if counts["gsp_0"] < 450 || counts["gsp_0"] > 670 || counts["gsp_3"] > 120 || counts["gsp_0"]+counts["gsp_1"]+counts["gsp_2"]+counts["gsp_3"] != 1000 {
		t.Errorf("zipf group counts %v, want about 560/200/110/70", counts)
	}

	bad := []struct {
		mod  func(*datasets.Options)
		want string
	}{
		{func(o *datasets.Options) { o.GSPGroupDistribution = "zipf" }, "zipf alpha"},
		{func(o *datasets.Options) { o.GSPZipfAlpha = 2 }, "only meaningful"},
		{func(o *datasets.Options) { o.GSPNumGroups = 0 }, "num groups"},
		{func(o *datasets.Options) { o.GSPGroupDistribution = "normal" }, "uniform or zipf"},
		{func(o *datasets.Options) { o.TokenizePrompt = true }, "tokenize prompt"},
	}
	for _, b := range bad {
		o := datasets.DefaultOptions()
		b.mod(&o)
		if _, err := datasets.New("generated-shared-prefix", o, tok); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("error = %v, want one containing %q", err, b.want)
		}
	}
}

func TestImage(t *testing.T) {
	tok := qwen3(t)
	cases := []struct {
		res, format, content string
		wantH, wantW         int
		wantVision           int // per image, Qwen2-VL rule
	}{
		{"360p", "jpeg", "random", 360, 640, 13*23 + 2},
		{"100x60", "png", "blank", 100, 60, 4*2 + 2},
		{"1080p", "jpeg", "blank", 1080, 1920, 39*69 + 2},
	}
	for _, tc := range cases {
		t.Run(tc.res+"/"+tc.format+"/"+tc.content, func(t *testing.T) {
			o := randomOpts("", 50, 20, 1.0)
			o.ImageResolution, o.ImageFormat, o.ImageContent, o.ImageCount = tc.res, tc.format, tc.content, 2
			ps := generate(t, mustNew(t, "image", o, tok), 3, 1)
			for i, p := range ps {
				p, err := p.WithImages() // the images its request sends
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Images) != 2 {
					t.Fatalf("prompt %d: %d images, want 2", i, len(p.Images))
				}
				prefix := "data:image/" + tc.format + ";base64,"
				b64, ok := strings.CutPrefix(p.Images[0], prefix)
				if !ok {
					t.Fatalf("prompt %d: image does not start with %q", i, prefix)
				}
				raw, err := base64.StdEncoding.DecodeString(b64)
				if err != nil {
					t.Fatal(err)
				}
				cfg, format, err := image.DecodeConfig(strings.NewReader(string(raw)))
				if err != nil || format != tc.format || cfg.Height != tc.wantH || cfg.Width != tc.wantW {
					t.Fatalf("prompt %d: image %s %dx%d (%v), want %s %dx%d", i, format, cfg.Height, cfg.Width, err, tc.format, tc.wantH, tc.wantW)
				}
				if n := count(t, tok, p.Text, false); n != 50 {
					t.Errorf("prompt %d: text has %d tokens, want 50", i, n)
				}
				if p.VisionPromptLen != 2*tc.wantVision || p.PromptLen != p.TextPromptLen+p.VisionPromptLen || p.TextPromptLen != 50 {
					t.Errorf("prompt %d: lengths %d = %d + %d, want vision %d", i, p.PromptLen, p.TextPromptLen, p.VisionPromptLen, 2*tc.wantVision)
				}
			}
		})
	}
	t.Run("random count and resolution", func(t *testing.T) {
		o := randomOpts("", 10, 5, 0.0)
		o.ImageResolution, o.ImageCount, o.RandomImageCount = "random:28x28-56x84", 3, true
		counts := map[int]bool{}
		for _, p := range generate(t, mustNew(t, "image", o, tok), 60, 2) {
			counts[len(p.LazyImages.Sizes)] = true
			if p.TextPromptLen < 1 || p.TextPromptLen > 10 || p.OutputLen < 1 || p.OutputLen > 5 {
				t.Fatalf("lengths %d/%d outside [1,10]/[1,5]", p.TextPromptLen, p.OutputLen)
			}
		}
		if len(counts) != 3 {
			t.Errorf("image counts seen %v, want 1, 2 and 3", counts)
		}
	})
	for _, bad := range []string{"1080", "axb", "random:10x10-5x5", "0x10"} {
		o := datasets.DefaultOptions()
		o.ImageResolution = bad
		if _, err := datasets.New("image", o, tok); err == nil || !strings.Contains(err.Error(), "resolution") {
			t.Errorf("resolution %q: error = %v", bad, err)
		}
	}
}

// BenchmarkImage1080p measures one random 1080p JPEG per prompt.
func BenchmarkImage1080p(b *testing.B) {
	o := randomOpts("", 32, 8, 1.0)
	d := mustNew(b, "image", o, qwen3(b))
	for b.Loop() {
		if _, err := d.Generate(1, seeded(1)); err != nil {
			b.Fatal(err)
		}
	}
}
