package etcdsource_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/etcdsource"
)

// The value at start is applied with its revision, then every put, each a
// new generation that names the revision it runs.
func TestAppliesTheValueAtStartThenEveryPut(t *testing.T) {
	f := newFixture(t)
	rev1 := f.put(doc(2))
	gen0 := f.ctl.Current().Generation
	src := f.start(nil)

	ev := f.waitFor(etcdsource.EventApplied)
	assert.Equal(t, rev1, ev.Revision)
	cur := f.ctl.Current()
	assert.Equal(t, control.SourceEtcd, cur.Source)
	assert.Equal(t, rev1, cur.Revision)
	assert.Equal(t, fmt.Sprintf("%s@%d", key, rev1), cur.Origin)
	assert.Equal(t, doc(2), string(cur.Document))
	assert.Greater(t, cur.Generation, gen0)
	select {
	case <-src.Ready():
	case <-time.After(patience):
		t.Fatal("Ready not closed after the first read was applied")
	}
	watching := f.waitFor(etcdsource.EventWatching)
	assert.Equal(t, rev1+1, watching.Revision)

	rev2 := f.put(doc(3))
	ev = f.waitFor(etcdsource.EventApplied)
	assert.Equal(t, rev2, ev.Revision)
	next := f.ctl.Current()
	assert.Equal(t, rev2, next.Revision)
	assert.Equal(t, doc(3), string(next.Document))
	assert.Greater(t, next.Generation, cur.Generation)
	assert.Equal(t, ev.Applied.Generation, next.Generation)

	st := src.Status()
	assert.True(t, st.Connected)
	assert.Equal(t, rev1+1, st.WatchingFrom)
	assert.Equal(t, rev2, st.Revision)
	assert.Equal(t, uint64(0), st.Reconnects)
	assert.NoError(t, st.LastError)
	assert.Equal(t, uint64(2), f.ctl.Status().Counts[control.SourceEtcd].Applied)
}

// An invalid value changes nothing: the Controller keeps the rejection
// with the revision and the document's problems, named by the key.
func TestInvalidValueKeepsTheConfiguration(t *testing.T) {
	f := newFixture(t)
	rev1 := f.put(doc(2))
	src := f.start(nil)
	f.waitFor(etcdsource.EventApplied)
	before := f.ctl.Current()

	bad := f.put("version: 1\nserver:\n  admission:\n    bogus: 1\n")
	ev := f.waitFor(etcdsource.EventRejected)
	assert.Equal(t, bad, ev.Revision)
	var cerr *config.Error
	require.ErrorAs(t, ev.Err, &cerr)
	assert.Equal(t, key, cerr.Name)
	assert.Equal(t, before, f.ctl.Current(), "the configuration in force is kept")
	assert.Equal(t, rev1, f.ctl.Current().Revision)
	rej := f.ctl.Status().LastRejection
	require.NotNil(t, rej)
	assert.Equal(t, control.SourceEtcd, rej.Source)
	assert.Equal(t, bad, rej.Revision)
	assert.Equal(t, fmt.Sprintf("%s@%d", key, bad), rej.Origin)
	assert.Equal(t, bad, src.Status().Revision, "the rejected revision was handled")

	// The next valid revision is applied.
	rev3 := f.put(doc(4))
	assert.Equal(t, rev3, f.waitFor(etcdsource.EventApplied).Revision)
	assert.Equal(t, rev3, f.ctl.Current().Revision)
}

// Deleting the key keeps the configuration in force; writing it again
// applies the new value.
func TestDeletedKeyKeepsTheConfiguration(t *testing.T) {
	f := newFixture(t)
	f.put(doc(2))
	src := f.start(nil)
	f.waitFor(etcdsource.EventApplied)
	before := f.ctl.Current()

	del, err := f.cli.Delete(f.ctx(), key)
	require.NoError(t, err)
	ev := f.waitFor(etcdsource.EventDeleted)
	assert.ErrorContains(t, f.ctl.Status().Sources[control.SourceEtcd].Err, "was deleted")
	assert.Equal(t, del.Header.Revision, ev.Revision)
	assert.Equal(t, before, f.ctl.Current())
	assert.Equal(t, del.Header.Revision, src.Status().Revision)

	rev := f.put(doc(5))
	assert.Equal(t, rev, f.waitFor(etcdsource.EventApplied).Revision)
	assert.Equal(t, doc(5), string(f.ctl.Current().Document))
}

// A key missing at start keeps the server's configuration; the source
// watches and applies the first put.
func TestMissingKeyAtStartThenPut(t *testing.T) {
	f := newFixture(t)
	before := f.ctl.Current()
	src := f.start(nil)
	f.waitFor(etcdsource.EventMissing)
	<-src.Ready()
	f.waitFor(etcdsource.EventWatching)
	assert.Equal(t, before, f.ctl.Current())

	rev := f.put(doc(2))
	assert.Equal(t, rev, f.waitFor(etcdsource.EventApplied).Revision)
}

