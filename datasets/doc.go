// Package datasets builds benchmark and probe prompts the way sglang's
// bench_serving does (--dataset-name), from local files or from an embedded
// corpus. It never touches the network: a ShareGPT or LongBench-v2 download
// is the caller's job, and every file is a local path. Tokenizers come in
// through the Tokenizer interface; this package does not import one.
//
// # Datasets
//
// New(name, opts, tok) maps bench_serving's names: random, random-ids (and,
// as in sglang, any other name starting with "random"), sharegpt,
// generated-shared-prefix, image, mooncake, custom and openai (one JSONL
// loader), mmmu, and fixed (one configured prompt, for continuous probes).
// Options mirrors the CLI flags; start from DefaultOptions.
//
//   - random: lengths uniform on [max(1,⌊L·r⌋), L] (input vector first, then
//     output). Text is cut from a corpus's token space: a ShareGPT file's
//     first turns when DatasetPath is set (bench_serving's truncate/repeat
//     rule), otherwise the embedded corpus (corpus/*.txt, prose written for
//     this project and dedicated to CC0), from which prompts are random
//     sentence sequences.
//   - random-ids: runs (offset+i+j) mod VocabSize, decoded unless
//     TokenizePrompt keeps them as Prompt.IDs. Exact text (the default)
//     runs over word tokens instead; see below.
//   - sharegpt: entries with ≥2 turns, shuffled; --prompt-suffix,
//     --apply-chat-template (BOS string deleted), --sharegpt-output-len (≥4),
//     --sharegpt-context-len, and the prompt_len/output_len < 2 filters. It
//     returns fewer than n prompts when the file runs out, as sglang does.
//   - generated-shared-prefix: G·P rows; n is ignored, as in sglang.
//     Multi-turn rows carry their user turns in Prompt.Messages (Text is the
//     first turn) and are marked MultiTurn: the bench runner sends one
//     request per user turn, each with the real replies so far as the
//     assistant turns (Prompt.Round), on chat backends only.
//     GSPRoutingKeyPrefix replaces sglang's run id so output stays
//     deterministic. The sglang on-disk pickle cache is not reproduced.
//   - image: synthetic random or white images, JPEG (quality 85) or PNG
//     (fastest deflate: random pixels do not compress), presets, HxW (height
//     first) and random:<minH>x<minW>-<maxH>x<maxW>, as data URIs.
//   - mooncake: trace JSONL; input_length is ignored and prompts are built
//     from hash_ids, as sglang does. Each record yields MooncakeNumRounds
//     prompts whose Messages hold the history (with placeholder replies)
//     and whose Timestamp is the session start × slowdown.
//   - azure-trace: Azure's LLM inference trace CSVs (2023 and 2024), made
//     into requests as burstgpt's rows are; only the rows sent are held.
//   - audio: sglang's WAV noise clips, made per request (Prompt.LazyAudio),
//     sent as input_audio parts; the prompt length is left to the server.
//   - dynamic: a JSON plan of phases (LoadDynamicPlan); each request
//     carries its time, phase and the phase's concurrency cap and body.
//   - custom/openai: JSONL rows {"prompt", "output_len"?, "max_tokens"?,
//     "extra_body"?} (unknown keys are an error), OpenAI {"messages", ...}
//     rows (unknown keys such as tools or temperature go to ExtraBody, as in
//     sglang's openai dataset; numbers stay json.Number), and sglang's
//     {"conversations": [...]} rows. Rows keep file order.
//   - mmmu: the HF datasets library is Python-only, so only a local JSONL
//     export is read (no parquet): "question" plus "image_1" as a data URI,
//     bare base64, or {"bytes": base64}. Images are sent as stored, without
//     re-encoding; prompt "Question: {q}\n\nAnswer: ".
//
// # Exact lengths (default) and Compat
//
// bench_serving decodes sampled ids and records the target as prompt_len
// without re-encoding, so the server often sees a different count
// (sgl-project/sglang#15732, #12010). By default this package makes the
// text encode to exactly the target: for random, random-ids, and the text
// parts of generated-shared-prefix and image, Encode(text, false) has
// exactly L − NumSpecialTokensToAdd tokens and PromptLen is L, what a
// completions server counts. With the embedded corpus this is done by
// construction from cached sentence ids: at load the whole corpus is
// encoded once and compared with the concatenated per-sentence ids, which
// proves the tokenizer does not merge across sentence boundaries; the last,
// partial sentence is kept only if its ids survive decode and re-encode.
// If either check fails (for example a Metaspace tokenizer that prepends ▁),
// the prompt is re-encoded and repaired at the boundary until its measured
// count is exact. ShareGPT-sourced text always takes that measured path,
// and exact mode encodes ShareGPT entries without special tokens so no BOS
// text is repeated inside prompts.
//
// random-ids text is exact by construction too, from word pieces found once
// per tokenizer (for Qwen3 about 0.12 s on one core, for Llama 3 about
// 0.1 s): lead pieces, tokens whose text is a space then letters only
// (" house"), and first pieces, letters only ("house"), each of which
// encodes back to itself alone. A regex pre-tokenizer (` ?\p{L}+`, as in
// GPT-2 and Qwen, or `[^\r\n\p{L}\p{N}]?\p{L}+` in Llama 3) cuts text before
// every space that precedes a letter, so pieces joined in any order encode
// to their ids; that is checked at load on every pair of neighbouring lead
// ids, a shuffled sample, and a sample of first-then-lead pairs. A prompt
// of n text tokens is the first piece at or after the drawn offset, then
// the n−1 lead pieces from the first at or after it (both moved on by the
// prompt's index, wrapping), as bench_serving's run starts at its offset;
// its text is a substring copy, under 1 µs for 128 tokens. A BOS or other
// special token the tokenizer adds is outside the text and counted in
// PromptLen, as for every dataset.
//
// The ids that can appear are therefore the lead pieces, and at a prompt's
// start one of a sample of the letters-only tokens spread over the id
// range (tested, for both tokenizers, in TestRandomIDsVocabularyShare):
//
//   - Qwen3: 50,903 lead pieces of its 151,643 ids (34 %), spread over
//     every tenth of the id range but the one holding Chinese words
//     (106,150–121,313, which carry no space); 4,304 first pieces, Chinese
//     words included.
//   - Llama 3: 55,449 lead pieces of its 128,000 ids (43 %), in every tenth
//     of the id range; 4,195 first pieces.
//
// Text does not start with a space, so templates that trim a message (Llama
// 3's does) do not change it. A tokenizer whose pieces fail the check, or
// that has fewer than 64 of them (the toy Metaspace tokenizers in the
// tokenizer package's testdata), takes the measured path instead: the
// decoded id run is re-encoded and repaired at the boundary until its count
// is exact.
//
// Options.Compat reproduces bench_serving instead: PromptLen is the target
// reduced by the special-token count and is not re-measured; ShareGPT
// entries are encoded with special tokens; generated-shared-prefix and image
// text are decoded uniform vocabulary ids.
//
// # Vision tokens
//
// There is no HF processor in Go. When the tokenizer encodes each of
// <|vision_start|>, <|image_pad|> and <|vision_end|> as one token (Qwen2-VL,
// Qwen2.5-VL and Qwen3 tokenizers), an H×W image counts as Qwen2-VL does:
// smart_resize to multiples of 28 within [56·56, 12845056] pixels, then
// (H'/28)·(W'/28) pads plus the start and end tokens. Otherwise images
// count 0 and PromptLen is the text count only. TextPromptLen counts the
// text (through the chat template when ApplyChatTemplate is set).
// Custom-row images are not counted.
//
// # Randomness
//
// Generate draws only from the *rand.Rand it is given, so a seed fixes the
// output. The streams cannot match NumPy's or Python's, so prompts are not
// the same as sglang's for the same --seed; distributions are. Datasets
// are not safe for concurrent Generate calls.
package datasets
