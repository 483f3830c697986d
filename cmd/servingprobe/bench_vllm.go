package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// vllmFlags are vllm bench serve's flags that bench_serving does not
// have (vllm/benchmarks/serve.py, add_cli_args; datasets.py,
// add_dataset_parser). Any of them, or a dataset only vLLM has, makes the
// run a vLLM-style one: vLLM's defaults where the two tools differ, its
// printed block and its result file (see docs/bench.md).
type vllmFlags struct {
	saveResult, saveDetailed, appendResult bool
	resultDir, resultFilename, label       string
	metadata                               []string
	endpoint, tokenizerMode                string
	logprobs                               *int
	randomBatchSize                        int
	outputLen                              *int
	ignoreEOS                              bool

	// on is set by apply: the run is vLLM-style.
	on bool
	// model and tokenizer are what the run resolved, for the result file.
	model, tokenizer string
}

// vllmOnlyFlags are the flags that make a run vLLM-style.
var vllmOnlyFlags = []string{"save-result", "save-detailed", "append-result", "result-dir", "result-filename", "metadata",
	"label", "endpoint-type", "endpoint", "logprobs", "tokenizer-mode", "num-warmups", "random-prefix-len", "random-batch-size",
	"output-len", "input-len", "ignore-eos",
	"sonnet-input-len", "sonnet-output-len", "sonnet-prefix-len",
	"prefix-repetition-prefix-len", "prefix-repetition-suffix-len", "prefix-repetition-num-prefixes", "prefix-repetition-output-len",
	"spec-bench-output-len", "spec-bench-category", "random-mm-base-items-per-request", "random-mm-num-mm-items-range-ratio",
	"random-mm-limit-mm-per-prompt", "random-mm-bucket-config", "hf-subset", "hf-split", "hf-output-len"}

// vllmDatasets are the datasets only vLLM has.
var vllmDatasets = []string{"sonnet", "prefix_repetition", "spec_bench", "random-mm", "hf"}

const vllmNote = " (vLLM's: makes the run vLLM-style.)"

