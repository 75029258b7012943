package etcdsource

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluicerpc/sluice/control"
)

// Source applies the document at one etcd key, and every later revision
// of it, through a Controller. Its methods are safe for concurrent use.
type Source struct {
	ctl    *control.Controller
	o      Options
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	ready  chan struct{} // closed after the first read was handled

	// revision is the newest revision of the key handled; only run's
	// goroutine writes it (st.Revision is its copy for Status).
	revision int64
	// valueErr is the state of the key's value (setValueErr), reported
	// again when a watch is established; only run's goroutine uses it.
	valueErr error

	mu sync.Mutex
	st Status
}

// Status is a source's state for operators.
type Status struct {
	// Key is the etcd key watched.
	Key string
	// Connected is set while the watch of the key is established; it is
	// cleared by a failure until the next watch is.
	Connected bool
	// WatchingFrom is the revision the current watch started from (0:
	// no watch yet).
	WatchingFrom int64
	// Revision is the newest revision of the key the source handled:
	// applied, unchanged, rejected or deleted (0: none yet). The
	// revision in force is control.Controller.Current().Revision.
	Revision int64
	// Reconnects counts the reads after the first: after a failed or
	// compacted watch, or a failed read.
	Reconnects uint64
	// LastError is the last failure or refused value (nil: none yet);
	// LastErrorAt is when it happened. A later success does not clear
	// it; compare with the Controller's Current().At.
	LastError   error
	LastErrorAt time.Time
}

// Start validates o and starts the source: it reads the key and applies
// its value, then watches it, in its own goroutine, until ctx ends or
// Stop is called. It returns at once; Ready tells when the first read was
// handled.
func Start(ctx context.Context, ctl *control.Controller, o Options) (*Source, error) {
	if ctl == nil {
		return nil, errors.New("etcdsource: a Controller is required")
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Source{ctl: ctl, o: o, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{}), st: Status{Key: o.Key}}
	go s.run(ctx)
	return s, nil
}

// Ready is closed once the first read of the key succeeded and its value
// was handled (applied, rejected, or found missing).
func (s *Source) Ready() <-chan struct{} { return s.ready }

// Stop ends the source and returns once its goroutine has. Calling it
// again does nothing.
func (s *Source) Stop() {
	s.cancel()
	<-s.done
}

// Status returns the source's state.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// run reads and watches the key until ctx ends, reading it again after
// every failed or compacted watch.
func (s *Source) run(ctx context.Context) {
	defer close(s.done)
	failures := 0
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			s.update(func(st *Status) { st.Reconnects++ })
		}
		from, err := s.read(ctx)
		if err == nil {
			var established bool
			established, err = s.watch(ctx, from)
			if established {
				failures = 0
			}
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		wait := s.o.Backoff(failures)
		s.update(func(st *Status) { st.Connected, st.LastError, st.LastErrorAt = false, err, time.Now() })
		s.report(err)
		s.o.Logger.Warn("etcd: reading the configuration key again", "key", s.o.Key, "after", wait, "failures", failures, "error", err)
		s.o.OnEvent(Event{Kind: EventFailed, Err: err, Wait: wait})
		if !sleep(ctx, wait) {
			return
		}
	}
}

// read gets the key and handles its value; it returns the revision to
// watch from: the one after the read's.
func (s *Source) read(ctx context.Context) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	resp, err := s.o.Client.Get(rctx, s.o.Key)
	if err != nil {
		return 0, fmt.Errorf("reading %q: %w", s.o.Key, err)
	}
	at := resp.Header.Revision
	if len(resp.Kvs) == 0 {
		s.o.Logger.Warn("etcd: the configuration key does not exist; the configuration in force is kept", "key", s.o.Key,
			"etcd_revision", at, "in_force", s.ctl.Current().String())
		s.setValueErr(fmt.Errorf("the key %q does not exist (etcd revision %d); the configuration in force is kept", s.o.Key, at))
		s.o.OnEvent(Event{Kind: EventMissing, Revision: at})
	} else {
		s.put(resp.Kvs[0])
	}
	s.markReady()
	return at + 1, nil
}

