// Package payload makes the request bodies of the compression benchmarks:
// JSON-like text as an API would send it, deterministic (the same bytes on
// every run and for every system measured), compressible the way real
// records are (repeated keys, varied values), not the way a repeated
// alphabet is.
package payload

import (
	"fmt"
	"math/rand/v2"
)

var (
	firstNames = []string{"ada", "grace", "alan", "edsger", "barbara", "donald", "ken", "dennis", "margaret", "john", "frances", "leslie"}
	cities     = []string{"Lisbon", "Osaka", "Nairobi", "Toronto", "Kraków", "Valparaíso", "Tbilisi", "Hobart", "Reykjavík", "Quito"}
	tags       = []string{"admin", "beta", "billing", "ops", "trial", "vip", "eu", "us", "apac", "mobile", "web", "api"}
	statuses   = []string{"active", "suspended", "pending", "closed"}
)

// JSON returns exactly n bytes of a JSON array of user records, the same
// bytes for the same n. The array is cut (and closed) to fit n, so the
// result is valid JSON only when the last record happens to end there;
// the compressors do not care.
func JSON(n int) []byte {
	r := rand.New(rand.NewPCG(12, uint64(n)))
	b := make([]byte, 0, n+512)
	b = append(b, '[')
	for id := 1; len(b) < n; id++ {
		if id > 1 {
			b = append(b, ',')
		}
		name := firstNames[r.IntN(len(firstNames))]
		b = fmt.Appendf(b, `{"id":%d,"name":%q,"email":"%s.%d@example.com","city":%q,"status":%q,"score":%.3f,"logins":%d,"tags":[`,
			100000+r.IntN(900000), name, name, r.IntN(10000), cities[r.IntN(len(cities))],
			statuses[r.IntN(len(statuses))], r.Float64()*100, r.IntN(5000))
		for j := range 1 + r.IntN(3) {
			if j > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, "%q", tags[r.IntN(len(tags))])
		}
		b = fmt.Appendf(b, `],"created":"2026-%02d-%02dT%02d:%02d:%02dZ","session":"%016x"}`,
			1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.Uint64())
	}
	b = b[:n]
	if n > 0 {
		b[n-1] = ']'
	}
	return b
}
