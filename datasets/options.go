package datasets

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ChatTemplater renders a chat history to the prompt string a model expects.
// The tokenizer package implements it with the model's Jinja template.
type ChatTemplater interface {
	ApplyChatTemplate(msgs []Message, addGenerationPrompt bool) (string, error)
}

// Options mirrors bench_serving's dataset flags. Field names follow the flag
// names (--random-input-len is RandomInputLen), and so do the JSON keys
// (random_input_len) of a bench window's body; fields that are no flag
// have none. Start from DefaultOptions:
// several defaults are not the zero value (GSPRangeRatio is 1.0).
type Options struct {
	// DatasetPath is --dataset-path: a local file. Nothing here downloads.
	DatasetPath string `json:"dataset_path"`
	// Compat reproduces bench_serving's length semantics instead of exact
	// lengths; see the package documentation.
	Compat bool `json:"-"`
	// TokenizePrompt keeps random and random-ids prompts as token ids
	// (Prompt.IDs) for backends that send input_ids.
	TokenizePrompt bool `json:"tokenize_prompt"`

	PromptSuffix      string `json:"prompt_suffix"`
	ApplyChatTemplate bool   `json:"apply_chat_template"`
	// ChatTemplate renders chat templates (sharegpt with ApplyChatTemplate,
	// mooncake, custom message rows, image). Nil means no template.
	ChatTemplate ChatTemplater `json:"-"`
	// BOSToken is the tokenizer's BOS string, deleted from templated prompts
	// as bench_serving does (the server adds its own).
	BOSToken string `json:"-"`

	SharegptOutputLen  int `json:"sharegpt_output_len"`  // 0 means use each completion's length
	SharegptContextLen int `json:"sharegpt_context_len"` // 0 means no context filter

	RandomInputLen   int     `json:"random_input_len"`
	RandomOutputLen  int     `json:"random_output_len"`
	RandomRangeRatio float64 `json:"random_range_ratio"`

	// AudioDuration is each audio clip's length in seconds, AudioCount
	// the clips per request (RandomAudioCount: 1 to AudioCount).
	AudioDuration    float64 `json:"audio_duration"`
	AudioCount       int     `json:"audio_count"`
	RandomAudioCount bool    `json:"random_audio_count"`

	ImageCount       int    `json:"image_count"`
	RandomImageCount bool   `json:"random_image_count"`
	ImageResolution  string `json:"image_resolution"` // 4k, 1080p, 720p, 360p, HxW or random:<minH>x<minW>-<maxH>x<maxW>
	ImageFormat      string `json:"image_format"`     // jpeg or png
	ImageContent     string `json:"image_content"`    // random or blank

	GSPNumGroups         int     `json:"gsp_num_groups"`
	GSPPromptsPerGroup   int     `json:"gsp_prompts_per_group"`
	GSPSystemPromptLen   int     `json:"gsp_system_prompt_len"`
	GSPQuestionLen       int     `json:"gsp_question_len"`
	GSPOutputLen         int     `json:"gsp_output_len"`
	GSPRangeRatio        float64 `json:"gsp_range_ratio"`
	GSPNumTurns          int     `json:"gsp_num_turns"`
	GSPOrdered           bool    `json:"gsp_ordered"`
	GSPFastPrepare       bool    `json:"gsp_fast_prepare"`
	GSPSendRoutingKey    bool    `json:"gsp_send_routing_key"`
	GSPGroupDistribution string  `json:"gsp_group_distribution"` // uniform or zipf
	GSPZipfAlpha         float64 `json:"gsp_zipf_alpha"`
	// GSPRoutingKeyPrefix prefixes routing keys ("<prefix>_<group>").
	// bench_serving uses "<8 random hex>_<YYYYmmddHHMMSS>"; the caller builds
	// it so that generation stays deterministic.
	GSPRoutingKeyPrefix string `json:"-"`

	// DynamicWorkloadPath is the dynamic dataset's plan (a JSON file).
	DynamicWorkloadPath string `json:"dynamic_workload_path"`

	MooncakeSlowdownFactor float64 `json:"mooncake_slowdown_factor"`
	MooncakeNumRounds      int     `json:"mooncake_num_rounds"`

	// DatasetOffset rotates agentic-trace's conversations: the run starts
	// at this one (modulo their count) and wraps around.
	DatasetOffset int `json:"dataset_offset"`
	// AgenticMaxTurns keeps the first turns of each agentic-trace
	// conversation (0: all).
	AgenticMaxTurns int `json:"agentic_max_turns"`
	// SpeedBenchCategory keeps the speed-bench rows of one category
	// (low_entropy, mixed, high_entropy; empty: all).
	SpeedBenchCategory string `json:"speed_bench_category"`
	// SpeedBenchOutputLen is every speed-bench request's output length.
	SpeedBenchOutputLen int `json:"speed_bench_output_len"`

	// ConversationTurns and ConversationTurnInputLen shape the
	// conversation dataset: that many user turns, the first
	// RandomInputLen tokens long and each later one
	// ConversationTurnInputLen tokens, every turn asking RandomOutputLen
	// tokens. 0 means the defaults: 3 turns, later turns of 64 tokens.
	ConversationTurns        int `json:"conversation_turns"`
	ConversationTurnInputLen int `json:"conversation_turn_input_len"`

	// vLLM's dataset flags (vllm bench serve): sonnet, prefix_repetition,
	// spec_bench, random-mm and hf, and random's shared prefix.
	RandomPrefixLen              int     `json:"random_prefix_len"`
	SonnetInputLen               int     `json:"sonnet_input_len"`
	SonnetOutputLen              int     `json:"sonnet_output_len"`
	SonnetPrefixLen              int     `json:"sonnet_prefix_len"`
	PrefixRepetitionPrefixLen    int     `json:"prefix_repetition_prefix_len"`
	PrefixRepetitionSuffixLen    int     `json:"prefix_repetition_suffix_len"`
	PrefixRepetitionNumPrefixes  int     `json:"prefix_repetition_num_prefixes"`
	PrefixRepetitionOutputLen    int     `json:"prefix_repetition_output_len"`
	SpecBenchCategory            string  `json:"spec_bench_category"`
	SpecBenchOutputLen           int     `json:"spec_bench_output_len"`
	RandomMMBaseItemsPerRequest  int     `json:"random_mm_base_items_per_request"`
	RandomMMNumMMItemsRangeRatio float64 `json:"random_mm_num_mm_items_range_ratio"`
	RandomMMLimitMMPerPrompt     string  `json:"random_mm_limit_mm_per_prompt"`
	RandomMMBucketConfig         string  `json:"random_mm_bucket_config"`
	HFSubset                     string  `json:"hf_subset"`
	HFSplit                      string  `json:"hf_split"`
	HFOutputLen                  int     `json:"hf_output_len"` // 0: each row's reply, else 256

	// TraceOrder says the run replays trace timestamps: burstgpt and
	// azure-trace then take their rows in file order, each at its time,
	// instead of drawing them. Set by the run from --use-trace-timestamps.
	TraceOrder bool `json:"-"`

	// FixedPrompt and FixedOutputLen configure the fixed dataset used by
	// continuous probes.
	FixedPrompt    string `json:"-"`
	FixedOutputLen int    `json:"-"`
}

