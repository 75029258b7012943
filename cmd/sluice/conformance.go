package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sync"

	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/spi"
)

// conformanceOptions are the flags of "sluice conformance".
type conformanceOptions struct {
	Plugin      string
	Kind        string
	Verbose     bool
	CallTimeout time.Duration
}

// runConformanceCommand parses the flags of "sluice conformance", runs the
// suite and maps the result to an exit status.
func runConformanceCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o conformanceOptions
	fs.StringVar(&o.Plugin, "plugin", "", "path of the plugin binary to test (required)")
	fs.StringVar(&o.Kind, "kind", "", "test only the limiter kind, endpoint policy or codec with this name (default: everything the plugin serves)")
	fs.BoolVar(&o.Verbose, "v", false, "print every check's outcome and what it logged")
	fs.DurationVar(&o.CallTimeout, "call-timeout", 30*time.Second, "how long a call to the plugin may go unanswered")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: sluice conformance --plugin PATH [--kind NAME] [flags]

Starts the plugin binary at PATH and runs the conformance suites against
every limiter kind, endpoint policy and codec it serves (or only the one
named NAME), with the capabilities the plugin declares (codecs: with the
bombs it builds). Prints one line per kind, policy or codec,

  conformance <name> plugin PASS|FAIL

and what failed to stderr. Exits 0 when every one passes, 1 when one
fails, declares no capabilities, or the plugin cannot be started, 2 on a
bad command line.