func addVLLMFlags(b *binder, f *benchFlags) {
	v, s, o := &f.vllm, &f.spec, &f.spec.Options
	p := func(name, help string, val flagValue) { b.flag(name, key(name), help+vllmNote, val) }
	local := func(name, help string, val flagValue) { b.flag(name, "", help+vllmNote, val) }
	b.bool("save-result", "", "Write vLLM's result file (one JSON object with vLLM's keys, ours under \"servingprobe\") to --result-dir/--result-filename."+vllmNote, &v.saveResult)
	b.bool("save-detailed", "", "Keep the per-request arrays in the result file (input_lens, output_lens, ttfts, itls, start_times, generated_texts, errors)."+vllmNote, &v.saveDetailed)
	b.bool("append-result", "", "Append the result object to the result file, after a newline."+vllmNote, &v.appendResult)
	local("result-dir", "Directory of the result file (created; default: the current one).", stringValue(&v.resultDir))
	local("result-filename", "Result file name (default vLLM's: {label}-{rate}qps[-concurrency{N}]-{model}-{date}.json).", stringValue(&v.resultFilename))
	b.strings("metadata", "", "KEY=VALUE pairs written at the top level of the result file (several after one flag, or repeated)."+vllmNote, &v.metadata)
	local("label", "The result's label and file name prefix (default: --backend).", stringValue(&v.label))
	b.flag("endpoint-type", "backend", "vLLM's older name of --backend."+vllmNote, stringValue(&s.Backend))
	local("endpoint", "API path; must be the backend's own (/v1/completions for openai and vllm, /v1/chat/completions for openai-chat).", stringValue(&v.endpoint))
	local("logprobs", "logprobs per token asked in every completions request body.", optIntValue(&v.logprobs))
	local("tokenizer-mode", "auto, hf or slow: a tokenizer.json is read either way (mistral and custom modes are refused).", enumValue(&v.tokenizerMode, "auto", "hf", "slow", "mistral", "custom", "deepseek_v32"))
	b.flag("num-warmups", "warmup_requests", "Warmup requests (vLLM's default 0; bench_serving's --warmup-requests defaults to 1)."+vllmNote, intValue(&s.WarmupRequests))
	local("random-batch-size", "Inputs per request of vLLM's random embeddings runs; only 1 is supported.", intValue(&v.randomBatchSize))
	b.flag("input-len", "random_input_len", "vLLM's general input length: --random-input-len."+vllmNote, intValue(&o.RandomInputLen))
	local("output-len", "vLLM's general output length: sets the random, sharegpt, hf, spec_bench and prefix_repetition output lengths.", optIntValue(&v.outputLen))
	b.bool("ignore-eos", "", "Send ignore_eos (a vLLM-style run sends it only with this flag or the random datasets, as vLLM)."+vllmNote, &v.ignoreEOS)

	p("random-prefix-len", "random: tokens of a prefix shared by every prompt, before its --random-input-len tokens.", intValue(&o.RandomPrefixLen))
	p("sonnet-input-len", "sonnet: input tokens at most (chat template included).", intValue(&o.SonnetInputLen))
	p("sonnet-output-len", "sonnet: output tokens.", intValue(&o.SonnetOutputLen))
	p("sonnet-prefix-len", "sonnet: tokens of the poem lines every prompt shares.", intValue(&o.SonnetPrefixLen))
	p("prefix-repetition-prefix-len", "prefix_repetition: tokens of each shared prefix.", intValue(&o.PrefixRepetitionPrefixLen))
	p("prefix-repetition-suffix-len", "prefix_repetition: tokens of each prompt's own suffix.", intValue(&o.PrefixRepetitionSuffixLen))
	p("prefix-repetition-num-prefixes", "prefix_repetition: prefixes, each shared by num-prompts / this many prompts.", intValue(&o.PrefixRepetitionNumPrefixes))
	p("prefix-repetition-output-len", "prefix_repetition: output tokens.", intValue(&o.PrefixRepetitionOutputLen))
	p("spec-bench-output-len", "spec_bench: output tokens.", intValue(&o.SpecBenchOutputLen))
	p("spec-bench-category", "spec_bench: keep one category (default: all).", stringValue(&o.SpecBenchCategory))
	p("random-mm-base-items-per-request", "random-mm: images per request.", intValue(&o.RandomMMBaseItemsPerRequest))
	p("random-mm-num-mm-items-range-ratio", "random-mm: images per request vary by this ratio either side.", floatValue(&o.RandomMMNumMMItemsRangeRatio))
	p("random-mm-limit-mm-per-prompt", "random-mm: JSON limit, e.g. "+datasets.DefaultRandomMMLimit+".", stringValue(&o.RandomMMLimitMMPerPrompt))
	p("random-mm-bucket-config", "random-mm: {(height, width, frames): probability, ...}; video buckets (frames > 1) are refused.", stringValue(&o.RandomMMBucketConfig))
	p("hf-subset", "hf: the subset, a directory under --dataset-path (nothing is downloaded: the rows are read from local files).", stringValue(&o.HFSubset))
	p("hf-split", "hf: the split, <split>.jsonl under --dataset-path (default train).", stringValue(&o.HFSplit))
	p("hf-output-len", "hf: output tokens (default: each row's reply, else 256).", intValue(&o.HFOutputLen))
}

