package endpointpolicy

import (
	"sort"
	"sync"
	"sync/atomic"
)

// endpointSet maps endpoint names to per-endpoint state and ids (1 to
// maxEndpoints; tokens carry the id). Lookups are lock-free reads of a
// copy-on-write table; adding an endpoint copies the table under a mutex,
// so the set suits the bounded endpoint population of a client. States are
// never removed.
type endpointSet[T any] struct {
	mu  sync.Mutex
	tab atomic.Pointer[endpointTable[T]]
}

type endpointTable[T any] struct {
	byName map[string]endpointRef[T]
	// byID[id] is the state of endpoint id; byID[0] is nil. Tables share
	// the backing array: a newer table only appends, and a reader never
	// looks past its own table's length.
	byID  []*T
	names []string
}

type endpointRef[T any] struct {
	state *T
	id    uint32
}

// lookup returns the state and id of name, or nil if it has none yet.
func (s *endpointSet[T]) lookup(name string) (*T, uint32) {
	if t := s.tab.Load(); t != nil {
		if r, ok := t.byName[name]; ok {
			return r.state, r.id
		}
	}
	return nil, 0
}

// get returns the state and id of name, creating them with newState if
// needed; it returns nil once maxEndpoints endpoints exist.
func (s *endpointSet[T]) get(name string, newState func() *T) (*T, uint32) {
	if st, id := s.lookup(name); st != nil {
		return st, id
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.tab.Load()
	if old == nil {
		old = &endpointTable[T]{byID: []*T{nil}, names: []string{""}}
	}
	if r, ok := old.byName[name]; ok {
		return r.state, r.id
	}
	if len(old.byID) > maxEndpoints {
		return nil, 0
	}
	st := newState()
	id := uint32(len(old.byID))
	t := &endpointTable[T]{
		byName: make(map[string]endpointRef[T], len(old.byName)+1),
		byID:   append(old.byID, st),
		names:  append(old.names, name),
	}
	for k, v := range old.byName {
		t.byName[k] = v
	}
	t.byName[name] = endpointRef[T]{state: st, id: id}
	s.tab.Store(t)
	return st, id
}

// byID returns the state of endpoint id, or nil if there is none.
func (s *endpointSet[T]) byID(id uint32) *T {
	t := s.tab.Load()
	if t == nil || id == 0 || int(id) >= len(t.byID) {
		return nil
	}
	return t.byID[id]
}

// each calls f for every endpoint, in name order.
func (s *endpointSet[T]) each(f func(name string, state *T)) {
	t := s.tab.Load()
	if t == nil {
		return
	}
	ids := make([]int, 0, len(t.byID)-1)
	for id := 1; id < len(t.byID); id++ {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return t.names[ids[i]] < t.names[ids[j]] })
	for _, id := range ids {
		f(t.names[id], t.byID[id])
	}
}
