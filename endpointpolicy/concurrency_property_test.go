package endpointpolicy_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/endpointpolicy"
)

// TestEndpointConcurrencyModel checks EndpointConcurrency against a model
// (the limit, the tokens held per endpoint, the tokens already reported)
// over random sequences of acquires, reports, repeated and bogus reports
// and resizes.
func TestEndpointConcurrencyModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 6).Draw(t, "limit")
		c, err := endpointpolicy.NewEndpointConcurrency(limit)
		if err != nil {
			t.Fatal(err)
		}
		eps := []string{"a", "b", "c"}
		held := map[string][]uint64{}
		var reported []uint64
		check := func(t *rapid.T) {
			for _, e := range eps {
				if got, want := c.InFlight(e), len(held[e]); got != want {
					t.Fatalf("%s: in flight %d, model %d", e, got, want)
				}
			}
			if c.Limit() != limit {
				t.Fatalf("limit %d, model %d", c.Limit(), limit)
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"acquire": func(t *rapid.T) {
				e := rapid.SampledFrom(eps).Draw(t, "endpoint")
				d := c.TryAcquire(e, "m")
				if want := len(held[e]) < limit; d.Allowed != want {
					t.Fatalf("%s: allowed %v with %d held, limit %d", e, d.Allowed, len(held[e]), limit)
				}
				if d.Allowed {
					if d.Token == 0 {
						t.Fatal("zero token")
					}
					held[e] = append(held[e], d.Token)
				}
			},
			"report": func(t *rapid.T) {
				e := rapid.SampledFrom(eps).Draw(t, "endpoint")
				if len(held[e]) == 0 {
					t.Skip("nothing held")
				}
				i := rapid.IntRange(0, len(held[e])-1).Draw(t, "token")
				tok := held[e][i]
				held[e] = append(held[e][:i], held[e][i+1:]...)
				c.Report(success, tok)
				reported = append(reported, tok)
			},
			"repeat": func(t *rapid.T) {
				if len(reported) == 0 {
					t.Skip("nothing reported")
				}
				c.Report(success, rapid.SampledFrom(reported).Draw(t, "token"))
			},
			"bogus": func(t *rapid.T) {
				tok := rapid.Uint64().Draw(t, "token")
				for _, h := range held {
					for _, x := range h {
						if x == tok {
							t.Skip("drew a live token")
						}
					}
				}
				c.Report(success, tok)
			},
			"resize": func(t *rapid.T) {
				limit = rapid.IntRange(1, 6).Draw(t, "new limit")
				if err := c.SetLimit(limit); err != nil {
					t.Fatal(err)
				}
			},
			"": check,
		})
	})
}
