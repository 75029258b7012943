package main

import (
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/sluicerpc/sluice/bench/internal/stream"
)

// runStream measures streaming calls (bench/internal/stream): sluice
// against grpc-go (raw codec, default windows on both, nothing
// compressed), server-streaming and bidirectional, at each message size,
// rounds times interleaving the systems (after a warm-up call each). It
// prints a table of medians (messages/s, MB/s, allocations per message,
// client and server together), then one line per case
//
//	RATIO stream/<server|bidi>/<size> <sluice messages/s divided by grpc-go messages/s>
func runStream(d time.Duration, rounds int, sizes []int) error {
	systems := []stream.System{stream.Sluice(), stream.GRPC()}
	streamers := make([]stream.Streamer, len(systems))
	for i, s := range systems {
		st, stop, err := s.Start()
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		defer stop()
		streamers[i] = st
	}
	kinds := []stream.Kind{stream.ServerStreaming, stream.Bidi}
	type skey struct {
		system string
		kind   stream.Kind
		size   int
	}
	results := map[skey][]stream.Result{}
	for round := range rounds {
		for _, kind := range kinds {
			for _, size := range sizes {
				// Alternate which system goes first from round to round.
				order := []int{0, 1}
				if round%2 == 1 {
					order = []int{1, 0}
				}
				for _, i := range order {
					r, err := stream.Measure(systems[i].Name, streamers[i], kind, size, d)
					if err != nil {
						return err
					}
					k := skey{systems[i].Name, kind, size}
					results[k] = append(results[k], r)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "stream: round %d of %d done\n", round+1, rounds)
	}
	med := func(k skey) stream.Result {
		rs := slices.Clone(results[k])
		slices.SortFunc(rs, func(a, b stream.Result) int {
			switch {
			case a.MessagesPerSecond() < b.MessagesPerSecond():
				return -1
			case a.MessagesPerSecond() > b.MessagesPerSecond():
				return 1
			}
			return 0
		})
		return rs[len(rs)/2]
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tsystem\tmessages/s\tMB/s\tallocs/message\t")
	for _, kind := range kinds {
		for _, size := range sizes {
			for _, s := range systems {
				r := med(skey{s.Name, kind, size})
				fmt.Fprintf(tw, "stream/%s/%s\t%s\t%.0f\t%.1f\t%.2f\t\n", kind, sizeName(size), s.Name,
					r.MessagesPerSecond(), r.MBPerSecond(), r.AllocsPerMessage)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, kind := range kinds {
		for _, size := range sizes {
			sl, gr := med(skey{"sluice", kind, size}), med(skey{"grpc-go", kind, size})
			fmt.Printf("RATIO stream/%s/%s %.2f\n", kind, sizeName(size), sl.MessagesPerSecond()/gr.MessagesPerSecond())
		}
	}
	return nil
}