// DefaultOptions returns bench_serving's defaults (newest versions).
func DefaultOptions() Options {
	return Options{
		RandomInputLen:         1024,
		RandomOutputLen:        1024,
		RandomRangeRatio:       0.0,
		ImageCount:             1,
		AudioDuration:          1,
		AudioCount:             1,
		ImageResolution:        "1080p",
		ImageFormat:            "jpeg",
		ImageContent:           "random",
		GSPNumGroups:           64,
		GSPPromptsPerGroup:     16,
		GSPSystemPromptLen:     2048,
		GSPQuestionLen:         128,
		GSPOutputLen:           256,
		GSPRangeRatio:          1.0,
		GSPNumTurns:            1,
		GSPGroupDistribution:   "uniform",
		MooncakeSlowdownFactor: 1.0,
		MooncakeNumRounds:      1,
		SpeedBenchOutputLen:    512,
		FixedOutputLen:         16,
		// vLLM's defaults (vllm/benchmarks/datasets).
		SonnetInputLen:              550,
		SonnetOutputLen:             150,
		SonnetPrefixLen:             200,
		PrefixRepetitionPrefixLen:   256,
		PrefixRepetitionSuffixLen:   256,
		PrefixRepetitionNumPrefixes: 10,
		PrefixRepetitionOutputLen:   128,
		SpecBenchOutputLen:          256,
		RandomMMBaseItemsPerRequest: 1,
		RandomMMLimitMMPerPrompt:    DefaultRandomMMLimit,
		RandomMMBucketConfig:        DefaultRandomMMBucketConfig,
	}
}