// watch watches the key from revision from and handles its events until
// the watch fails or ctx ends; established reports whether etcd created
// the watch.
func (s *Source) watch(ctx context.Context, from int64) (established bool, err error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := s.o.Client.Watch(wctx, s.o.Key, clientv3.WithRev(from), clientv3.WithCreatedNotify())
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return established, fmt.Errorf("watching %q from revision %d: etcd compacted it (compact revision %d)", s.o.Key, from, resp.CompactRevision)
		}
		if err := resp.Err(); err != nil {
			return established, fmt.Errorf("watching %q: %w", s.o.Key, err)
		}
		if resp.Created {
			established = true
			s.update(func(st *Status) { st.Connected, st.WatchingFrom = true, from })
			s.report(s.valueErr) // connected again: the value's state
			s.o.Logger.Info("etcd: watching the configuration key", "key", s.o.Key, "from_revision", from)
			s.o.OnEvent(Event{Kind: EventWatching, Revision: from})
		}
		for _, ev := range resp.Events {
			switch ev.Type {
			case mvccpb.PUT:
				s.put(ev.Kv)
			case mvccpb.DELETE:
				s.deleted(ev.Kv.ModRevision)
			}
		}
	}
	if ctx.Err() != nil {
		return established, ctx.Err()
	}
	return established, fmt.Errorf("watching %q: the watch ended", s.o.Key)
}

// put applies a revision of the key, unless it is not newer than the
// last one handled.
func (s *Source) put(kv *mvccpb.KeyValue) {
	rev := kv.ModRevision
	if rev <= s.revision {
		if rev < s.revision {
			s.o.Logger.Warn("etcd: the configuration key's revision is older than the one handled (etcd restored from an older backup?); not applied",
				"key", s.o.Key, "revision", rev, "handled", s.revision)
		}
		s.o.OnEvent(Event{Kind: EventSkipped, Revision: rev})
		return
	}
	s.setRevision(rev)
	if len(kv.Value) > s.o.MaxValueBytes {
		err := &ValueTooLargeError{Key: s.o.Key, Revision: rev, Size: len(kv.Value), Max: s.o.MaxValueBytes}
		s.update(func(st *Status) { st.LastError, st.LastErrorAt = err, time.Now() })
		s.setValueErr(err)
		s.o.Logger.Warn("etcd: configuration refused; the configuration in force is kept", "key", s.o.Key, "revision", rev, "error", err)
		s.o.OnEvent(Event{Kind: EventRejected, Revision: rev, Err: err})
		return
	}
	s.setValueErr(nil) // a value was read; what Apply makes of it, Status says
	a, err := s.ctl.Apply(control.Change{
		Source:   control.SourceEtcd,
		Origin:   fmt.Sprintf("%s@%d", s.o.Key, rev),
		Revision: rev,
		Document: kv.Value,
		Name:     s.o.Key,
		Latest:   true,
	})
	if err != nil { // the Controller logged it, with the revision
		s.o.OnEvent(Event{Kind: EventRejected, Revision: rev, Err: err})
		return
	}
	s.o.OnEvent(Event{Kind: EventApplied, Revision: rev, Applied: a})
}

// deleted handles the key's deletion at rev: the configuration in force
// is kept.
func (s *Source) deleted(rev int64) {
	if rev <= s.revision {
		s.o.OnEvent(Event{Kind: EventSkipped, Revision: rev})
		return
	}
	s.setRevision(rev)
	s.setValueErr(fmt.Errorf("the key %q was deleted at revision %d; the configuration in force is kept until it is written again", s.o.Key, rev))
	s.o.Logger.Warn("etcd: the configuration key was deleted; the configuration in force is kept until it is written again",
		"key", s.o.Key, "revision", rev, "in_force", s.ctl.Current().String())
	s.o.OnEvent(Event{Kind: EventDeleted, Revision: rev})
}

func (s *Source) setRevision(rev int64) {
	s.revision = rev
	s.update(func(st *Status) { st.Revision = rev })
}

func (s *Source) update(f func(*Status)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.st)
}

func (s *Source) markReady() {
	select {
	case <-s.ready:
	default:
		close(s.ready)
	}
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// report tells the Controller what the source last found of its key
// (control.Controller.ReportSource: /v1/status shows it): a failure to
// read or watch it, else the state of its value (valueErr).
func (s *Source) report(err error) {
	s.ctl.ReportSource(control.SourceEtcd, s.o.Key, err)
}

// setValueErr records and reports the state of the key's value: nil for
// a value handed to the Controller (what it made of it, its Status says),
// a refused value, a missing or deleted key.
func (s *Source) setValueErr(err error) {
	s.valueErr = err
	s.report(err)
}
