// Command compare measures sluice against grpc-go over TCP loopback, side
// by side, in one run. It repeats every case -rounds times, interleaving
// the systems, and reports medians. Three sections:
//
// Unary echo, uncompressed (neither sluice side compresses anything): 1 B
// and 1 KiB payloads at 1, 16, 64 and 128 concurrent calls, reporting
// calls/s, p50, p99 and allocations per call (client and server
// together), then one line per case
//
//	RATIO unary/<size>/c<n> <sluice calls/s divided by grpc-go calls/s>
//
// and one line per case for the cost of admission (an immediate permit on
// every call against admission disabled):
//
//	RATIO admission/<size>/c<n> <sluice-admission calls/s divided by sluice calls/s>
//
// Compressed unary echo (compressed.go): a JSON-like payload of 1 KiB,
// 64 KiB and 1 MiB at 1 and 16 concurrent calls, compressed both ways,
// sluice with zstd, s2 and gzip against grpc-go with its gzip compressor:
//
//	RATIO compressed/<codec>/<size>/c<n> <sluice calls/s divided by grpc-go-gzip calls/s>
//
// A capacity-refused compressed flood (reject.go, bench/internal/reject):
// each server in a child process, its one call held, 16 callers sending
// compressed 1 KiB and 64 KiB requests that are all refused; the
// server's CPU per refused call, sluice against grpc-go refusing from a
// unary interceptor and from a tap handle:
//
//	RATIO reject/<size>/interceptor <sluice server CPU per refused call / grpc-go's>
//	RATIO reject/<size>/tap <the same against the tap handle>
//
// with sluice's Stats().Decompressions for the refused calls (the run
// fails unless it is 0).
//
// Streaming calls (stream.go, bench/internal/stream): server-streaming
// and bidirectional messages/s and MB/s at 64 B, 1 KiB and 64 KiB
// messages, sluice against grpc-go (raw codec, default windows):
//
//	RATIO stream/<server|bidi>/<size> <sluice messages/s divided by grpc-go messages/s>
//
//	go run ./compare [-d 1s] [-warmup 200ms] [-rounds 3] [-sizes 1,1024] [-concs 1,16,64,128] [-grpc=false]
//	    [-compressed-sizes 1024,65536,1048576] [-compressed-concs 1,16] [-reject-sizes 1024,65536] [-reject-conc 16]
//	    [-stream-sizes 64,1024,65536]
//
// -grpc=false runs only the uncompressed sluice lines; an empty list skips
// its section.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicerpc/sluice/bench/internal/reject"
	"github.com/sluicerpc/sluice/bench/internal/unary"
)

func main() {
	if kind := os.Getenv(reject.ChildEnv); kind != "" {
		if err := reject.ServeChild(kind, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "compare: reject server:", err)
			os.Exit(1)
		}
		return
	}
	d := flag.Duration("d", time.Second, "measured duration of each case and round")
	warmup := flag.Duration("warmup", 200*time.Millisecond, "warm-up before each measurement")
	rounds := flag.Int("rounds", 3, "rounds; medians are reported")
	sizesFlag := flag.String("sizes", "1,1024", "payload sizes in bytes, comma-separated")
	concsFlag := flag.String("concs", "1,16,64,128", "concurrent callers, comma-separated")
	grpcFlag := flag.Bool("grpc", true, "include grpc-go (without it, only sluice with and without admission)")
	compSizes := flag.String("compressed-sizes", "1024,65536,1048576", "payload sizes of the compressed unary calls, comma-separated (empty: none)")
	compConcs := flag.String("compressed-concs", "1,16", "concurrent callers of the compressed unary calls, comma-separated")
	rejectSizes := flag.String("reject-sizes", "1024,65536", "payload sizes of the capacity-refused flood, comma-separated (empty: no flood)")
	rejectConc := flag.Int("reject-conc", 16, "concurrent callers of the capacity-refused flood")
	streamSizes := flag.String("stream-sizes", "64,1024,65536", "message sizes of the streaming calls, comma-separated (empty: none)")
	flag.Parse()
	sizes, err1 := ints(*sizesFlag)
	concs, err2 := ints(*concsFlag)
	csizes, err3 := optInts(*compSizes)
	cconcs, err4 := ints(*compConcs)
	rsizes, err5 := optInts(*rejectSizes)
	ssizes, err6 := optInts(*streamSizes)
	if *d <= 0 || *warmup < 0 || *rounds < 1 || *rejectConc < 1 || errors.Join(err1, err2, err3, err4, err5, err6) != nil {
		fmt.Fprintln(os.Stderr, "compare: -d must be positive, -warmup not negative, -rounds at least 1, -reject-conc at least 1, the lists positive integers")
		os.Exit(2)
	}
	if err := run(*d, *warmup, *rounds, sizes, concs, *grpcFlag); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
	if len(csizes) > 0 && *grpcFlag {
		if err := runCompressed(*d, *warmup, *rounds, csizes, cconcs); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
	}
	if len(ssizes) > 0 && *grpcFlag {
		if err := runStream(*d, *rounds, ssizes); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
	}
	if len(rsizes) > 0 && *grpcFlag {
		if err := runReject(*d, *warmup, *rounds, rsizes, *rejectConc); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
	}
}

