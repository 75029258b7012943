package decodemodel

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// plan is how much TestPhase0 measures.
type plan struct {
	warm, dur time.Duration
	reps      int
	minCalls  int // calls per throughput window, at least
	samples   int // Cancel probes per cell and repetition
	probeReps int
	sizes     []int
	concs     []int
	codecs    []string // throughput matrix
}

// phase0Plan is the short default (well under 60 s on 2 noisy cores), the
// long run with DECODEMODEL_LONG=1 (about 10 minutes per throughput codec;
// DECODEMODEL_CODECS=zstd,gzip,s2,br widens it), and a tiny one under -race
// or -short, which checks the invariants only.
func phase0Plan() plan {
	p := plan{warm: 5 * time.Millisecond, dur: 15 * time.Millisecond, reps: 1, minCalls: 8, samples: 5, probeReps: 1,
		sizes: []int{1 << 10, 64 << 10, 1 << 20}, concs: []int{1, 16, 128}, codecs: []string{"zstd"}}
	switch {
	case os.Getenv("DECODEMODEL_REPS") != "":
		// the medium run docs/governor.md reports: the short windows, more repetitions and probes
		p.warm, p.dur = 10*time.Millisecond, 25*time.Millisecond
		p.reps, p.minCalls, p.samples = atoi(os.Getenv("DECODEMODEL_REPS")), 24, 15
		p.probeReps = p.reps
	case os.Getenv("DECODEMODEL_LONG") != "":
		p.warm, p.dur, p.reps, p.minCalls, p.samples = 100*time.Millisecond, 400*time.Millisecond, 5, 200, 100
		p.probeReps = p.reps
	case raceEnabled || testing.Short():
		p.warm, p.dur, p.reps, p.minCalls, p.samples = 2*time.Millisecond, 10*time.Millisecond, 1, 4, 2
		p.probeReps = 1
		p.sizes, p.concs = []int{1 << 10, 64 << 10}, []int{1, 16} // the race detector slows decodes tenfold
	}
	if s := os.Getenv("DECODEMODEL_CODECS"); s != "" {
		p.codecs = strings.Split(s, ",")
	}
	return p
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		panic("decodemodel: DECODEMODEL_REPS wants a positive integer, not " + s)
	}
	return n
}

// order is the models of repetition rep: rotated by rep, reversed on odd
// repetitions, so that no model always runs first or after the same one.
func order(models []Model, rep int) []Model {
	o := slices.Clone(models)
	k := rep % len(o)
	o = append(o[k:], o[:k]...)
	if rep%2 == 1 {
		slices.Reverse(o)
	}
	return o
}

