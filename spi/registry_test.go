package spi_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/spi"
)

// fakeKind is a minimal spi.LimiterKind. Validate accepts exactly the
// parameter "size" in [1, 10] (unless validate is set) and counts its calls,
// so tests can see whether the registry delegated to it.
type fakeKind struct {
	name     string
	class    spi.Class
	validate func(spi.Params) error

	validateCalls atomic.Int64
	lastParams    atomic.Pointer[spi.Params]
}

func newFakeKind(name string, class spi.Class) *fakeKind {
	return &fakeKind{name: name, class: class}
}

func (k *fakeKind) Name() string     { return k.name }
func (k *fakeKind) Class() spi.Class { return k.class }

func (k *fakeKind) Validate(p spi.Params) error {
	k.validateCalls.Add(1)
	k.lastParams.Store(&p)
	if k.validate != nil {
		return k.validate(p)
	}
	return validateSize(p)
}

func (k *fakeKind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	if err := validateSize(p); err != nil {
		return nil, err
	}
	return nil, errors.New("fakeKind builds no limiters")
}

// validateSize checks the fake kind's single parameter. Unknown names are
// visited in sorted order so the error is deterministic.
func validateSize(p spi.Params) error {
	for _, name := range slices.Sorted(maps.Keys(p)) {
		if name != "size" {
			return spi.InvalidParam(name, "unknown parameter")
		}
	}
	size, ok := p.Int("size")
	if !ok {
		return spi.InvalidParam("size", "required")
	}
	if size < 1 || size > 10 {
		return spi.InvalidParam("size", "must be between 1 and 10, got %d", size)
	}
	return nil
}

var _ spi.LimiterKind = (*fakeKind)(nil)

func TestRegistryZeroValueIsEmptyAndUsable(t *testing.T) {
	var r spi.Registry

	assert.Empty(t, r.Names())

	k, err := r.Lookup("anything")
	assert.Nil(t, k)
	require.ErrorIs(t, err, spi.ErrUnknownKind)

	require.NoError(t, r.Register(newFakeKind("a", spi.ClassRate)))
	assert.Equal(t, []string{"a"}, r.Names())
}

func TestDefaultRegistryIsUsable(t *testing.T) {
	require.NotNil(t, spi.DefaultRegistry)
	// The spi module registers no kinds of its own.
	_, err := spi.DefaultRegistry.Lookup("spi-test-never-registered")
	require.ErrorIs(t, err, spi.ErrUnknownKind)
}

func TestRegistryRegisterAndLookup(t *testing.T) {
	r := &spi.Registry{}
	conc := newFakeKind("conc", spi.ClassConcurrency)
	rate := newFakeKind("example.com/rate", spi.ClassRate)

	require.NoError(t, r.Register(conc))
	require.NoError(t, r.Register(rate))

	got, err := r.Lookup("conc")
	require.NoError(t, err)
	assert.Same(t, conc, got)

	got, err = r.Lookup("example.com/rate")
	require.NoError(t, err)
	assert.Same(t, rate, got)
	assert.Equal(t, spi.ClassRate, got.Class())
}

func TestRegistryLookupUnknown(t *testing.T) {
	r := &spi.Registry{}
	require.NoError(t, r.Register(newFakeKind("known", spi.ClassConcurrency)))

	for _, name := range []string{"unknown", "", "Known", "known "} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			k, err := r.Lookup(name)
			assert.Nil(t, k)
			require.ErrorIs(t, err, spi.ErrUnknownKind)
			assert.NotErrorIs(t, err, spi.ErrDuplicateKind)
			assert.Contains(t, err.Error(), fmt.Sprintf("%q", name), "the error names the kind")
		})
	}
}

func TestRegistryRegisterDuplicate(t *testing.T) {
	r := &spi.Registry{}
	first := newFakeKind("dup", spi.ClassConcurrency)
	second := newFakeKind("dup", spi.ClassRate)

	require.NoError(t, r.Register(first))
	err := r.Register(second)
	require.ErrorIs(t, err, spi.ErrDuplicateKind)
	assert.NotErrorIs(t, err, spi.ErrUnknownKind)
	assert.Contains(t, err.Error(), `"dup"`)

	// The first registration stands.
	got, lerr := r.Lookup("dup")
	require.NoError(t, lerr)
	assert.Same(t, first, got)
	assert.Equal(t, []string{"dup"}, r.Names())

	// Registering the very same kind again is a duplicate too.
	require.ErrorIs(t, r.Register(first), spi.ErrDuplicateKind)
}

