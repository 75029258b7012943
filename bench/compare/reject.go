package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/sluicerpc/sluice/bench/internal/payload"
	"github.com/sluicerpc/sluice/bench/internal/reject"
)

// runReject measures the capacity-refused compressed flood: each server
// of reject.Kinds in a child process of its own, its one call held, conc
// callers sending compressed requests of each size, rounds times
// interleaving the servers. It prints a table of medians (by server CPU
// per refused call), then
//
//	RATIO reject/<size>/interceptor <sluice / grpc-go interceptor server CPU per refused call>
//	RATIO reject/<size>/tap <sluice / grpc-go tap server CPU per refused call>
//
// It fails when sluice decompressed anything during a flood.
func runReject(d, warmup time.Duration, rounds int, sizes []int, conc int) error {
	targets := make([]*reject.Target, len(reject.Kinds))
	for i, k := range reject.Kinds {
		t, err := reject.Start(k)
		if err != nil {
			return err
		}
		defer t.Close()
		targets[i] = t
	}
	type key struct {
		server string
		size   int
	}
	results := map[key][]reject.Result{}
	for round := range rounds {
		for _, size := range sizes {
			body := payload.JSON(size)
			for _, t := range targets {
				r, err := t.Measure(body, conc, warmup, d)
				if err != nil {
					return err
				}
				k := key{r.Server, size}
				results[k] = append(results[k], r)
			}
		}
		fmt.Fprintf(os.Stderr, "reject: round %d of %d done\n", round+1, rounds)
	}
	med := func(k key) reject.Result {
		s := slices.Clone(results[k])
		slices.SortFunc(s, func(a, b reject.Result) int { return int(a.ServerCPUPerCall() - b.ServerCPUPerCall()) })
		return s[len(s)/2]
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tserver\tbody bytes\trefused/s\tserver CPU/refused\tclient CPU/refused\tdecompressions\t")
	var errs []error
	for _, size := range sizes {
		for _, k := range reject.Kinds {
			r := med(key{k, size})
			fmt.Fprintf(tw, "reject/%s/c%d\t%s\t%d\t%.0f\t%v\t%v\t%d\t\n", sizeName(size), conc, k, r.Compressed,
				r.RefusedPerSecond(), r.ServerCPUPerCall().Round(10*time.Nanosecond), r.ClientCPUPerCall().Round(10*time.Nanosecond), r.Decompressions)
		}
		for _, r := range results[key{reject.Sluice, size}] {
			if r.Decompressions != 0 {
				errs = append(errs, fmt.Errorf("reject/%s: sluice decompressed %d bodies of %d refused calls", sizeName(size), r.Decompressions, r.Refused))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, size := range sizes {
		sl := med(key{reject.Sluice, size})
		var total uint64
		for _, r := range results[key{reject.Sluice, size}] {
			total += r.Decompressions
		}
		fmt.Printf("REJECT reject/%s sluice Stats().Decompressions over the measured floods: %d\n", sizeName(size), total)
		for _, g := range []struct{ name, server string }{{"interceptor", reject.GRPCInterceptor}, {"tap", reject.GRPCTap}} {
			gr := med(key{g.server, size})
			fmt.Printf("RATIO reject/%s/%s %.3f\n", sizeName(size), g.name, float64(sl.ServerCPUPerCall())/float64(gr.ServerCPUPerCall()))
		}
	}
	return errors.Join(errs...)
}
