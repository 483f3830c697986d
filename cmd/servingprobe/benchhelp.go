package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// benchHelpGroups sort bench's flags for --help in the order sglang's
// benchmark documentation presents bench_serving's parameters (backend and
// server first, then the dataset and its kinds, the traffic, the request,
// profiling, LoRA, the output), followed by vLLM's additions and
// servingprobe's own. A flag in no group is listed under "Other flags";
// benchhelp_test holds that none is.
var benchHelpGroups = []struct {
	title string
	flags []string
}{
	{"Backend and server", []string{"backend", "base-url", "host", "port", "model", "served-model-name", "tokenizer", "header", "insecure",
		"ready-check-timeout-sec", "request-timeout-sec", "warmup-requests", "flush-cache", "flush-cache-timeout"}},
	{"Dataset", []string{"dataset-name", "dataset-path", "num-prompts", "seed", "apply-chat-template", "prompt-suffix", "tokenize-prompt",
		"sharegpt-output-len", "sharegpt-context-len", "dataset-offset", "agentic-max-turns", "speed-bench-category", "speed-bench-output-len"}},
	{"Random datasets (random, random-ids)", []string{"random-input-len", "random-output-len", "random-range-ratio"}},
	{"Image datasets (image, mmmu)", []string{"image-count", "random-image-count", "image-resolution", "image-format", "image-content",
		"random-image-num-images", "random-image-resolution"}},
	{"Conversation dataset (chat backends)", []string{"conversation-turns", "conversation-turn-input-len"}},
	{"Dynamic dataset", []string{"dynamic-workload-path"}},
	{"Audio dataset (chat backends)", []string{"audio-duration", "audio-count", "random-audio-count"}},
	{"Generated shared prefix dataset", []string{"gsp-num-groups", "gsp-prompts-per-group", "gsp-system-prompt-len", "gsp-question-len",
		"gsp-output-len", "gsp-range-ratio", "gsp-num-turns", "gsp-group-distribution", "gsp-zipf-alpha", "gsp-fast-prepare",
		"gsp-send-routing-key", "gsp-ordered"}},
	{"Mooncake dataset", []string{"mooncake-slowdown-factor", "mooncake-num-rounds", "mooncake-workload"}},
	{"Traffic", []string{"request-rate", "max-concurrency", "burstiness", "use-trace-timestamps", "ramp-up-strategy", "ramp-up-start-rps",
		"ramp-up-end-rps", "max-duration"}},
	{"Request", []string{"disable-stream", "disable-ignore-eos", "temperature", "top-p", "top-k", "min-p", "frequency-penalty",
		"presence-penalty", "repetition-penalty", "chat-template-kwargs", "request-id-prefix", "extra-request-body", "return-logprob",
		"top-logprobs-num", "token-ids-logprob", "logprob-start-len", "return-routed-experts", "cache-report", "fake-prefill"}},
	{"Answer checks (see docs/checks.md)", []string{"response-format", "tools", "tool-choice", "check-json-schema", "check-tool-call",
		"check-regex", "check-contains", "check-equals", "check-no-reasoning-in-content"}},
	{"Profiling", []string{"profile", "profile-activities", "profile-start-step", "profile-steps", "profile-num-steps", "profile-by-stage",
		"profile-stages", "profile-output-dir", "profile-prefix", "pd-separated", "profile-prefill-url", "profile-decode-url"}},
	{"LoRA", []string{"lora-name", "lora-request-distribution", "lora-zipf-alpha", "lora-modules", "lora-assignment"}},
	{"Output", []string{"output-file", "output-details", "tag", "print-requests", "disable-tqdm", "plot-throughput", "report", "strict-json"}},
	{"Figures (vLLM's additions and servingprobe's)", []string{"percentile-metrics", "metric-percentiles", "goodput", "cost-per-hour",
		"stats", "compat", "server-metrics", "no-server-metrics", "no-traceparent"}},
	{"Sharded runs", []string{"shard", "shard-count", "run-id", "start-at"}},
	{"Sweeps and SLO searches", []string{"sweep", "sweep-request-rates", "sweep-max-concurrency", "sweep-points", "sweep-cooldown",
		"slo", "slo-search", "slo-precision", "slo-start", "slo-max", "slo-max-points", "slo-point-samples", "slo-point-time", "slo-idle-timeout", "slo-budget"}},
	{"Runs and the regression gate (see docs/compare.md)", []string{"runs", "runs-pause-sec", "ab-base-url", "ab-output-file", "baseline", "fail-on"}},
	{"vLLM's bench serve (any of these, or a vLLM dataset, makes a vLLM-style run)", []string{"save-result", "save-detailed", "append-result",
		"result-dir", "result-filename", "metadata", "label", "endpoint-type", "endpoint", "logprobs", "tokenizer-mode", "num-warmups",
		"input-len", "output-len", "ignore-eos", "random-prefix-len", "random-batch-size", "sonnet-input-len", "sonnet-output-len",
		"sonnet-prefix-len", "prefix-repetition-prefix-len", "prefix-repetition-suffix-len", "prefix-repetition-num-prefixes",
		"prefix-repetition-output-len", "spec-bench-output-len", "spec-bench-category", "random-mm-base-items-per-request",
		"random-mm-num-mm-items-range-ratio", "random-mm-limit-mm-per-prompt", "random-mm-bucket-config", "hf-subset", "hf-split",
		"hf-output-len"}},
	{"Remote run on a daemon", []string{"remote", "remote.target", "remote.module", "remote.basic-auth-user", "remote.basic-auth-password-file",
		"remote.tls-ca-file", "remote.tls-cert-file", "remote.tls-key-file", "remote.tls-insecure-skip-verify", "remote.poll-interval"}},
}

