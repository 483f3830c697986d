package prober

// CacheDetails is sglang's split of a request's cached prompt tokens by
// the tier that held them: the GPU's radix cache (device), the
// hierarchical cache in host memory (host), and a storage backend
// (storage, named by StorageBackend). sglang states it in meta_info on
// /generate, and in the top-level "sglext" object of its OpenAI routes
// when the request asks with "return_cached_tokens_details": true
// (sgl-project/sglang python/sglang/benchmark/serving.py,
// _extract_cache_from_sglext, and the --cache-report request body).
type CacheDetails struct {
	Device         int    `json:"device"`
	Host           int    `json:"host"`
	Storage        int    `json:"storage"`
	StorageBackend string `json:"storage_backend,omitempty"`
	// FromSGLExt: the details came from an OpenAI route's sglext, whose
	// sum is the request's cached count (bench_serving's
	// cached_tokens = device + host + storage); on /generate the count is
	// meta_info.cached_tokens itself.
	FromSGLExt bool `json:"-"`
}

// Total is device + host + storage.
func (d *CacheDetails) Total() int { return d.Device + d.Host + d.Storage }

// cacheDetailsJSON is a cached_tokens_details object; a null count is 0,
// as bench_serving's `details.get("device") or 0`.
type cacheDetailsJSON struct {
	Device         *int    `json:"device"`
	Host           *int    `json:"host"`
	Storage        *int    `json:"storage"`
	StorageBackend *string `json:"storage_backend"`
}

func (c *cacheDetailsJSON) details(fromSGLExt bool) *CacheDetails {
	if c == nil {
		return nil
	}
	d := &CacheDetails{FromSGLExt: fromSGLExt}
	for _, f := range []struct {
		src *int
		dst *int
	}{{c.Device, &d.Device}, {c.Host, &d.Host}, {c.Storage, &d.Storage}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if c.StorageBackend != nil {
		d.StorageBackend = *c.StorageBackend
	}
	return d
}

// sglextJSON is the "sglext" object sglang adds to its OpenAI responses.
type sglextJSON struct {
	CachedTokensDetails *cacheDetailsJSON `json:"cached_tokens_details"`
}

// details is bench_serving's `if details:` — an absent, null or empty
// object carries no details.
func (x *sglextJSON) details() *CacheDetails {
	if x == nil || x.CachedTokensDetails == nil || *x.CachedTokensDetails == (cacheDetailsJSON{}) {
		return nil
	}
	return x.CachedTokensDetails.details(true)
}

// applyCacheDetails sets a result's cached count and details from the
// last details the stream carried, as bench_serving keeps the last
// chunk's: from sglext the count is the tiers' sum, whatever
// usage.prompt_tokens_details.cached_tokens said.
func applyCacheDetails(res *Result, d *CacheDetails) {
	if d == nil {
		return
	}
	res.CacheDetails = d
	if d.FromSGLExt {
		res.CachedTokens = d.Total()
	}
}

// CachedPromptTokens is the part of a request's prompt the server said it
// took from its prefix cache rather than computing it: OpenAI's and
// vLLM's usage.prompt_tokens_details.cached_tokens, sglang's
// cached_tokens (the tiers' sum with cache details), Anthropic's
// cache_read_input_tokens, llama.cpp's timings.cache_n. 0 where the
// server states none (ollama states only the tokens it evaluated).
func CachedPromptTokens(r Result) int {
	return max(r.CachedTokens, r.Server.PromptCachedCount, 0)
}
