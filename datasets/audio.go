package datasets

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// AudioSampleRate is the audio dataset's rate: 16 kHz mono 16-bit PCM, as
// sglang's (python/sglang/benchmark/datasets/audio.py, SAMPLE_RATE).
const AudioSampleRate = 16000

// The audio dataset's text part, as sglang's: one line asking about the
// clips, another when a request has none.
const (
	audioPrompt   = "Describe the audio."
	noAudioPrompt = "Write a short description."
)

// wavHeaderBytes is a canonical PCM WAV header: RIFF, fmt and data chunks.
const wavHeaderBytes = 44

// audioDataset is sglang's "audio": each request is one user message of
// --audio-count clips of --audio-duration seconds of white noise (a
// complete WAV each, sent as an input_audio part) and a fixed text part,
// asking for --random-output-len tokens. Its prompt length is 0 here, as
// in sglang: how many tokens a clip becomes is the server's processor's
// business, so the run takes the prompt length from the server's usage.
type audioDataset struct {
	opts    Options
	samples int // per clip
}

func newAudio(opts Options, _ Tokenizer) (Dataset, error) {
	// sglang's refusals (AudioDataset.__post_init__), before any clip is made.
	d := opts.AudioDuration
	var errs []error
	if opts.AudioCount < 0 || opts.AudioCount > MaxAudioCount {
		// Every clip of a request is made whole in memory while it is
		// sent: bound how many one request carries.
		errs = append(errs, fmt.Errorf("--audio-count must be between 0 and %d, got %d", MaxAudioCount, opts.AudioCount))
	}
	if math.IsNaN(d) || math.IsInf(d, 0) || d <= 0 {
		errs = append(errs, fmt.Errorf("--audio-duration must be a finite number of seconds > 0, got %v", d))
	} else if int(d*AudioSampleRate) < 1 {
		errs = append(errs, fmt.Errorf("--audio-duration %v s holds no sample at %d Hz", d, AudioSampleRate))
	} else if d > 3600 {
		// A clip is made whole in memory for its request: bound it.
		errs = append(errs, fmt.Errorf("--audio-duration must be at most 3600 s, got %v", d))
	}
	if opts.RandomOutputLen < 1 {
		errs = append(errs, fmt.Errorf("audio: --random-output-len must be at least 1, got %d", opts.RandomOutputLen))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	return &audioDataset{opts: opts, samples: int(d * AudioSampleRate)}, nil
}

// Generate draws, per prompt, its clip count (1 to --audio-count with
// --random-audio-count, else --audio-count) and the seed of its clips'
// noise; the clips are made when the request is built (WithImages). The
// draws differ from sglang's NumPy generators for the same seed.
func (d *audioDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	out := make([]Prompt, n)
	for i := range out {
		count := d.opts.AudioCount
		if d.opts.RandomAudioCount && count > 0 {
			count = 1 + r.IntN(count)
		}
		text := audioPrompt
		if count == 0 {
			text = noAudioPrompt
		}
		out[i] = Prompt{
			Text:      text,
			OutputLen: d.opts.RandomOutputLen,
			LazyAudio: &LazyAudio{Count: count, Samples: d.samples, Seed: [2]uint64{r.Uint64(), r.Uint64()}},
		}
	}
	return out, nil
}

// LazyAudio are a prompt's audio clips before they are made: how many,
// their length, and the seed of their noise, so that the same prompt
// always makes the same clips and no two clips of a run are alike (an
// engine's multimodal cache would otherwise serve the repeats).
type LazyAudio struct {
	Count   int       // clips; 0 still sends the text as a content part, as sglang does
	Samples int       // per clip, at AudioSampleRate
	Seed    [2]uint64 // the PCG seed of their samples
}

// Bytes is the clips' size in base64.
func (l *LazyAudio) Bytes() uint64 {
	return uint64(l.Count) * uint64(base64.StdEncoding.EncodedLen(wavHeaderBytes+2*l.Samples))
}

// Duration is the clips' total length in seconds.
func (l *LazyAudio) Duration() float64 {
	return float64(l.Count*l.Samples) / AudioSampleRate
}

// make encodes the clips, each a base64 WAV file.
func (l *LazyAudio) make() []string {
	r := rand.New(rand.NewPCG(l.Seed[0], l.Seed[1]))
	out := make([]string, l.Count)
	wav := make([]byte, wavHeaderBytes+2*l.Samples)
	for k := range out {
		putWAVHeader(wav, l.Samples)
		pcm := wav[wavHeaderBytes:]
		for j := 0; j < len(pcm); j += 8 {
			// Four uniform signed 16-bit samples from each 64-bit draw,
			// little-endian, as sglang's int16 noise over the full range.
			v := r.Uint64()
			for b := 0; b < 8 && j+b < len(pcm); b++ {
				pcm[j+b] = byte(v >> (8 * b))
			}
		}
		out[k] = base64.StdEncoding.EncodeToString(wav)
	}
	return out
}

// putWAVHeader writes the 44-byte header of a mono 16-bit PCM WAV of n
// samples at AudioSampleRate into b, as Python's wave module writes it.
func putWAVHeader(b []byte, n int) {
	le := binary.LittleEndian
	data := uint32(2 * n)
	copy(b[0:], "RIFF")
	le.PutUint32(b[4:], 36+data)
	copy(b[8:], "WAVEfmt ")
	le.PutUint32(b[16:], 16) // fmt chunk size
	le.PutUint16(b[20:], 1)  // PCM
	le.PutUint16(b[22:], 1)  // mono
	le.PutUint32(b[24:], AudioSampleRate)
	le.PutUint32(b[28:], AudioSampleRate*2) // byte rate
	le.PutUint16(b[32:], 2)                 // block align
	le.PutUint16(b[34:], 16)                // bits per sample
	copy(b[36:], "data")
	le.PutUint32(b[40:], data)
}

// MaxAudioCount bounds --audio-count: the clips per request.
const MaxAudioCount = 64

// audioFlightBytes bounds what one prompt of the audio dataset with o
// holds in clips while its request is built and sent: the largest clip
// count in base64, twice (the clips and the request body that quotes
// them), plus the WAV buffer they are encoded from.
func audioFlightBytes(o Options) uint64 {
	d := o.AudioDuration
	if math.IsNaN(d) || d <= 0 || d > 3600 || o.AudioCount < 0 || o.AudioCount > MaxAudioCount {
		return 0 // refused by New anyway
	}
	l := LazyAudio{Count: o.AudioCount, Samples: int(d * AudioSampleRate)}
	return 2*l.Bytes() + uint64(wavHeaderBytes+2*l.Samples)
}
