package kernel

import (
	"strconv"
	"sync"
	"testing"
)

// The map keeps every key through growth and removals: loads find exactly
// the keys present, each visits each once, a removal only removes the
// entry it names.
func TestPartMapKeepsEveryKey(t *testing.T) {
	pm := newPartMap()
	const n = 20000
	entries := make([]*partEntry, n)
	for i := range n {
		key := strconv.Itoa(i)
		entries[i] = &partEntry{key: key}
		if got := pm.insert(key, entries[i]); got != entries[i] {
			t.Fatalf("insert %s returned another entry", key)
		}
		if got := pm.insert(key, &partEntry{key: key}); got != entries[i] {
			t.Fatalf("a second insert of %s replaced the first", key)
		}
	}
	for i := 0; i < n; i += 3 {
		pm.remove(entries[i].key, &partEntry{}) // not its entry: kept
		pm.remove(entries[i].key, entries[i])
	}
	seen := map[string]int{}
	pm.each(func(e *partEntry) { seen[e.key]++ })
	for i := range n {
		key := entries[i].key
		want := i%3 != 0
		if got := pm.load(key); (got == entries[i]) != want || (!want && got != nil) {
			t.Fatalf("load %s = %v, want present %v", key, got, want)
		}
		if want && seen[key] != 1 || !want && seen[key] != 0 {
			t.Fatalf("each visited %s %d times", key, seen[key])
		}
	}
	total := 0
	for i := range pm.shards {
		total += pm.shards[i].n
	}
	if want := n - (n+2)/3; total != want {
		t.Fatalf("%d keys counted, want %d", total, want)
	}
}

// Readers never miss a key that is present throughout, while writers
// insert and remove others and shards grow (under -race: the nodes they
// walk are never written after publication).
func TestPartMapReadersSeeStableKeys(t *testing.T) {
	pm := newPartMap()
	stable := make([]*partEntry, 256)
	for i := range stable {
		stable[i] = &partEntry{key: "stable-" + strconv.Itoa(i)}
		pm.insert(stable[i].key, stable[i])
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; i < 20000; i++ {
				key := strconv.Itoa(w) + "/" + strconv.Itoa(i)
				e := &partEntry{key: key}
				pm.insert(key, e)
				if i%2 == 0 {
					pm.remove(key, e)
				}
			}
		})
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, e := range stable {
					if pm.load(e.key) != e {
						t.Errorf("a stable key went missing: %s", e.key)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
}
