package kernel

import "slices"

// PartitionCursor is where a page of Kernel.PartitionEntries resumes: a
// position in the namespace's map, not a key. The zero value is the first
// page.
type PartitionCursor struct {
	at partCursor
}

// PartitionEntry returns the stats of key in the named namespace (the
// newest live one of that name), and whether both exist. It costs one
// lookup, whatever the number of keys, and takes no lock that a request
// takes.
func (k *Kernel) PartitionEntry(namespace, key string) (PartitionEntryStats, bool) {
	ns := k.namespaceNamed(namespace)
	if ns == nil {
		return PartitionEntryStats{}, false
	}
	e := ns.entries.load(key)
	if e == nil || e.pins.Load() < 0 {
		return PartitionEntryStats{}, false
	}
	return e.stats(k.clock.Now()), true
}

// PartitionEntries returns a page of the named namespace's keyed entries
// (the newest live namespace of that name) from cursor on, in the map's
// order, not sorted: at least n of them when that many remain, and at most
// a hash bucket's few more, since a page ends at a bucket's end. It
// returns the cursor of the next page and done at the end (or when no such
// namespace lives). Reading a page costs O(n) and holds no lock while it
// reads the entries: a walk of a million keys, a page at a time, holds up
// neither requests, nor publications, nor Seal.
//
// A key present for the whole walk is returned at least once; a key
// created or reclaimed meanwhile may or may not be, and a key can appear
// on two pages when its shard's table grew between them.
func (k *Kernel) PartitionEntries(namespace string, cursor PartitionCursor, n int) (page []PartitionEntryStats, next PartitionCursor, done bool) {
	ns := k.namespaceNamed(namespace)
	if ns == nil {
		return nil, PartitionCursor{}, true
	}
	now := k.clock.Now()
	at, done := ns.entries.walk(cursor.at, max(n, 1), func(e *partEntry) {
		if testHookEntryStats != nil {
			testHookEntryStats()
		}
		if e.pins.Load() >= 0 {
			page = append(page, e.stats(now))
		}
	})
	return page, PartitionCursor{at: at}, done
}

// testHookEntryStats, if set, runs before PartitionEntries reads each
// entry: the instant a long walk of a large namespace is under way.
var testHookEntryStats func()

// namespaceNamed returns the newest live namespace named name, or nil.
func (k *Kernel) namespaceNamed(name string) *namespace {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, ns := range slices.Backward(k.spaces) {
		if ns.name == name {
			return ns
		}
	}
	return nil
}