// etcd restarted under an established watch: the next put is applied.
func TestEtcdRestartMidWatchThenPut(t *testing.T) {
	f := newFixture(t)
	f.put(doc(2))
	f.start(nil)
	f.waitFor(etcdsource.EventApplied)
	f.waitFor(etcdsource.EventWatching)

	f.etcd.Restart()
	rev := f.put(doc(3))
	ev := f.waitFor(etcdsource.EventApplied)
	assert.Equal(t, rev, ev.Revision)
	assert.Equal(t, rev, f.ctl.Current().Revision)
	assert.Equal(t, doc(3), string(f.ctl.Current().Document))
}

// blockAfterFirstApplied makes the source wait, after it applied the
// value it read at start and before it watches, until release is closed.
func blockAfterFirstApplied(f *fixture, blocked chan<- struct{}, release <-chan struct{}) func(*etcdsource.Options) {
	first := true
	return func(o *etcdsource.Options) {
		o.OnEvent = func(ev etcdsource.Event) {
			f.events <- ev
			if ev.Kind == etcdsource.EventApplied && first {
				first = false
				close(blocked)
				<-release
			}
		}
	}
}

// The revision the source would watch from is compacted before its watch
// starts: it reads the key again and applies the newest value (the
// revisions in between were compacted away and are never applied).
func TestCompactedWatchRecoversByReadingAgain(t *testing.T) {
	f := newFixture(t)
	f.put(doc(2))
	blocked, release := make(chan struct{}), make(chan struct{})
	src := f.start(blockAfterFirstApplied(f, blocked, release))
	<-blocked
	f.put(doc(3))
	last := f.put(doc(4))
	_, err := f.cli.Compact(f.ctx(), last)
	require.NoError(t, err)
	close(release)

	failed := f.waitFor(etcdsource.EventFailed)
	assert.ErrorContains(t, failed.Err, "compacted")
	ev := f.waitFor(etcdsource.EventApplied)
	assert.Equal(t, last, ev.Revision)
	assert.Equal(t, doc(4), string(f.ctl.Current().Document))
	assert.Equal(t, uint64(2), f.ctl.Status().Counts[control.SourceEtcd].Applied, "doc(3) was compacted away, never applied")
	f.waitFor(etcdsource.EventWatching)
	st := src.Status()
	assert.Equal(t, uint64(1), st.Reconnects)
	assert.Equal(t, last+1, st.WatchingFrom)
	assert.True(t, st.Connected)
	assert.ErrorContains(t, st.LastError, "compacted")
}

// A re-read that finds the revision already handled applies nothing
// again.
func TestReReadOfTheSameRevisionAppliesNothing(t *testing.T) {
	f := newFixture(t)
	rev := f.put(doc(2))
	blocked, release := make(chan struct{}), make(chan struct{})
	f.start(blockAfterFirstApplied(f, blocked, release))
	<-blocked
	// Two writes elsewhere: the watch would start at the first, and the
	// compaction at the second removes it.
	_, err := f.cli.Put(f.ctx(), "/unrelated", "x")
	require.NoError(t, err)
	other, err := f.cli.Put(f.ctx(), "/unrelated", "y")
	require.NoError(t, err)
	_, err = f.cli.Compact(f.ctx(), other.Header.Revision)
	require.NoError(t, err)
	close(release)

	f.waitFor(etcdsource.EventFailed)
	ev := f.next()
	assert.Equal(t, etcdsource.EventSkipped, ev.Kind)
	assert.Equal(t, rev, ev.Revision)
	f.waitFor(etcdsource.EventWatching)
	assert.Equal(t, uint64(1), f.ctl.Status().Counts[control.SourceEtcd].Applied)
	assert.Equal(t, uint64(0), f.ctl.Status().Counts[control.SourceEtcd].Unchanged, "not even given to the Controller again")
}

// A key written long ago, whose revision etcd compacted since: the source
// watches from its read's revision, not from the key's, so its watch is
// not compacted and the next put is its next event.
func TestKeyOlderThanTheCompactionIsWatchedFromTheRead(t *testing.T) {
	f := newFixture(t)
	rev := f.put(doc(2))
	var last int64
	for i := range 5 {
		resp, err := f.cli.Put(f.ctx(), "/unrelated", fmt.Sprint(i))
		require.NoError(t, err)
		last = resp.Header.Revision
	}
	_, err := f.cli.Compact(f.ctx(), last)
	require.NoError(t, err)

	f.start(nil)
	ev := f.next()
	require.Equal(t, etcdsource.EventApplied, ev.Kind, "err=%v", ev.Err)
	assert.Equal(t, rev, ev.Revision)
	ev = f.next()
	require.Equal(t, etcdsource.EventWatching, ev.Kind, "err=%v", ev.Err)
	assert.Equal(t, last+1, ev.Revision)
	put := f.put(doc(3))
	ev = f.next()
	require.Equal(t, etcdsource.EventApplied, ev.Kind, "err=%v", ev.Err)
	assert.Equal(t, put, ev.Revision)
}