func TestRegistryRegisterRejectsInvalidKinds(t *testing.T) {
	tests := []struct {
		name    string
		kind    spi.LimiterKind
		wantMsg string
	}{
		{"nil kind", nil, "spi: register: nil limiter kind"},
		{"empty name", newFakeKind("", spi.ClassConcurrency), "spi: register: empty kind name"},
		{"zero class", newFakeKind("noclass", 0), `spi: register "noclass": class 0 is neither concurrency nor rate`},
		{"out of range class", newFakeKind("badclass", spi.Class(3)), `spi: register "badclass": class 3 is neither concurrency nor rate`},
		{"max class", newFakeKind("maxclass", spi.Class(255)), `spi: register "maxclass": class 255 is neither concurrency nor rate`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &spi.Registry{}
			err := r.Register(tt.kind)
			require.Error(t, err)
			assert.EqualError(t, err, tt.wantMsg)
			assert.NotErrorIs(t, err, spi.ErrDuplicateKind)
			assert.Empty(t, r.Names(), "a rejected kind is not registered")
			assert.Panics(t, func() { r.MustRegister(tt.kind) })
			assert.Empty(t, r.Names())
		})
	}
}

func TestRegistryMustRegister(t *testing.T) {
	r := &spi.Registry{}
	k := newFakeKind("must", spi.ClassConcurrency)
	require.NotPanics(t, func() { r.MustRegister(k) })

	got, err := r.Lookup("must")
	require.NoError(t, err)
	assert.Same(t, k, got)

	defer func() {
		v := recover()
		require.NotNil(t, v, "MustRegister of a duplicate must panic")
		perr, ok := v.(error)
		require.True(t, ok, "the panic value is the Register error, got %T", v)
		assert.ErrorIs(t, perr, spi.ErrDuplicateKind)
	}()
	r.MustRegister(newFakeKind("must", spi.ClassRate))
}

func TestRegistryNamesSorted(t *testing.T) {
	r := &spi.Registry{}
	in := []string{"zeta", "alpha", "example.com/gcra", "Mid", "mid", "beta", "concurrency"}
	for _, n := range in {
		require.NoError(t, r.Register(newFakeKind(n, spi.ClassRate)))
	}

	names := r.Names()
	assert.Equal(t, []string{"Mid", "alpha", "beta", "concurrency", "example.com/gcra", "mid", "zeta"}, names)
	assert.True(t, slices.IsSorted(names))

	// The result is the caller's: changing it does not change the registry.
	names[0] = "mutated"
	assert.Equal(t, "Mid", r.Names()[0])
}