func medianOf[T any](xs []T, key func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = key(x)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func us(d float64) string { return fmt.Sprintf("%.0f", d/1e3) }

// TestPhase0 runs the Phase 0 experiment and prints its tables (markdown)
// to stdout, or to the file DECODEMODEL_OUT names. Besides the numbers it
// checks what holds by construction: every admitted call is answered and
// releases its capacity, a refused request is never decoded, and the inline
// reader (b) never stops a decode for a Cancel.
func TestPhase0(t *testing.T) {
	p := phase0Plan()
	var out io.Writer = os.Stdout
	if name := os.Getenv("DECODEMODEL_OUT"); name != "" {
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		out = f
	}
	start := time.Now()
	fmt.Fprintf(out, "Phase 0: GOMAXPROCS=%d, %s/%s, %s; window %v after %v warm-up, %d repetitions (medians), models in alternating order.\n\n",
		runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version(), p.dur, p.warm, p.reps)

	for _, section := range []func(*testing.T, io.Writer, plan){throughput, refused, cancelWait, stopLatency} {
		t0 := time.Now()
		section(t, out, p)
		t.Logf("section took %v", time.Since(t0).Round(time.Millisecond))
	}
	fmt.Fprintf(out, "\nTestPhase0 took %v.\n", time.Since(start).Round(time.Second))
}

func throughput(t *testing.T, out io.Writer, p plan) {
	fmt.Fprintf(out, "### Throughput (closed loop; CPU and B per call include the in-process client)\n\n")
	fmt.Fprintf(out, "| codec | size | ratio | cancel | conc | model | calls/s | CPU us/call | p50 us | p99 us | KB/call |\n")
	fmt.Fprintf(out, "|---|---|---|---|---|---|---:|---:|---:|---:|---:|\n")
	for _, codec := range p.codecs {
		for _, size := range p.sizes {
			for _, ratio := range []Ratio{High, Low} {
				body := Body(codec, Payload(ratio, size))
				for _, cancellable := range []bool{false, true} {
					for _, conc := range p.concs {
						res := map[Model][]Result{}
						for rep := range p.reps {
							for _, m := range order(Models, rep) {
								c := Cell{Model: m, Codec: codec, Size: size, Ratio: ratio, Cancellable: cancellable, Conc: conc}
								r, err := RunCell(c, body, p.warm, p.dur, p.minCalls)
								if err != nil {
									t.Fatal(err)
								}
								if r.Status[statusOK] != r.Calls {
									t.Fatalf("%v: statuses %v of %d calls", c, r.Status, r.Calls)
								}
								res[m] = append(res[m], r)
							}
						}
						for _, m := range Models {
							rs := res[m]
							fmt.Fprintf(out, "| %s | %s | %s | %v | %d | %s | %.0f | %s | %s | %s | %.1f |\n",
								codec, sizeName(size), ratio, onOff(cancellable), conc, m,
								medianOf(rs, func(r Result) float64 { return r.CallsPerSec }),
								us(medianOf(rs, func(r Result) float64 { return float64(r.CPUPerCall) })),
								us(medianOf(rs, func(r Result) float64 { return float64(r.P50) })),
								us(medianOf(rs, func(r Result) float64 { return float64(r.P99) })),
								medianOf(rs, func(r Result) float64 { return r.BytesPerCall })/1e3)
						}
					}
				}
			}
		}
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func refused(t *testing.T, out io.Writer, p plan) {
	size := p.sizes[len(p.sizes)-1]
	fmt.Fprintf(out, "\n### Capacity full: every request refused by the reader before any decode (zstd, %s, high, 16 callers)\n\n", sizeName(size))
	fmt.Fprintf(out, "| model | refused/s | CPU us/refusal | decodes | decoded bytes |\n|---|---:|---:|---:|---:|\n")
	body := Body("zstd", Payload(High, size))
	res := map[Model][]Result{}
	for rep := range p.reps {
		for _, m := range order(Models, rep) {
			c := Cell{Model: m, Codec: "zstd", Size: size, Ratio: High, Cancellable: true, Conc: 16, Refuse: true}
			r, err := RunCell(c, body, p.warm, p.dur, p.minCalls)
			if err != nil {
				t.Fatal(err)
			}
			if r.Decodes != 0 || r.DecodedBytes != 0 || r.Status[statusRefused] != r.Calls {
				t.Fatalf("%v: %d decodes, %d decoded bytes, statuses %v of %d refused calls", c, r.Decodes, r.DecodedBytes, r.Status, r.Calls)
			}
			res[m] = append(res[m], r)
		}
	}
	for _, m := range Models {
		rs := res[m]
		fmt.Fprintf(out, "| %s | %.0f | %s | 0 | 0 |\n", m,
			medianOf(rs, func(r Result) float64 { return r.CallsPerSec }),
			us(medianOf(rs, func(r Result) float64 { return float64(r.CPUPerCall) })))
	}
}

var candidates = []Model{ModelCall, ModelInline, ModelQuanta, ModelWorkers}

func cancelWait(t *testing.T, out io.Writer, p plan) {
	fmt.Fprintf(out, "\n### Cancel wait (high ratio; %d probes per cell in each of %d repetitions; stall = Cancel written to read by the server, wait = Cancel written to the end of the cancelled decode)\n\n", p.samples, p.probeReps)
	fmt.Fprintf(out, "| codec | size | load | model | stall p50 us | stall p99 us | wait p50 us | wait p99 us | decoded anyway | decode p50 us |\n")
	fmt.Fprintf(out, "|---|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, codec := range []string{"zstd", "gzip", "s2", "br"} {
		for _, size := range p.sizes {
			body := Body(codec, Payload(High, size))
			for _, load := range []int{1, 16} {
				res := map[Model][]ProbeResult{}
				for rep := range p.probeReps {
					for _, m := range order(candidates, rep) {
						pc := ProbeCell{Model: m, Codec: codec, Size: size, Ratio: High, Load: load}
						r, err := RunProbe(pc, body, p.samples)
						if err != nil {
							t.Fatal(err)
						}
						if m == ModelInline && r.Completed != r.Samples {
							t.Fatalf("%v: the inline reader stopped %d decodes for a Cancel it cannot read", pc, r.Samples-r.Completed)
						}
						res[m] = append(res[m], r)
					}
				}
				for _, m := range candidates {
					rs := res[m]
					fmt.Fprintf(out, "| %s | %s | %d | %s | %s | %s | %s | %s | %.0f%% | %s |\n", codec, sizeName(size), load, m,
						us(medianOf(rs, func(r ProbeResult) float64 { return float64(r.StallP50) })),
						us(medianOf(rs, func(r ProbeResult) float64 { return float64(r.StallP99) })),
						us(medianOf(rs, func(r ProbeResult) float64 { return float64(r.WaitP50) })),
						us(medianOf(rs, func(r ProbeResult) float64 { return float64(r.WaitP99) })),
						medianOf(rs, func(r ProbeResult) float64 { return 100 * float64(r.Completed) / float64(r.Samples) }),
						us(medianOf(rs, func(r ProbeResult) float64 { return float64(r.DecodeP50) })))
				}
			}
		}
	}
}

func stopLatency(t *testing.T, out io.Writer, p plan) {
	reps := max(p.reps, 5)
	switch {
	case raceEnabled || testing.Short():
		reps = 1
	case p.reps == 1: // the short default
		reps = 3
	}
	size := p.sizes[len(p.sizes)-1]
	fmt.Fprintf(out, "\n### Stop (%s high-ratio bodies, 16 callers; %d repetitions: median and max)\n\n", sizeName(size), reps)
	fmt.Fprintf(out, "| codec | model | decodes ended: median us | max us | all goroutines ended: median us | max us |\n|---|---|---:|---:|---:|---:|\n")
	for _, codec := range []string{"zstd", "br"} {
		body := Body(codec, Payload(High, size))
		res := map[Model][]stopTimes{}
		for rep := range reps {
			for _, m := range order(candidates, rep) {
				st, err := RunStop(m, body, 16, max(p.warm, 20*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				res[m] = append(res[m], st)
			}
		}
		for _, m := range candidates {
			rs := res[m]
			dec := func(s stopTimes) float64 { return float64(s.decodes) }
			all := func(s stopTimes) float64 { return float64(s.all) }
			fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s |\n", codec, m,
				us(medianOf(rs, dec)), us(float64(slices.MaxFunc(rs, func(a, b stopTimes) int { return int(a.decodes - b.decodes) }).decodes)),
				us(medianOf(rs, all)), us(float64(slices.MaxFunc(rs, func(a, b stopTimes) int { return int(a.all - b.all) }).all)))
		}
	}
}
