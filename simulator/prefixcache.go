package simulator

import (
	"container/list"
	"slices"
	"sync"
)

// prefixCache is the simulator's model of an engine's automatic prefix
// cache, counted in blocks of blockSize prompt tokens:
//
//   - A block is named by a chain hash: the hash of the block's token ids
//     and the hash of the block before it, as vLLM's hash_block_tokens
//     names a block by its parent's hash and its own tokens
//     (vllm/v1/core/kv_cache_utils.py). Two prompts share a block only if
//     they share every token up to its end.
//   - A lookup counts the leading blocks of a prompt that are cached, but
//     at most (n−1)/blockSize of them for an n-token prompt: the last
//     prompt token is always computed, because its logits give the first
//     output token (vLLM's get_computed_blocks caps the hit at
//     num_tokens − 1, sglang's adjust_max_prefix_ids at len − 1). The hit
//     is that many blocks times blockSize tokens.
//   - Then every full block of the prompt (n/blockSize of them) is
//     cached, at once. A real engine caches a block when its step has
//     computed it, so two identical prompts in one batch both miss there;
//     here the second hits. Output tokens are not cached.
//   - The cache holds at most capacity blocks; past that the least
//     recently used block is dropped (vLLM evicts free blocks in LRU
//     order, sglang's radix cache its least recently used leaves). A
//     prompt's blocks are touched from its last to its first, so among
//     them the deepest goes first and what stays is still a prefix: vLLM
//     frees a request's blocks last first, and sglang evicts leaves. (In
//     the other order the first block would go first, and the blocks
//     behind it would hold the cache unreachable.)
//
// The block size is 16 under vLLM's names (its default block_size) and 1
// under sglang's (its default page_size: the radix cache matches token by
// token). Lookups are deterministic: the same prompts in the same order
// give the same hits.
type prefixCache struct {
	blockSize int
	capacity  int

	mu    sync.Mutex
	lru   *list.List // of uint64 hashes, most recent at the front
	index map[uint64]*list.Element
}

func newPrefixCache(blockSize, capacityBlocks int) *prefixCache {
	return &prefixCache{blockSize: blockSize, capacity: max(capacityBlocks, 1), lru: list.New(), index: map[uint64]*list.Element{}}
}

// FNV-1a's 64-bit parameters: the chain hash needs only to be
// deterministic and well spread, not secret.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// blockHash chains a block's token ids onto its parent's hash.
func blockHash(parent uint64, ids []int) uint64 {
	h := uint64(fnvOffset)
	mix := func(v uint64) {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= fnvPrime
			v >>= 8
		}
	}
	mix(parent)
	for _, id := range ids {
		mix(uint64(id))
	}
	return h
}

// admit returns how many of ids' leading tokens the cache held (a
// multiple of the block size), then caches ids' full blocks.
func (c *prefixCache) admit(ids []int) (hit int) {
	n := len(ids)
	full := n / c.blockSize
	maxHit := 0
	if n > 0 {
		maxHit = (n - 1) / c.blockSize
	}
	hashes := make([]uint64, full)
	var parent uint64
	for b := range full {
		parent = blockHash(parent, ids[b*c.blockSize:(b+1)*c.blockSize])
		hashes[b] = parent
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	blocks := 0
	for blocks < maxHit {
		if _, ok := c.index[hashes[blocks]]; !ok {
			break
		}
		blocks++
	}
	for _, h := range slices.Backward(hashes) {
		if e, ok := c.index[h]; ok {
			c.lru.MoveToFront(e)
			continue
		}
		c.index[h] = c.lru.PushFront(h)
		if c.lru.Len() > c.capacity {
			old := c.lru.Back()
			c.lru.Remove(old)
			delete(c.index, old.Value.(uint64))
		}
	}
	return blocks * c.blockSize
}

// reset empties the cache, as POST /reset_prefix_cache (vLLM) and POST
// /flush_cache (sglang) do.
func (c *prefixCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	clear(c.index)
}