func TestRegistryValidate(t *testing.T) {
	t.Run("unknown kind wraps ErrUnknownKind and does not call any kind", func(t *testing.T) {
		r := &spi.Registry{}
		k := newFakeKind("known", spi.ClassConcurrency)
		require.NoError(t, r.Register(k))

		got, err := r.Validate(spi.Spec{Kind: "missing", Params: spi.Params{"size": 1}})
		assert.Nil(t, got)
		require.ErrorIs(t, err, spi.ErrUnknownKind)
		assert.Contains(t, err.Error(), `"missing"`)
		var pe *spi.ParamError
		assert.False(t, errors.As(err, &pe), "an unknown kind is not a parameter error")
		assert.Zero(t, k.validateCalls.Load())
	})

	t.Run("valid params return the kind", func(t *testing.T) {
		r := &spi.Registry{}
		k := newFakeKind("known", spi.ClassConcurrency)
		require.NoError(t, r.Register(k))

		params := spi.Params{"size": 4}
		got, err := r.Validate(spi.Spec{Kind: "known", Params: params})
		require.NoError(t, err)
		assert.Same(t, k, got)
		assert.EqualValues(t, 1, k.validateCalls.Load())
		require.NotNil(t, k.lastParams.Load())
		assert.Equal(t, params, *k.lastParams.Load(), "the spec's params are handed to the kind")
	})

	t.Run("invalid params return the kind's error", func(t *testing.T) {
		tests := []struct {
			name      string
			params    spi.Params
			wantParam string
			wantMsg   string
		}{
			{"nil params", nil, "size", "size: required"},
			{"empty params", spi.Params{}, "size", "size: required"},
			{"too small", spi.Params{"size": 0}, "size", "size: must be between 1 and 10, got 0"},
			{"too large", spi.Params{"size": 11}, "size", "size: must be between 1 and 10, got 11"},
			{"unknown param", spi.Params{"size": 1, "burst": 2}, "burst", "burst: unknown parameter"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := &spi.Registry{}
				k := newFakeKind("known", spi.ClassConcurrency)
				require.NoError(t, r.Register(k))

				got, err := r.Validate(spi.Spec{Kind: "known", Params: tt.params})
				assert.Nil(t, got, "no kind is returned with an error")
				require.EqualError(t, err, tt.wantMsg)
				var pe *spi.ParamError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tt.wantParam, pe.Param)
				assert.NotErrorIs(t, err, spi.ErrUnknownKind)
				assert.EqualValues(t, 1, k.validateCalls.Load())
			})
		}
	})

	t.Run("a kind's non-param error is passed through unchanged", func(t *testing.T) {
		sentinel := errors.New("kind-specific failure")
		r := &spi.Registry{}
		k := newFakeKind("picky", spi.ClassRate)
		k.validate = func(spi.Params) error { return sentinel }
		require.NoError(t, r.Register(k))

		got, err := r.Validate(spi.Spec{Kind: "picky"})
		assert.Nil(t, got)
		require.ErrorIs(t, err, sentinel)
		assert.NotErrorIs(t, err, spi.ErrUnknownKind)
	})
}

// TestRegistryConcurrentRegisterAndLookup is meant for -race: writers register
// distinct and contended names while readers look them up and list them.
func TestRegistryConcurrentRegisterAndLookup(t *testing.T) {
	const (
		writers      = 8
		perWriter    = 50
		readers      = 8
		readsPerLoop = 200
		contenders   = 8
	)
	r := &spi.Registry{}
	name := func(w, i int) string { return fmt.Sprintf("w%d/k%03d", w, i) }

	var (
		wg        sync.WaitGroup
		start     = make(chan struct{})
		dupWins   atomic.Int64
		dupLosses atomic.Int64
		errs      = make(chan error, writers*perWriter+2*readers*readsPerLoop+contenders)
	)

	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range perWriter {
				if err := r.Register(newFakeKind(name(w, i), spi.ClassConcurrency)); err != nil {
					errs <- err
				}
			}
		}()
	}
	// All contenders register the same name: exactly one may win.
	for range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := r.Register(newFakeKind("contended", spi.ClassRate))
			switch {
			case err == nil:
				dupWins.Add(1)
			case errors.Is(err, spi.ErrDuplicateKind):
				dupLosses.Add(1)
			default:
				errs <- err
			}
		}()
	}
	for rd := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range readsPerLoop {
				n := name(rd%writers, i%perWriter)
				k, err := r.Lookup(n)
				switch {
				case err == nil:
					if k.Name() != n {
						errs <- fmt.Errorf("Lookup(%q) returned kind %q", n, k.Name())
					}
				case !errors.Is(err, spi.ErrUnknownKind):
					errs <- fmt.Errorf("Lookup(%q): unexpected error %w", n, err)
				}
				if names := r.Names(); !slices.IsSorted(names) {
					errs <- fmt.Errorf("Names not sorted: %v", names)
				}
				_, _ = r.Validate(spi.Spec{Kind: n, Params: spi.Params{"size": 1}})
			}
		}()
	}

	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	assert.EqualValues(t, 1, dupWins.Load(), "exactly one concurrent registration of a name succeeds")
	assert.EqualValues(t, contenders-1, dupLosses.Load())

	names := r.Names()
	require.Len(t, names, writers*perWriter+1)
	for w := range writers {
		for i := range perWriter {
			k, err := r.Lookup(name(w, i))
			require.NoError(t, err)
			assert.Equal(t, name(w, i), k.Name())
		}
	}
	assert.True(t, slices.IsSorted(names))
	assert.True(t, strings.HasPrefix(names[0], "contended"))
}
