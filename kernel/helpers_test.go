package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// The catalog every test uses.
const (
	echoSay   = "echo/Say"
	echoShout = "echo/Shout"
	mathAdd   = "math/Add"
)

type fixture struct {
	t     testing.TB
	k     *kernel.Kernel
	say   kernel.MethodID
	shout kernel.MethodID
	add   kernel.MethodID
	// enqueued receives a permit each time a waiter is registered.
	enqueued chan *kernel.Permit
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	var b kernel.CatalogBuilder
	f := &fixture{t: t, enqueued: make(chan *kernel.Permit, 1024)}
	f.say = b.MustAdd("echo", "Say")
	f.shout = b.MustAdd("echo", "Shout")
	f.add = b.MustAdd("math", "Add")
	k, err := kernel.New(kernel.Config{Catalog: b.Build()})
	require.NoError(t, err)
	f.k = k
	k.SetHooks(&kernel.Hooks{AfterEnqueue: func(p *kernel.Permit) { f.enqueued <- p }})
	return f
}

func conc(n int64) kernel.Rule { return kernel.Rule{Limits: []spi.Spec{concurrency.Spec(n)}} }

func globalOnly(n int64) kernel.Options { return kernel.Options{Global: conc(n)} }

func withQueue(o kernel.Options, calls int, bytes int64, delay time.Duration) kernel.Options {
	o.Queue = kernel.QueuePolicy{MaxQueuedCalls: calls, MaxQueuedBytes: bytes, MaxQueueDelay: delay}
	return o
}

func (f *fixture) enable(o kernel.Options) uint64 {
	f.t.Helper()
	g, err := f.k.Enable(o)
	require.NoError(f.t, err)
	return g
}

func (f *fixture) update(o kernel.Options) uint64 {
	f.t.Helper()
	g, err := f.k.Update(f.k.Generation(), o)
	require.NoError(f.t, err)
	return g
}

// admit captures and admits a request for m; it returns the permit (nil
// when admission is disabled) and Admit's error.
func (f *fixture) admit(m kernel.MethodID) (*kernel.Permit, error) {
	return f.admitReq(context.Background(), kernel.Request{Method: m})
}

func (f *fixture) admitReq(ctx context.Context, req kernel.Request) (*kernel.Permit, error) {
	p := new(kernel.Permit)
	if !f.k.Capture(p) {
		return nil, nil
	}
	return p, p.Admit(ctx, req)
}

// grant admits m and fails the test unless it is granted at once.
func (f *fixture) grant(m kernel.MethodID) *kernel.Permit {
	f.t.Helper()
	p, err := f.admit(m)
	require.NoError(f.t, err)
	require.NotNil(f.t, p, "admission is disabled")
	return p
}

// refused admits m and fails the test unless it is refused with reason.
func (f *fixture) refused(m kernel.MethodID, reason kernel.Reason) {
	f.t.Helper()
	p, err := f.admit(m)
	require.Error(f.t, err)
	got, ok := kernel.ReasonOf(err)
	require.True(f.t, ok, "not a refusal: %v", err)
	require.Equal(f.t, reason, got)
	require.Equal(f.t, reason, p.Reason())
	p.Release() // a refused permit holds nothing; releasing it is silent
}

// pending is a request admitted on its own goroutine.
type pending struct {
	p    *kernel.Permit
	done chan error
}

// queue starts an admission on a goroutine and waits until it is registered
// as a waiter (it must be refused at first).
func (f *fixture) queue(ctx context.Context, req kernel.Request) *pending {
	f.t.Helper()
	pd := &pending{p: new(kernel.Permit), done: make(chan error, 1)}
	require.True(f.t, f.k.Capture(pd.p))
	go func() { pd.done <- pd.p.Admit(ctx, req) }()
	select {
	case p := <-f.enqueued:
		require.Same(f.t, pd.p, p, "another request was enqueued")
	case err := <-pd.done:
		f.t.Fatalf("request was not queued: Admit returned %v", err)
	case <-time.After(10 * time.Second):
		f.t.Fatal("request never queued")
	}
	return pd
}

// result waits for the pending admission's outcome.
func (pd *pending) result(t testing.TB) error {
	t.Helper()
	select {
	case err := <-pd.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("admission did not finish")
		return nil
	}
}

// stillWaiting asserts the admission has not finished. Admission outcomes
// are published synchronously by the releasing goroutine, so once the
// release call returned, a grant would already be visible.
func (pd *pending) stillWaiting(t testing.TB) {
	t.Helper()
	select {
	case err := <-pd.done:
		t.Fatalf("admission finished unexpectedly: %v", err)
	default:
	}
}

func (f *fixture) scope(name string) kernel.ScopeStats {
	f.t.Helper()
	s, ok := f.k.Stats().Scope(name)
	require.True(f.t, ok, "no state %q", name)
	return s
}

// requireIdle checks that every counter is back to zero.
func (f *fixture) requireIdle() {
	f.t.Helper()
	st := f.k.Stats()
	require.Zero(f.t, st.QueuedCalls, "queued calls")
	require.Zero(f.t, st.QueuedBytes, "queued bytes")
	require.Zero(f.t, st.DoubleReleases, "double releases")
	for _, sc := range st.Scopes {
		require.Zero(f.t, sc.InUse, "in use at %s", sc.Name)
		require.Zero(f.t, sc.Waiters, "waiters at %s", sc.Name)
	}
}