// apply decides whether the run is vLLM-style and, when it is, gives the
// spec vLLM's meaning of the flags the two tools share.
func (v *vllmFlags) apply(s *runner.Spec, f *benchFlags, bad func(string, ...any)) {
	v.on = slices.Contains(vllmDatasets, s.Dataset) || slices.ContainsFunc(vllmOnlyFlags, f.given)
	if !v.on {
		return
	}
	if !f.given("backend") && !f.given("endpoint-type") {
		s.Backend = "openai" // vLLM's default
	}
	if !f.given("num-warmups") && !f.given("warmup-requests") {
		s.WarmupRequests = 0
	}
	if !f.given("disable-ignore-eos") {
		// vLLM sends ignore_eos with --ignore-eos, and for random data.
		s.DisableIgnoreEOS = !(v.ignoreEOS || s.Dataset == "random" || s.Dataset == "random-mm")
	}
	if s.PercentileMetrics == nil {
		s.PercentileMetrics, _ = bench.ParsePercentileMetrics("ttft,tpot,itl")
	}
	if s.MetricPercentiles == nil {
		s.MetricPercentiles, _ = bench.ParseMetricPercentiles("99")
	}
	if v.outputLen != nil {
		n, o := *v.outputLen, &s.Options
		o.RandomOutputLen, o.SharegptOutputLen, o.HFOutputLen, o.SpecBenchOutputLen, o.PrefixRepetitionOutputLen = n, n, n, n, n
	}
	info, err := prober.LookupBackend(s.Backend)
	if err == nil {
		if v.endpoint != "" && v.endpoint != info.Path {
			bad("--endpoint %s: --backend %s sends to %s; pick the backend of that path (openai or vllm: /v1/completions, openai-chat: /v1/chat/completions)", v.endpoint, s.Backend, info.Path)
		}
		if s.Dataset == "sonnet" && !info.Chat {
			// vLLM sends sonnet's prompt formatted by the chat
			// template on every backend but openai-chat.
			s.Options.ApplyChatTemplate = true
		}
		if v.logprobs != nil {
			if info.Chat {
				bad("--logprobs: vLLM sends it on completions backends only")
			} else {
				if s.ExtraBody == nil {
					s.ExtraBody = map[string]any{}
				}
				if _, ok := s.ExtraBody["logprobs"]; !ok {
					s.ExtraBody["logprobs"] = *v.logprobs
				}
			}
		}
	}
	switch v.tokenizerMode {
	case "mistral", "custom", "deepseek_v32":
		bad("--tokenizer-mode %s: only a tokenizer.json is read here (auto, hf or slow)", v.tokenizerMode)
	}
	if v.randomBatchSize > 1 {
		bad("--random-batch-size %d: only 1 input per request is supported", v.randomBatchSize)
	}
	for _, m := range v.metadata {
		if k, _, ok := strings.Cut(m, "="); !ok || strings.TrimSpace(k) == "" {
			bad("--metadata %q: want KEY=VALUE", m)
		}
	}
	if !f.given("tag") && v.label != "" {
		s.Tag = v.label
	}
	if v.saveResult || v.appendResult {
		// The result file's latencies and queue_times are per request.
		s.Details = true
		s.DetailsNoTexts = s.DetailsNoTexts && !v.saveDetailed
		s.SpoolDetails = false
	}
}

// run is the result file's description of the run.
func (v *vllmFlags) run(s *bench.Summary, p bench.Params, spec runner.Spec, now time.Time) bench.VLLMRun {
	r := bench.VLLMRun{Date: now, Backend: p.Backend, Label: v.label, ModelID: v.model, TokenizerID: v.tokenizer,
		NumPrompts: p.NumPrompts, RequestRate: p.RequestRate, Burstiness: spec.Burstiness, MaxConcurrency: p.MaxConcurrency,
		RampUp: string(spec.RampUp), RampUpStartRPS: spec.RampUpStartRPS, RampUpEndRPS: spec.RampUpEndRPS, Detailed: v.saveDetailed}
	if r.Burstiness == 0 {
		r.Burstiness = 1
	}
	for _, m := range v.metadata {
		k, val, _ := strings.Cut(m, "=")
		r.Metadata = append(r.Metadata, [2]string{strings.TrimSpace(k), strings.TrimSpace(val)})
	}
	return r
}

// write prints vLLM's result block and writes its result file when asked.
func (v *vllmFlags) write(w io.Writer, sum *bench.Summary, p bench.Params, spec runner.Spec) (string, error) {
	run := v.run(sum, p, spec, time.Now())
	if err := sum.WriteVLLMTable(w, run); err != nil {
		return "", err
	}
	if !v.saveResult && !v.appendResult {
		return "", nil
	}
	name := v.resultFilename
	if name == "" {
		name = bench.VLLMResultFilename(run, v.label, p.MaxConcurrency)
	}
	if v.resultDir != "" {
		if err := os.MkdirAll(v.resultDir, 0o755); err != nil {
			return "", fmt.Errorf("--result-dir: %w", err)
		}
		name = filepath.Join(v.resultDir, name)
	}
	if err := sum.WriteVLLMResult(name, run, v.appendResult); err != nil {
		return "", errors.New("write results: " + err.Error())
	}
	return name, nil
}