type key struct {
	system     string
	size, conc int
}

func run(d, warmup time.Duration, rounds int, sizes, concs []int, withGRPC bool) error {
	systems := []unary.System{unary.Sluice(false), unary.Sluice(true)}
	if withGRPC {
		systems = []unary.System{unary.Sluice(false), unary.GRPC(), unary.Sluice(true)}
	}
	callers := make([]unary.Caller, len(systems))
	for i, s := range systems {
		c, stop, err := s.Start()
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		defer stop()
		callers[i] = c
	}
	results := map[key][]unary.Result{}
	for round := range rounds {
		for _, size := range sizes {
			for _, conc := range concs {
				for i, s := range systems {
					r, err := unary.Measure(s.Name, callers[i], size, conc, warmup, d)
					if err != nil {
						return err
					}
					k := key{s.Name, size, conc}
					results[k] = append(results[k], r)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "round %d of %d done\n", round+1, rounds)
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tsystem\tcalls/s\tp50\tp99\tallocs/call\t")
	med := func(k key) unary.Result { return median(results[k]) }
	for _, size := range sizes {
		for _, conc := range concs {
			for _, s := range systems {
				r := med(key{s.Name, size, conc})
				fmt.Fprintf(tw, "unary/%s/c%d\t%s\t%.0f\t%v\t%v\t%.1f\t\n", sizeName(size), conc, s.Name,
					r.CallsPerSecond(), r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.AllocsPerCall)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, size := range sizes {
		for _, conc := range concs {
			if !withGRPC {
				break
			}
			sl, gr := med(key{"sluice", size, conc}), med(key{"grpc-go", size, conc})
			fmt.Printf("RATIO unary/%s/c%d %.2f\n", sizeName(size), conc, sl.CallsPerSecond()/gr.CallsPerSecond())
		}
	}
	for _, size := range sizes {
		for _, conc := range concs {
			sl, ad := med(key{"sluice", size, conc}), med(key{"sluice-admission", size, conc})
			fmt.Printf("RATIO admission/%s/c%d %.3f\n", sizeName(size), conc, ad.CallsPerSecond()/sl.CallsPerSecond())
		}
	}
	return nil
}

// median returns the result with the median throughput; its latencies
// and allocations come from the same run.
func median(rs []unary.Result) unary.Result {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b unary.Result) int {
		switch {
		case a.CallsPerSecond() < b.CallsPerSecond():
			return -1
		case a.CallsPerSecond() > b.CallsPerSecond():
			return 1
		}
		return 0
	})
	return s[len(s)/2]
}

// ints parses a comma-separated list of positive integers.
func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// optInts is ints, or none for the empty string.
func optInts(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	return ints(s)
}

func sizeName(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}