// A value over MaxValueBytes is refused before it is parsed.
func TestValueTooLargeIsRefused(t *testing.T) {
	f := newFixture(t)
	rev1 := f.put(doc(2))
	src := f.start(func(o *etcdsource.Options) {
		inner := o.OnEvent
		o.MaxValueBytes = len(doc(2))
		o.OnEvent = inner
	})
	f.waitFor(etcdsource.EventApplied)
	big := doc(2) + "# a comment that makes the document larger than the bound\n"
	rev := f.put(big)
	ev := f.waitFor(etcdsource.EventRejected)
	assert.Equal(t, rev, ev.Revision)
	var tooLarge *etcdsource.ValueTooLargeError
	require.ErrorAs(t, ev.Err, &tooLarge)
	assert.Equal(t, len(big), tooLarge.Size)
	assert.Equal(t, len(doc(2)), tooLarge.Max)
	assert.Contains(t, ev.Err.Error(), fmt.Sprintf("%s@%d", key, rev))
	assert.Equal(t, rev1, f.ctl.Current().Revision)
	assert.ErrorAs(t, src.Status().LastError, &tooLarge)
	// The Controller's status says it too (issue 26: /v1/status said
	// nothing of a refused value).
	assert.ErrorAs(t, f.ctl.Status().Sources[control.SourceEtcd].Err, &tooLarge)
	f.put(doc(3))
	f.waitFor(etcdsource.EventApplied)
	assert.NoError(t, f.ctl.Status().Sources[control.SourceEtcd].Err)
}

// etcd down when the source starts: reads fail with backoff and the
// source is not ready; once etcd is back the value is applied.
func TestEtcdDownAtStartRetriesUntilItAnswers(t *testing.T) {
	f := newFixture(t)
	rev := f.put(doc(2))
	f.etcd.Stop()
	var backoffs []int
	src := f.start(func(o *etcdsource.Options) {
		o.Timeout = 100 * time.Millisecond
		o.Backoff = func(n int) time.Duration { backoffs = append(backoffs, n); return 0 }
	})
	for range 2 {
		ev := f.waitFor(etcdsource.EventFailed)
		assert.Error(t, ev.Err)
	}
	select {
	case <-src.Ready():
		t.Fatal("ready without a read")
	default:
	}
	assert.Error(t, f.ctl.Status().Sources[control.SourceEtcd].Err, "etcd down: /v1/status says so")
	f.etcd.Restart()
	ev := f.waitFor(etcdsource.EventApplied)
	assert.Equal(t, rev, ev.Revision)
	<-src.Ready()
	f.waitFor(etcdsource.EventWatching)
	src.Stop() // backoffs is written by the source's goroutine
	require.GreaterOrEqual(t, len(backoffs), 2)
	for i, n := range backoffs {
		assert.Equal(t, i+1, n, "consecutive failures are counted")
	}
	assert.Equal(t, uint64(len(backoffs)), src.Status().Reconnects)
}

func TestDefaultBackoffIsBounded(t *testing.T) {
	want := []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
		400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for i, w := range want {
		assert.Equal(t, w, etcdsource.DefaultBackoff(i+1), "failure %d", i+1)
	}
	assert.Equal(t, time.Second, etcdsource.DefaultBackoff(1000))
}

func TestStartChecksItsOptions(t *testing.T) {
	f := newFixture(t)
	_, err := etcdsource.Start(t.Context(), f.ctl, etcdsource.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Options.Client is required")
	assert.Contains(t, err.Error(), "Options.Key is required")
	_, err = etcdsource.Start(t.Context(), f.ctl, etcdsource.Options{Client: f.cli, Key: key, Timeout: -1, MaxValueBytes: -1})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "Timeout") && strings.Contains(err.Error(), "MaxValueBytes"), err.Error())
	_, err = etcdsource.Start(t.Context(), nil, etcdsource.Options{Client: f.cli, Key: key})
	require.Error(t, err)
	assert.False(t, errors.Is(err, nil))
}

// Stop ends a source whose context is still live, and a second Stop
// does nothing (goleak checks the goroutines at the end).
func TestStopWaitsAndIsIdempotent(t *testing.T) {
	f := newFixture(t)
	f.put(doc(2))
	cli, err := clientv3.New(f.etcd.ClientConfig())
	require.NoError(t, err)
	defer cli.Close()
	src, err := etcdsource.Start(t.Context(), f.ctl, etcdsource.Options{Client: cli, Key: key})
	require.NoError(t, err)
	<-src.Ready()
	src.Stop()
	src.Stop()
}
