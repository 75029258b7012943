// Command sluice is the sluice command-line program.
//
// Usage:
//
//	sluice demo [flags]                   run the live-reconfiguration admission demo
//	sluice conformance --plugin PATH ...  run the conformance suite against a plugin binary
//	sluice serve [flags]                  serve the echo service
//	sluice call [flags]                   call a method or open a stream, or load it
//	sluice admin get|status|put|plan|disable  read or change a running server's configuration
//	sluice load [flags]                   load a server at a fixed rate or concurrency, and report
//	sluice help                           print this help
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and failed (an invariant, a conformance check), or could not run
	exitUsage = 2 // bad command line
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	force := make(chan struct{})
	forceStop = force
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel() // the first SIGINT or SIGTERM: graceful, bounded stop
		<-sigs
		close(force) // the second: close at once
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	signal.Stop(sigs)
	os.Exit(code)
}

// forceStop is closed by a second interrupt or termination signal: a
// command that is stopping gracefully stops at once. Nil (never closed)
// outside main.
var forceStop <-chan struct{}

// run dispatches a subcommand and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "demo":
		return runDemoCommand(ctx, args[1:], stdout, stderr)
	case "conformance":
		return runConformanceCommand(ctx, args[1:], stdout, stderr)
	case "serve":
		return runServeCommand(ctx, args[1:], stdout, stderr)
	case "call":
		return runCallCommand(ctx, args[1:], stdout, stderr)
	case "admin":
		return runAdminCommand(ctx, args[1:], stdout, stderr)
	case "load":
		return runLoadCommand(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	default:
		fmt.Fprintf(stderr, "sluice: unknown subcommand %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: sluice <command> [flags]

commands:
  demo         run in-process workers through live admission updates and
               check that no grant ever exceeded the configuration that
               granted it, nor the rate of a token bucket changed live
  conformance  run the limiter conformance suite against the kinds a
               plugin binary serves: sluice conformance --plugin PATH
  serve        serve the echo service (echo/Say, echo/Sleep, and the streams
               echo/Repeat, echo/Collect, echo/Chat) over TCP or TLS, with
               connection, call and admission bounds
  call         call a method once or open a stream, or load it with -n and -c
  admin        read and change a running server's configuration through its
               admin API: sluice admin get|status|put FILE|plan FILE|disable
  load         load a server with calls at a fixed rate (-rate) or with a
               fixed number of callers (-c): progress, a latency histogram,
               a table of status codes and refusal reasons, or -json
  help         print this help

Run "sluice <command> -h" for a command's flags.
`)
}

// runDemoCommand parses the demo's flags, runs it and maps the result to an
// exit status.
func runDemoCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	def := defaultDemoOptions()
	fs := flag.NewFlagSet("sluice demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workers := fs.Int("workers", def.Workers, "number of worker goroutines (at least 4)")
	seed := fs.Uint64("seed", def.Seed, "seed of the workers' random hold times, methods and payload sizes")
	step := fs.Duration("step", def.Step, "pause after each step of the scenario")
	rateStep := fs.Duration("rate-step", def.RateStep, "how long each token bucket of the rate phase stays in force")
	svg := fs.String("svg", def.SVG, "write the run's chart (limit, active, queued, admitted rate, updates) to this SVG file; empty: none")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sluice demo [flags]\n\nflags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	opts := def
	opts.Workers, opts.Seed, opts.Step, opts.RateStep, opts.SVG = *workers, *seed, *step, *rateStep, *svg
	if err := opts.validate(); err != nil {
		fmt.Fprintf(stderr, "sluice demo: %v\n", err)
		return exitUsage
	}

	res, err := runDemo(ctx, stdout, opts)
	if res.UnexpectedErrors > 0 {
		fmt.Fprintf(stderr, "sluice demo: %d calls ended with an unexpected error, the first: %s\n", res.UnexpectedErrors, res.UnexpectedExamples[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice demo: %v\n", err)
		return exitFail
	}
	if !res.OK() {
		return exitFail
	}
	return exitOK
}

// minStep keeps the scenario's pauses long enough to be observable.
const minStep = 5 * time.Millisecond

// parseFlags parses a subcommand's args with fs. It reports false, with the
// exit status to return, when the command must not run: -h (exitOK), a bad
// flag or an argument that is not a flag (exitUsage, after saying so).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments: %q\n", fs.Name(), fs.Args())
		return exitUsage, false
	}
	return 0, true
}
