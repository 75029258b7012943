package plugin_test

import (
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/spi"
)

// slotsKind is the kind the examples serve: at most "slots" holders at
// once. (examples/thirdparty-limiter has a complete third-party kind, GCRA,
// with its plugin binary.)
type slotsKind struct{}

func (slotsKind) Name() string     { return "example.com/slots" }
func (slotsKind) Class() spi.Class { return spi.ClassConcurrency }

func (slotsKind) Validate(p spi.Params) error {
	for name := range p {
		if name != "slots" {
			return spi.InvalidParam(name, "unknown parameter")
		}
	}
	if n, ok := p.Int("slots"); !ok || n < 1 {
		return spi.InvalidParam("slots", "required, at least 1")
	}
	return nil
}

func (k slotsKind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	if err := k.Validate(p); err != nil {
		return nil, err
	}
	return &slots{limit: p["slots"]}, nil
}

type slots struct {
	mu          sync.Mutex
	limit, held int64
}

func (s *slots) TryAcquire(_ time.Time, n int64) spi.Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case n > s.limit:
		return spi.RefuseNever()
	case n > s.limit-s.held:
		return spi.RefuseUntilRelease()
	}
	s.held += n
	return spi.Grant()
}

func (s *slots) Release(_ time.Time, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > s.held {
		panic(fmt.Sprintf("slots: released %d but only %d are held", n, s.held))
	}
	s.held -= n
}

func (s *slots) Cancel(now time.Time, n int64) { s.Release(now, n) }

func (s *slots) Reconfigure(_ time.Time, p spi.Params) error {
	if err := (slotsKind{}).Validate(p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = p["slots"]
	return nil
}

func (s *slots) Snapshot(time.Time) spi.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return spi.Snapshot{Kind: "example.com/slots", Limit: s.limit, InUse: s.held, Available: max(0, s.limit-s.held)}
}

// slotsCapabilities tells "sluice conformance --plugin" how to test the kind.
func slotsCapabilities() *capabilities.Limiter {
	return &capabilities.Limiter{
		Class:            spi.ClassConcurrency,
		Params:           func(limit int64) spi.Params { return spi.Params{"slots": limit} },
		ReconfigureLimit: true,
	}
}

// A plugin binary's main is one Serve call; it writes nothing to stdout
// (the handshake travels there) and logs to stderr. Compile-only: Serve
// runs only as a child of a host that started it (Open).
func ExampleServe() {
	plugin.Serve(plugin.ServeConfig{
		LimiterKinds: []plugin.LimiterKindEntry{{Kind: slotsKind{}, Capabilities: slotsCapabilities()}},
		Logger:       plugin.NewPluginLogger("slots-plugin"),
	})
}

// Serve refuses a configuration that Validate refuses; a binary may check
// its own at start-up (or in its tests).
func ExampleServeConfig_Validate() {
	fmt.Println(plugin.ServeConfig{}.Validate())
	entry := plugin.LimiterKindEntry{Kind: slotsKind{}, Capabilities: slotsCapabilities()}
	fmt.Println(plugin.ServeConfig{LimiterKinds: []plugin.LimiterKindEntry{entry}}.Validate())
	fmt.Println(plugin.ServeConfig{LimiterKinds: []plugin.LimiterKindEntry{entry, entry}}.Validate())
	// Output:
	// sluice/plugin: ServeConfig has no limiter kind and no endpoint policy, and no codec
	// <nil>
	// sluice/plugin: limiter kind "example.com/slots" is served twice
}

// A host opens the binary and registers its kinds, so that configuration
// can name them like built-in ones; every limiter then lives in the plugin
// process. Compile-only: it needs a plugin binary built (go build of a main
// like ExampleServe's).
func ExampleOpen() {
	p, err := plugin.Open("/usr/local/libexec/sluice/slots-plugin")
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close() // kills the plugin process
	reg := &spi.Registry{}
	if err := p.Register(reg); err != nil {
		log.Fatal(err)
	}
	kind, err := reg.Validate(spi.Spec{Kind: "example.com/slots", Params: spi.Params{"slots": 2}})
	if err != nil {
		log.Fatal(err)
	}
	l, err := kind.New(spi.Params{"slots": 2}, time.Now())
	if err != nil {
		log.Fatal(err) // wraps plugin.ErrPluginUnavailable if the plugin is gone
	}
	fmt.Println(reg.Names(), l.TryAcquire(time.Now(), 1).Granted)
}
