package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
)

// randomMM is vLLM's random-mm (vllm/benchmarks/datasets:
// RandomMultiModalDataset): random text of --random-input-len tokens and
// images per request, base_items ± range_ratio of them (at most the
// limit's image count), each image's size drawn from the bucket config's
// (height, width, frames) buckets by their probabilities. Video buckets
// (frames above 1) are refused: servingprobe sends images only.
type randomMM struct {
	img     *imageDataset
	buckets []mmBucket
	lo, hi  int
}

type mmBucket struct {
	h, w int
	p    float64
}

// DefaultRandomMMBucketConfig and DefaultRandomMMLimit are vLLM's
// defaults of --random-mm-bucket-config and --random-mm-limit-mm-per-prompt.
const (
	DefaultRandomMMBucketConfig = "{(256, 256, 1): 0.5, (720, 1280, 1): 0.5, (720, 1280, 16): 0.0}"
	DefaultRandomMMLimit        = `{"image": 255, "video": 1}`
)

var mmBucketRe = regexp.MustCompile(`\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)\s*:\s*([0-9.eE+-]+)`)

// parseMMBuckets reads vLLM's bucket config, a Python dict literal such
// as {(256, 256, 1): 0.5, (720, 1280, 1): 0.5}.
func parseMMBuckets(s string) ([]mmBucket, error) {
	var out []mmBucket
	total := 0.0
	for _, m := range mmBucketRe.FindAllStringSubmatch(s, -1) {
		h, _ := strconv.Atoi(m[1])
		w, _ := strconv.Atoi(m[2])
		frames, _ := strconv.Atoi(m[3])
		p, err := strconv.ParseFloat(m[4], 64)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("random-mm bucket config: bad probability %q", m[4])
		}
		if p == 0 {
			continue
		}
		if frames != 1 {
			return nil, fmt.Errorf("random-mm bucket config: (%d, %d, %d) is a video bucket; only images (1 frame) are supported", h, w, frames)
		}
		if h < 1 || w < 1 {
			return nil, fmt.Errorf("random-mm bucket config: (%d, %d, 1) is not an image size", h, w)
		}
		out = append(out, mmBucket{h, w, p})
		total += p
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("random-mm bucket config %q: no bucket of probability above 0, as {(256, 256, 1): 1.0}", s)
	}
	for i := range out {
		out[i].p /= total
	}
	return out, nil
}

func newRandomMM(opts Options, tok Tokenizer) (Dataset, error) {
	var errs []error
	buckets, err := parseMMBuckets(opts.RandomMMBucketConfig)
	errs = append(errs, err)
	limit := math.MaxInt
	if opts.RandomMMLimitMMPerPrompt != "" {
		var lim map[string]int
		if err := json.Unmarshal([]byte(opts.RandomMMLimitMMPerPrompt), &lim); err != nil {
			errs = append(errs, fmt.Errorf("random-mm limit mm per prompt: want a JSON object such as %s: %v", DefaultRandomMMLimit, err))
		} else if n, ok := lim["image"]; ok {
			limit = n
		}
	}
	base, ratio := opts.RandomMMBaseItemsPerRequest, opts.RandomMMNumMMItemsRangeRatio
	if base < 0 || ratio < 0 || ratio > 1 {
		errs = append(errs, fmt.Errorf("random-mm: base items per request must be at least 0 and the range ratio in [0, 1], got %d and %g", base, ratio))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	io := opts
	io.ImageCount, io.ImageResolution = 1, "1x1"
	d, err := newImage(io, tok)
	if err != nil {
		return nil, fmt.Errorf("random-mm: %s", strings.TrimPrefix(err.Error(), "image: "))
	}
	lo := int(math.Floor(float64(base) * (1 - ratio)))
	hi := min(int(math.Ceil(float64(base)*(1+ratio))), limit)
	if lo > hi {
		return nil, fmt.Errorf("random-mm: %d images per request at least, above the limit of %d", lo, limit)
	}
	return &randomMM{img: d.(*imageDataset), buckets: buckets, lo: lo, hi: hi}, nil
}

func (d *randomMM) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	out, err := d.img.Generate(n, r)
	if err != nil {
		return nil, err
	}
	for i := range out {
		p := &out[i]
		count := d.lo + r.IntN(d.hi-d.lo+1)
		p.VisionPromptLen = 0
		if count == 0 {
			p.LazyImages = nil
		} else {
			p.LazyImages.Sizes = make([][2]int, count)
			for k := range count {
				b := d.draw(r)
				p.LazyImages.Sizes[k] = [2]int{b.h, b.w}
				p.VisionPromptLen += d.img.vision.tokens(b.h, b.w)
			}
		}
		p.PromptLen = p.TextPromptLen + p.VisionPromptLen
	}
	return out, nil
}

func (d *randomMM) draw(r *rand.Rand) mmBucket {
	x := r.Float64()
	for _, b := range d.buckets {
		if x < b.p {
			return b
		}
		x -= b.p
	}
	return d.buckets[len(d.buckets)-1]
}
