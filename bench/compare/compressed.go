package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicerpc/sluice/bench/internal/payload"
	"github.com/sluicerpc/sluice/bench/internal/unary"
	"github.com/sluicerpc/sluice/codecs"
)

// runCompressed measures accepted compressed unary calls: sluice with
// zstd, s2 and gzip (each alone on both sides, requests and responses
// compressed per the default policy) against grpc-go with its gzip
// compressor, echoing the same JSON-like payload of each size (so both
// directions are compressed), rounds times interleaving the systems. It
// prints a table of medians, then
//
//	RATIO compressed/<codec>/<size>/c<n> <sluice-<codec> calls/s divided by grpc-go-gzip calls/s>
func runCompressed(d, warmup time.Duration, rounds int, sizes, concs []int) error {
	systems := []unary.System{
		unary.SluiceCompressed(codecs.Zstd()),
		unary.SluiceCompressed(codecs.S2()),
		unary.SluiceCompressed(codecs.Gzip()),
		unary.GRPCGzip(),
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
	bodies := map[int][]byte{}
	for _, size := range sizes {
		bodies[size] = payload.JSON(size)
	}
	results := map[key][]unary.Result{}
	for round := range rounds {
		for _, size := range sizes {
			for _, conc := range concs {
				for i, s := range systems {
					r, err := unary.MeasureBody(s.Name, callers[i], bodies[size], conc, warmup, d)
					if err != nil {
						return err
					}
					k := key{s.Name, size, conc}
					results[k] = append(results[k], r)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "compressed: round %d of %d done\n", round+1, rounds)
	}
	med := func(k key) unary.Result { return median(results[k]) }
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tsystem\tcalls/s\tp50\tp99\tCPU/call\tallocs/call\t")
	for _, size := range sizes {
		for _, conc := range concs {
			for _, s := range systems {
				r := med(key{s.Name, size, conc})
				fmt.Fprintf(tw, "compressed/%s/c%d\t%s\t%.0f\t%v\t%v\t%v\t%.1f\t\n", sizeName(size), conc, s.Name,
					r.CallsPerSecond(), r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond),
					r.CPUPerCall.Round(100*time.Nanosecond), r.AllocsPerCall)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range systems[:3] {
		codec := strings.TrimPrefix(s.Name, "sluice-")
		for _, size := range sizes {
			for _, conc := range concs {
				sl, gr := med(key{s.Name, size, conc}), med(key{"grpc-go-gzip", size, conc})
				fmt.Printf("RATIO compressed/%s/%s/c%d %.2f\n", codec, sizeName(size), conc, sl.CallsPerSecond()/gr.CallsPerSecond())
			}
		}
	}
	return nil
}