// benchHelpIntro says how the flags read, so that each need not.
const benchHelpIntro = "The flags are bench_serving's, with its names and defaults, and more. As with its argument parser, a flag may be " +
	"shortened to any unambiguous prefix, and of a flag given twice the last wins, except for a flag shown with \"...\", " +
	"which takes several values, after one flag or repeated. A boolean flag is turned on by its name alone. " +
	"A flag or dataset only vllm bench serve has makes the run vLLM-style: the flags both tools share then mean what vLLM means " +
	"(backend openai, no warmup, ignore_eos only for random data, percentiles ttft,tpot,itl at 99), vLLM's result block is printed " +
	"and --save-result writes vLLM's result file instead of the JSONL (docs/bench.md lists the differences)."

// isBenchHelp reports whether args ask for bench's help: bench with -h
// or --help before any "--", or help bench.
func isBenchHelp(args []string) bool {
	at := slices.Index(args, "bench")
	if at < 0 {
		return false
	}
	if at > 0 && args[at-1] == "help" {
		return true
	}
	for _, a := range args[at+1:] {
		switch a {
		case "--":
			return false
		case "-h", "--help":
			return true
		}
	}
	return false
}

// writeBenchHelp writes bench's help, its flags in benchHelpGroups.
func writeBenchHelp(w io.Writer, app *kingpin.Application) error {
	var cmd *kingpin.CmdModel
	for _, c := range app.Model().Commands {
		if c.Name == "bench" {
			cmd = c
		}
	}
	if cmd == nil {
		return fmt.Errorf("no bench command")
	}
	var b strings.Builder
	b.WriteString("usage: servingprobe bench [<flags>]\n\n")
	wrap(&b, cmd.Help, "", 80)
	b.WriteString("\n")
	wrap(&b, benchHelpIntro, "", 80)

	byName := map[string]*kingpin.FlagModel{}
	var order []string
	for _, f := range cmd.Flags {
		if !f.Hidden {
			byName[f.Name] = f
			order = append(order, f.Name)
		}
	}
	listed := map[string]bool{}
	section := func(title string, names []string) {
		var fs []*kingpin.FlagModel
		for _, n := range names {
			if f := byName[n]; f != nil && !listed[n] {
				fs = append(fs, f)
				listed[n] = true
			}
		}
		if len(fs) == 0 {
			return
		}
		b.WriteString("\n" + title + ":\n")
		for _, f := range fs {
			writeFlagHelp(&b, f)
		}
	}
	for _, g := range benchHelpGroups {
		section(g.title, g.flags)
	}
	section("Other flags", order) // those no group lists
	b.WriteString("\nGlobal flags:\n")
	for _, f := range app.Model().Flags {
		if !f.Hidden {
			writeFlagHelp(&b, f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// helpColumn is where a flag's help starts: beside its name when the
// name fits before it, else on the lines below.
const helpColumn = 30

// writeFlagHelp writes one flag: its name with a value's placeholder (its
// default, when it has one) and "..." for a list flag, then its help.
func writeFlagHelp(b *strings.Builder, f *kingpin.FlagModel) {
	name := "  "
	if f.Short != 0 {
		name += "-" + string(f.Short) + ", "
	}
	name += "--" + f.Name
	if !f.IsBoolFlag() {
		name += "=" + f.FormatPlaceHolder()
	}
	if _, ok := f.Value.(*listValue); ok {
		name += " ..."
	}
	var help strings.Builder
	indent := strings.Repeat(" ", helpColumn)
	wrap(&help, f.Help, indent, 80)
	text := help.String()
	if len(name) < helpColumn-1 && text != "" {
		text = name + strings.Repeat(" ", helpColumn-len(name)) + text[helpColumn:]
	} else {
		text = name + "\n" + text
	}
	b.WriteString(text)
}

// wrap writes text in lines of at most width columns, each starting with
// indent; a word longer than a line gets a line of its own.
func wrap(b *strings.Builder, text, indent string, width int) {
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
}