type constructor func(opts Options, tok Tokenizer) (Dataset, error)

// constructors maps --dataset-name values to datasets.
var constructors = map[string]constructor{
	"random":                  newRandomWithPrefix,
	"random-ids":              newRandomIDs,
	"sharegpt":                newShareGPT,
	"generated-shared-prefix": newGSP,
	"image":                   newImage,
	"mooncake":                newMooncake,
	"custom":                  newCustom,
	"openai":                  newCustom,
	"mmmu":                    newMMMU,
	"fixed":                   newFixed,
	"speed-bench":             newSpeedBench,
	"longbench-v2":            newLongBenchV2,
	"longbench_v2":            newLongBenchV2,
	"autobench":               newAutobench,
	"agentic-trace":           newAgenticTrace,
	"embedding":               newEmbedding,
	"token-trace":             newTokenTrace,
	"burstgpt":                newBurstGPT,
	"azure-trace":             newAzureTrace,
	"audio":                   newAudio,
	"dynamic":                 newDynamic,
	"conversation":            newConversation,
	// vLLM's datasets (vllm bench serve).
	"sonnet":            newSonnet,
	"prefix_repetition": newPrefixRepetition,
	"spec_bench":        newSpecBench,
	"random-mm":         newRandomMM,
	"hf":                newHF,
}

// aliases are older names of datasets, each for the dataset that makes the
// same workload. sglang's random-image made what image makes with one
// fixed image count, JPEG and random pixels (the image defaults); newer
// sglang dropped the name, and its "random" prefix rule would then send
// text prompts under it. Canonical maps such a name to the dataset it
// names, so that a run never sends a different workload under that name.
var aliases = map[string]string{
	"random-image": "image",
}

// Canonical returns the dataset name that name stands for: the current
// name of an alias, else name itself.
func Canonical(name string) string {
	if c, ok := aliases[name]; ok {
		return c
	}
	return name
}

// Names lists the dataset names New accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(constructors))
	for n := range constructors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrUnknownDataset is returned by New for a name it does not know.
var ErrUnknownDataset = errors.New("unknown dataset")

// New builds the dataset bench_serving calls name. As in sglang, an unknown
// name that starts with "random" means random-ids. Files are read here, so
// a missing or malformed file fails before any request is sent.
func New(name string, opts Options, tok Tokenizer) (Dataset, error) {
	name = Canonical(name)
	c, ok := constructors[name]
	if !ok && strings.HasPrefix(name, "random") {
		c, ok = newRandomIDs, true
	}
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownDataset, name, strings.Join(Names(), ", "))
	}
	if tok == nil {
		return nil, fmt.Errorf("dataset %s: a tokenizer is required", name)
	}
	return c(opts, tok)
}