flags:
`)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	switch {
	case o.Plugin == "":
		fmt.Fprintln(stderr, "sluice conformance: --plugin is required")
		fs.Usage()
		return exitUsage
	case o.CallTimeout <= 0:
		fmt.Fprintf(stderr, "sluice conformance: --call-timeout must be positive, got %v\n", o.CallTimeout)
		return exitUsage
	}
	passed, err := runConformance(ctx, stdout, stderr, o)
	if err != nil {
		fmt.Fprintf(stderr, "sluice conformance: %v\n", err)
		return exitFail
	}
	if !passed {
		return exitFail
	}
	return exitOK
}

// runConformance tests the kinds of one plugin binary and reports whether
// every tested kind passed. It returns an error when nothing could be
// tested: the plugin did not start, or serves no kind named o.Kind.
func runConformance(ctx context.Context, stdout, stderr io.Writer, o conformanceOptions) (bool, error) {
	// The property checks would otherwise write rapid's fail files into
	// the working directory.
	if f := flag.Lookup("rapid.nofailfile"); f != nil {
		_ = f.Value.Set("true")
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: stderr, Level: hclog.Warn})
	p, err := plugin.Open(o.Plugin, plugin.WithLogger(logger), plugin.WithCallTimeout(o.CallTimeout))
	if err != nil {
		return false, err
	}
	defer func() { _ = p.Close() }()

	kinds, policies, codecs := p.LimiterKinds(), p.EndpointPolicies(), p.Codecs()
	if o.Kind != "" {
		kinds, policies, codecs = nil, nil, nil
		if k, err := p.LimiterKind(o.Kind); err == nil {
			kinds = []*plugin.LimiterKindClient{k}
		} else if slices.Contains(p.EndpointPolicies(), o.Kind) {
			policies = []string{o.Kind}
		} else if c, cerr := p.Codec(o.Kind); cerr == nil {
			codecs = []*plugin.CodecClient{c}
		} else {
			return false, fmt.Errorf("%w; endpoint policies: %q; codecs: %q", err, p.EndpointPolicies(), codecNames(p.Codecs()))
		}
	}
	all := true
	for _, k := range kinds {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if !checkPluginKind(stdout, stderr, k, o.Verbose) {
			all = false
		}
	}
	for _, name := range policies {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if !checkPluginPolicy(stdout, stderr, p, name, o.Verbose) {
			all = false
		}
	}
	for _, c := range codecs {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if !checkPluginCodec(stdout, stderr, c, o.Verbose) {
			all = false
		}
	}
	return all, nil
}

// checkPluginCodec runs the codec suite against one codec the plugin
// serves, with the bombs the plugin builds for it (none: the checks that
// need one use Compress's output or skip), and prints its line. Every
// check uses the one plugin process.
func checkPluginCodec(stdout, stderr io.Writer, c *plugin.CodecClient, verbose bool) bool {
	bomb := c.Bomb
	if !c.HasBomb() {
		fmt.Fprintf(stderr, "    %s builds no bombs (serve it with plugin.CodecEntry{Codec: ..., Bomb: ...}): BombRefused is skipped\n", c.Name())
		bomb = func(int64) ([]byte, error) {
			return nil, fmt.Errorf("%s: the plugin builds no bombs: %w", c.Name(), errors.ErrUnsupported)
		}
	}
	report := conformance.CheckCodec(c.Name(), func() (conformance.CodecHarness, error) {
		return conformance.CodecHarnessOf(func() (spi.Codec, error) { return c, nil }, bomb), nil
	})
	printReport(stdout, stderr, c.Name(), report, verbose)
	return report.Passed()
}

func codecNames(codecs []*plugin.CodecClient) []string {
	names := make([]string, len(codecs))
	for i, c := range codecs {
		names[i] = c.Name()
	}
	return names
}

// checkPluginKind runs the suite against one kind and prints its line.
func checkPluginKind(stdout, stderr io.Writer, k *plugin.LimiterKindClient, verbose bool) bool {
	caps, ok := k.Capabilities()
	if !ok {
		fmt.Fprintf(stdout, "conformance %s plugin FAIL\n", k.Name())
		fmt.Fprintf(stderr, "    %s declares no conformance capabilities: serve it with plugin.LimiterKindEntry{Kind: ..., Capabilities: ...}\n", k.Name())
		return false
	}
	// Every check uses the one plugin process, which outlives them.
	report := conformance.CheckLimiter(k.Name(), func() (conformance.LimiterHarness, error) {
		return conformance.HarnessOf(k, caps), nil
	})
	printReport(stdout, stderr, k.Name(), report, verbose)
	return report.Passed()
}

// checkPluginPolicy runs the endpoint policy suite against one policy the
// plugin serves, with the capabilities it declares (the zero value when
// none: liveness, junk tokens and concurrent use only), each instance on
// the suite's clock, and prints its line.
func checkPluginPolicy(stdout, stderr io.Writer, p *plugin.Plugin, name string, verbose bool) bool {
	caps, _ := p.EndpointPolicyCapabilities(name)
	var (
		mu   sync.Mutex
		made []*plugin.EndpointPolicyClient
	)
	report := conformance.CheckEndpointPolicy(name, func() (conformance.EndpointPolicyHarness, error) {
		return conformance.EndpointPolicyHarnessOf(func(clock spi.Clock) (spi.EndpointPolicy, error) {
			ep, err := p.NewEndpointPolicy(name, plugin.WithPolicyClock(clock))
			if err != nil {
				return nil, err
			}
			mu.Lock()
			made = append(made, ep)
			mu.Unlock()
			return ep, nil
		}, caps, func() {
			mu.Lock()
			defer mu.Unlock()
			for _, ep := range made {
				_ = ep.Close()
			}
			made = nil
		}), nil
	})
	printReport(stdout, stderr, name, report, verbose)
	return report.Passed()
}

// printReport prints the line of one implementation and, to stderr, its
// failed checks (every check with verbose).
func printReport(stdout, stderr io.Writer, name string, report conformance.Report, verbose bool) {
	verdict := "PASS"
	if !report.Passed() {
		verdict = "FAIL"
	}
	fmt.Fprintf(stdout, "conformance %s plugin %s\n", name, verdict)
	for _, c := range report.Checks {
		if c.Outcome != conformance.Failed && !verbose {
			continue
		}
		fmt.Fprintf(stderr, "    %s/%s %s\n", name, c.Name, c.Outcome)
		for _, line := range c.Log {
			fmt.Fprintf(stderr, "        %s\n", strings.ReplaceAll(line, "\n", "\n        "))
		}
	}
}
