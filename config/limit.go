package config

// Limit kinds, the values of Limit.Kind.
const (
	KindConcurrency   = "concurrency"
	KindTokenBucket   = "token_bucket"
	KindFixedWindow   = "fixed_window"
	KindSlidingWindow = "sliding_window"
)

// Limit is one limiter of a rule, discriminated by Kind. Each kind takes
// its own parameters, and a parameter of another kind is an error:
//   - concurrency: limit;
//   - token_bucket: token_limit, tokens_per_period, period, continuous;
//   - fixed_window: limit, window;
//   - sliding_window: limit, window, segments.
//
// A nil parameter is absent.
type Limit struct {
	// Kind is concurrency, token_bucket, fixed_window or sliding_window.
	// Required.
	Kind string `yaml:"kind" default:"required" enum:"concurrency,token_bucket,fixed_window,sliding_window"`
	// Limit is the concurrent requests admitted (concurrency) or the
	// units a window admits (fixed_window, sliding_window). Required for
	// those kinds; at least 1.
	Limit *int64 `yaml:"limit" default:"required by its kinds"`
	// TokenLimit is a token bucket's capacity (token_bucket). Required;
	// at least 1.
	TokenLimit *int64 `yaml:"token_limit" default:"required by its kind"`
	// TokensPerPeriod is the refill per period (token_bucket). Required;
	// at least 1.
	TokensPerPeriod *int64 `yaml:"tokens_per_period" default:"required by its kind"`
	// Period is the refill period (token_bucket). Required; at least
	// 1µs.
	Period *Duration `yaml:"period" default:"required by its kind"`
	// Continuous refills continuously instead of at period boundaries
	// (token_bucket). Default false.
	Continuous *bool `yaml:"continuous" default:"false"`
	// Window is the window length (fixed_window, sliding_window).
	// Required; at least 1µs.
	Window *Duration `yaml:"window" default:"required by its kinds"`
	// Segments divide a sliding window (sliding_window). Required; at
	// least 2 and must divide window exactly.
	Segments *int64 `yaml:"segments" default:"required by its kind"`
}

// kindParams lists the parameters (document keys) each kind takes.
var kindParams = map[string][]string{
	KindConcurrency:   {"limit"},
	KindTokenBucket:   {"token_limit", "tokens_per_period", "period", "continuous"},
	KindFixedWindow:   {"limit", "window"},
	KindSlidingWindow: {"limit", "window", "segments"},
}

// present returns the document keys of l's parameters that are set.
func (l Limit) present() []string {
	var out []string
	for _, p := range []struct {
		key string
		set bool
	}{
		{"limit", l.Limit != nil}, {"token_limit", l.TokenLimit != nil},
		{"tokens_per_period", l.TokensPerPeriod != nil}, {"period", l.Period != nil},
		{"continuous", l.Continuous != nil}, {"window", l.Window != nil},
		{"segments", l.Segments != nil},
	} {
		if p.set {
			out = append(out, p.key)
		}
	}
	return out
}
