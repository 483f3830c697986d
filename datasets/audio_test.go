package datasets_test

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestAudio holds the audio dataset to sglang's (benchmark/datasets/
// audio.py and its tests): each request's clips are complete WAV files,
// mono 16-bit at 16 kHz, --audio-duration long (0.05 s: 800 frames), no
// two alike; the text is "Describe the audio." ("Write a short
// description." with no clip); the prompt length is left to the server's
// usage (0); the output length is --random-output-len. The clips are made
// only when the request is built, the same ones every time.
func TestAudio(t *testing.T) {
	o := datasets.DefaultOptions()
	o.AudioDuration, o.AudioCount, o.RandomOutputLen = 0.05, 2, 19
	d, err := datasets.New("audio", o, qwen3(t))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := d.Generate(3, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, p := range ps {
		if p.Audio != nil || p.LazyAudio == nil {
			t.Fatalf("prompt %d: clips made with the prompt set (%d), want them lazy", i, len(p.Audio))
		}
		if p.Text != "Describe the audio." || p.PromptLen != 0 || p.OutputLen != 19 {
			t.Errorf("prompt %d: %q, prompt length %d, output %d; want sglang's text, 0, 19", i, p.Text, p.PromptLen, p.OutputLen)
		}
		if got := p.LazyAudio.Duration(); math.Abs(got-0.1) > 1e-9 {
			t.Errorf("prompt %d: %v s of audio, want 0.1", i, got)
		}
		q, err := p.WithImages()
		if err != nil {
			t.Fatal(err)
		}
		again, _ := p.WithImages()
		if len(q.Audio) != 2 {
			t.Fatalf("prompt %d: %d clips, want 2", i, len(q.Audio))
		}
		for k, clip := range q.Audio {
			if again.Audio[k] != clip {
				t.Errorf("prompt %d clip %d: made twice, differs", i, k)
			}
			if seen[clip] {
				t.Errorf("prompt %d clip %d: the same noise as an earlier clip", i, k)
			}
			seen[clip] = true
			if uint64(len(clip)) != p.LazyAudio.Bytes()/2 {
				t.Errorf("prompt %d clip %d: %d bytes, Bytes says %d for 2", i, k, len(clip), p.LazyAudio.Bytes())
			}
			checkWAV(t, clip, 800)
		}
	}

	o.AudioCount, o.RandomAudioCount = 3, true
	d, _ = datasets.New("audio", o, qwen3(t))
	ps, _ = d.Generate(200, rand.New(rand.NewPCG(1, 2)))
	counts := map[int]int{}
	for _, p := range ps {
		counts[p.LazyAudio.Count]++
	}
	if len(counts) != 3 || counts[1] == 0 || counts[2] == 0 || counts[3] == 0 {
		t.Errorf("--random-audio-count 3: clip counts %v, want each of 1, 2 and 3", counts)
	}

	o.AudioCount, o.RandomAudioCount = 0, true
	d, _ = datasets.New("audio", o, qwen3(t))
	ps, _ = d.Generate(1, rand.New(rand.NewPCG(1, 2)))
	q, _ := ps[0].WithImages()
	if q.Audio == nil || len(q.Audio) != 0 || q.Text != "Write a short description." {
		t.Errorf("--audio-count 0: clips %v, text %q; want none, set (the text as a part), and sglang's other text", q.Audio, q.Text)
	}
}

// checkWAV decodes a base64 clip and checks its header and length.
func checkWAV(t *testing.T, clip string, frames int) {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(clip)
	if err != nil {
		t.Fatalf("clip is not base64: %v", err)
	}
	le := binary.LittleEndian
	if len(b) != 44+2*frames || string(b[0:4]) != "RIFF" || string(b[8:16]) != "WAVEfmt " || string(b[36:40]) != "data" {
		t.Fatalf("clip of %d bytes, header %q: want a 44-byte RIFF/WAVE/fmt/data header and %d frames", len(b), b[:min(len(b), 44)], frames)
	}
	if le.Uint32(b[4:]) != uint32(len(b)-8) || le.Uint16(b[20:]) != 1 || le.Uint16(b[22:]) != 1 ||
		le.Uint32(b[24:]) != 16000 || le.Uint32(b[28:]) != 32000 || le.Uint16(b[32:]) != 2 || le.Uint16(b[34:]) != 16 ||
		le.Uint32(b[40:]) != uint32(2*frames) {
		t.Errorf("header %x: want PCM, mono, 16 kHz, 16-bit, %d data bytes", b[:44], 2*frames)
	}
}

// TestAudioRefusals: sglang's refusals, before any clip is made.
func TestAudioRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*datasets.Options)
		want string
	}{
		{"negative count", func(o *datasets.Options) { o.AudioCount = -1 }, "--audio-count"},
		{"too many clips", func(o *datasets.Options) { o.AudioCount = datasets.MaxAudioCount + 1 }, "--audio-count must be between 0 and 64"},
		{"zero duration", func(o *datasets.Options) { o.AudioDuration = 0 }, "--audio-duration"},
		{"negative duration", func(o *datasets.Options) { o.AudioDuration = -1 }, "--audio-duration"},
		{"NaN duration", func(o *datasets.Options) { o.AudioDuration = math.NaN() }, "--audio-duration"},
		{"infinite duration", func(o *datasets.Options) { o.AudioDuration = math.Inf(1) }, "--audio-duration"},
		{"no sample", func(o *datasets.Options) { o.AudioDuration = 1e-5 }, "holds no sample"},
		{"no output", func(o *datasets.Options) { o.RandomOutputLen = 0 }, "--random-output-len"},
	} {
		o := datasets.DefaultOptions()
		tc.edit(&o)
		if _, err := datasets.New("audio", o, qwen3(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.want)
		}
	}
}

// TestAudioFlightBytes: the bound of one request's clips covers the
// clips it makes, twice over (clips and body), and grows with the count.
func TestAudioFlightBytes(t *testing.T) {
	o := datasets.DefaultOptions()
	o.AudioDuration, o.AudioCount = 0.5, 3
	d, err := datasets.New("audio", o, qwen3(t))
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := d.Generate(1, rand.New(rand.NewPCG(1, 2)))
	q, _ := ps[0].WithImages()
	made := 0
	for _, c := range q.Audio {
		made += len(c)
	}
	bound := datasets.ImageBytes("audio", o)
	if bound < uint64(2*made) || bound > uint64(2*made+44+2*8000+64) {
		t.Errorf("ImageBytes(audio) = %d for %d bytes of clips, want twice them plus one WAV buffer", bound, made)
	}
}
