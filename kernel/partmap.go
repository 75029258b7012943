package kernel

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// partMap maps partition keys to entries. Lookups are lock-free and
// allocate nothing: each of its shards publishes an immutable map through
// an atomic pointer. Inserts and deletes copy one shard's map under that
// shard's mutex (a new key may allocate; an existing key never does).
type partMap struct {
	seed   maphash.Seed
	shards [partShards]partShard
}

const partShards = 64

type partShard struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]*partEntry]
	_  [40]byte
}

func newPartMap() *partMap { return &partMap{seed: maphash.MakeSeed()} }

func (pm *partMap) shard(key string) *partShard {
	return &pm.shards[maphash.String(pm.seed, key)%partShards]
}

// load returns the entry of key, lock-free.
func (pm *partMap) load(key string) *partEntry {
	if m := pm.shard(key).m.Load(); m != nil {
		return (*m)[key]
	}
	return nil
}

// insert stores e under key unless the key is present; it returns the entry
// that is in the map afterwards.
func (pm *partMap) insert(key string, e *partEntry) *partEntry {
	s := pm.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m.Load()
	if old != nil {
		if cur, ok := (*old)[key]; ok {
			return cur
		}
	}
	m := make(map[string]*partEntry, lenOf(old)+1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[key] = e
	s.m.Store(&m)
	return e
}

// remove deletes key if it maps to e.
func (pm *partMap) remove(key string, e *partEntry) {
	s := pm.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m.Load()
	if old == nil || (*old)[key] != e {
		return
	}
	m := make(map[string]*partEntry, len(*old))
	for k, v := range *old {
		if k != key {
			m[k] = v
		}
	}
	s.m.Store(&m)
}

// each calls f for every entry (a snapshot per shard).
func (pm *partMap) each(f func(*partEntry)) {
	for i := range pm.shards {
		if m := pm.shards[i].m.Load(); m != nil {
			for _, e := range *m {
				f(e)
			}
		}
	}
}

func lenOf(m *map[string]*partEntry) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
