package kernel

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// partMap maps partition keys to entries. Lookups are lock-free and
// allocate nothing. Inserts and removals lock one of partShards shards and
// cost O(1) expected: a shard is a table of buckets, each an immutable
// chain published through an atomic pointer; an insert prepends one node,
// a removal copies the chain up to the removed node (a few nodes), and a
// shard's table doubles when it holds twice as many keys as buckets (the
// copy of one shard at a doubling is paid back by the inserts before it:
// O(1) amortized). Before, every insert and every removal copied a whole
// shard's map: a new key cost O(keys), and an idle reclaim O(keys²).
type partMap struct {
	seed   maphash.Seed
	shards [partShards]partShard
}

const (
	partShards      = 64
	partShardBits   = 6 // log2(partShards): the hash's low bits pick the shard
	partMinBuckets  = 8
	partLoadPerBkt  = 2 // a table doubles above this many keys per bucket
	partCacheLine   = 64
	partShardLayout = 8 + 8 + 8 // mu, tab, n
)

type partShard struct {
	mu  sync.Mutex // serializes the shard's writers; readers take none
	tab atomic.Pointer[partTable]
	n   int // keys in the shard; mu held
	_   [partCacheLine - partShardLayout]byte
}

// partTable is one shard's buckets; replaced whole when the shard grows.
type partTable struct {
	buckets []atomic.Pointer[partNode]
}

// partNode is one key of a chain. Nodes are immutable once published:
// readers walk chains without a lock while writers replace them.
type partNode struct {
	hash uint64
	key  string
	e    *partEntry
	next *partNode
}

func newPartMap() *partMap { return &partMap{seed: maphash.MakeSeed()} }

func (pm *partMap) locate(key string) (*partShard, uint64) {
	h := maphash.String(pm.seed, key)
	return &pm.shards[h%partShards], h
}

func (t *partTable) bucket(h uint64) *atomic.Pointer[partNode] {
	return &t.buckets[(h>>partShardBits)&uint64(len(t.buckets)-1)]
}

// load returns the entry of key, lock-free and without allocating.
func (pm *partMap) load(key string) *partEntry {
	s, h := pm.locate(key)
	t := s.tab.Load()
	if t == nil {
		return nil
	}
	for n := t.bucket(h).Load(); n != nil; n = n.next {
		if n.hash == h && n.key == key {
			return n.e
		}
	}
	return nil
}

// insert stores e under key unless the key is present; it returns the entry
// that is in the map afterwards.
func (pm *partMap) insert(key string, e *partEntry) *partEntry {
	s, h := pm.locate(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tab.Load()
	if t != nil {
		for n := t.bucket(h).Load(); n != nil; n = n.next {
			if n.hash == h && n.key == key {
				return n.e
			}
		}
	}
	if t == nil || s.n+1 > partLoadPerBkt*len(t.buckets) {
		t = s.grow(t)
	}
	b := t.bucket(h)
	b.Store(&partNode{hash: h, key: key, e: e, next: b.Load()})
	s.n++
	return e
}

// grow publishes a table of twice the buckets (partMinBuckets at first)
// holding the same keys; s.mu held. Readers of the old table still find
// every key in it.
func (s *partShard) grow(old *partTable) *partTable {
	size := partMinBuckets
	if old != nil {
		size = 2 * len(old.buckets)
	}
	t := &partTable{buckets: make([]atomic.Pointer[partNode], size)}
	if old != nil {
		for i := range old.buckets {
			for n := old.buckets[i].Load(); n != nil; n = n.next {
				b := t.bucket(n.hash)
				b.Store(&partNode{hash: n.hash, key: n.key, e: n.e, next: b.Load()})
			}
		}
	}
	s.tab.Store(t)
	return t
}

// remove deletes key if it maps to e.
func (pm *partMap) remove(key string, e *partEntry) {
	s, h := pm.locate(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tab.Load()
	if t == nil {
		return
	}
	b := t.bucket(h)
	head := b.Load()
	var prefix []*partNode // the nodes before the removed one, in order
	n := head
	for ; n != nil && !(n.hash == h && n.key == key); n = n.next {
		prefix = append(prefix, n)
	}
	if n == nil || n.e != e {
		return
	}
	rest := n.next
	for i := len(prefix) - 1; i >= 0; i-- {
		p := prefix[i]
		rest = &partNode{hash: p.hash, key: p.key, e: p.e, next: rest}
	}
	b.Store(rest)
	s.n--
}

// each calls f for every entry: the keys present throughout the call are
// visited once; a key inserted or removed meanwhile may or may not be.
func (pm *partMap) each(f func(*partEntry)) {
	for i := range pm.shards {
		t := pm.shards[i].tab.Load()
		if t == nil {
			continue
		}
		for j := range t.buckets {
			for n := t.buckets[j].Load(); n != nil; n = n.next {
				f(n.e)
			}
		}
	}
}

// partCursor is where a walk of a partMap resumes: a shard and a bucket of
// its table. The zero value is the start.
type partCursor struct {
	shard, bucket int
}

// walk calls f for the entries of the buckets from c on, a bucket at a
// time, until at least budget entries were visited (one chain beyond at
// most) or the map ends; it returns the cursor to resume from and whether
// the walk reached the end. A shard whose table grew between two walks is
// resumed at the same bucket index of the new table: a key may then be
// visited twice or missed by this pass (the next one sees it), which is
// what each's concurrent inserts and removals allow too.
func (pm *partMap) walk(c partCursor, budget int, f func(*partEntry)) (partCursor, bool) {
	visited := 0
	for ; c.shard < partShards; c.shard, c.bucket = c.shard+1, 0 {
		t := pm.shards[c.shard].tab.Load()
		if t == nil {
			continue
		}
		for ; c.bucket < len(t.buckets); c.bucket++ {
			if visited >= budget {
				return c, false
			}
			for n := t.buckets[c.bucket].Load(); n != nil; n = n.next {
				f(n.e)
				visited++
			}
		}
	}
	return partCursor{}, true
}
