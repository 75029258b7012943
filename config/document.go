package config

// Version is the only document version this package reads.
const Version = 1

// Document is one configuration document. An absent section selects
// every default of its fields.
type Document struct {
	// Version of the document format. Required; must be 1.
	Version int `yaml:"version" default:"required"`
	// Server is what a server can change at runtime. Absent: every
	// server default, admission disabled.
	Server *Server `yaml:"server"`
	// Client is what a client can change at runtime. Absent: every
	// client default.
	Client *Client `yaml:"client"`

	// pos are the positions of the values Parse read, and name the
	// document's name, for the errors of the conversions.
	pos  positions
	name string
}

// Server is the server section.
type Server struct {
	// Admission is the admission program (kernel.Options). Absent:
	// admission disabled, every request admitted.
	Admission *Admission `yaml:"admission" default:"disabled"`
	// Calls bounds calls in flight (server.CallCapacity). Absent: the
	// defaults of its fields.
	Calls *Calls `yaml:"calls"`
	// Connections bounds connections (server.ConnectionLimits). Absent:
	// the defaults of its fields.
	Connections *Connections `yaml:"connections"`
	// Governor bounds what compressed requests cost (governor.Limits).
	// Absent: the defaults of its fields.
	Governor *Governor `yaml:"governor"`
	// Compression is what the server accepts and answers with
	// (codecs.Config). Absent: the defaults of its fields (every
	// built-in codec accepted).
	Compression *Compression `yaml:"compression"`
	// Streams configures streams. Absent: the defaults of its fields.
	Streams *Streams `yaml:"streams"`
}

// Admission is an admission program: rules for every method, per service
// and per method, the queue policy and the optional partition layer. At
// least one limit must be given somewhere (remove the section to disable
// admission).
type Admission struct {
	// Global applies to every method. Absent: no global limit.
	Global *Rule `yaml:"global"`
	// Services maps a service name to the rule of each of its methods.
	// Absent: none.
	Services map[string]Rule `yaml:"services"`
	// Methods maps "service/method" to the rule of that method alone.
	// Absent: none.
	Methods map[string]Rule `yaml:"methods"`
	// Queue says whether and how refused requests wait. Absent: no
	// request waits (a refusal is immediate).
	Queue *Queue `yaml:"queue" default:"no waiting"`
	// Partition is the partition layer, applied after the global,
	// service and method rules. Absent: none.
	Partition *Partition `yaml:"partition"`
}

// Rule is the limits of one scope: at most one concurrency limit and at
// most one rate limit (token_bucket, fixed_window or sliding_window). A
// rule that is present must have at least one limit.
type Rule struct {
	// Limits of the scope: one or two. Required.
	Limits []Limit `yaml:"limits" default:"required"`
}

// Queue bounds waiting: either every bound is zero (no request waits) or
// every bound is positive.
type Queue struct {
	// MaxQueuedCalls bounds the waiting requests. Default 0 (no
	// waiting).
	MaxQueuedCalls int `yaml:"max_queued_calls" default:"0"`
	// MaxQueuedBytes bounds the payload bytes waiting requests retain.
	// Default 0 (no waiting).
	MaxQueuedBytes Size `yaml:"max_queued_bytes" default:"0"`
	// MaxQueueDelay bounds how long one request waits. Default 0 (no
	// waiting).
	MaxQueueDelay Duration `yaml:"max_queue_delay" default:"0s"`
	// QueueOneWayCalls lets one-way requests wait too (requires
	// queueing). Default false: a refused one-way request is dropped.
	QueueOneWayCalls bool `yaml:"queue_one_way_calls" default:"false"`
}

// Partition is the partition layer: a selector the program registers
// maps each request to a key, and each key gets its own limits.
type Partition struct {
	// Selector names the partition selector, one of the names the
	// program registers (config.Selectors). Required.
	Selector string `yaml:"selector" default:"required"`
	// MaxPartitions bounds the number of keys (the default partition is
	// not counted). Required; at least 1, at most 1048576
	// (kernel.MaxPartitionsLimit): each key costs about 0.5 KB while it
	// lives, so the largest namespace holds about 500 MB.
	MaxPartitions int `yaml:"max_partitions" default:"required" minimum:"1" maximum:"1048576"`
	// IdleTimeout is how long an idle entry stays after its last
	// admission. Required; positive.
	IdleTimeout Duration `yaml:"idle_timeout" default:"required"`
	// Limits of each partition: one or two, as in a rule. Required.
	Limits []Limit `yaml:"limits" default:"required"`
}

// Calls bounds active plus reserved calls, one-way calls included.
type Calls struct {
	// PerConnection bounds the calls of one connection. Default 256
	// (server.DefaultCallsPerConnection); at most 2097151.
	PerConnection int `yaml:"per_connection" default:"256"`
	// PerServer bounds the calls of the server. Default 4096
	// (server.DefaultCallsPerServer); at most 2097151.
	PerServer int `yaml:"per_server" default:"4096"`
}

// Connections bounds connections. A zero field takes its default; when
// only a larger bound is set, the smaller ones default to at most it.
type Connections struct {
	// MaxConnections bounds live accepted connections. Default 1024.
	MaxConnections int `yaml:"max_connections" default:"1024"`
	// MaxHandshakes bounds connections still in handshake. Default 64
	// (at most max_connections); at most max_connections.
	MaxHandshakes int `yaml:"max_handshakes" default:"64"`
	// MaxHandshakesPerAddress bounds the handshakes from one source
	// address. Default 8 (at most max_handshakes); at most
	// max_handshakes.
	MaxHandshakesPerAddress int `yaml:"max_handshakes_per_address" default:"8"`
}

// Governor bounds, server-wide, what compressed requests cost.
type Governor struct {
	// Decodes bounds the decompressions running at once. Default
	// GOMAXPROCS.
	Decodes int `yaml:"decodes" default:"GOMAXPROCS"`
	// RetainedBytes bounds the compressed bytes held by calls waiting to
	// be decoded. Default 64MiB.
	RetainedBytes Size `yaml:"retained_bytes" default:"64MiB"`
	// DecodedBytes bounds the decoded bytes in flight. Default 256MiB.
	DecodedBytes Size `yaml:"decoded_bytes" default:"256MiB"`
	// StreamBytes bounds the bytes of streams received before their call
	// was admitted. Default 64MiB.
	StreamBytes Size `yaml:"stream_bytes" default:"64MiB"`
}

// Compression is what the server accepts and how it compresses.
type Compression struct {
	// Disabled turns compression off: nothing is accepted, a compressed request
	// is refused on its call. Default false.
	Disabled bool `yaml:"disabled" default:"false"`
	// Codecs are the built-in profiles accepted, by name (zstd, s2,
	// gzip, br), distinct, in preference order; an empty list is an
	// error (set disabled instead). Absent: every built-in, in the order
	// zstd, s2, gzip, br.
	Codecs []string `yaml:"codecs" default:"[zstd, s2, gzip, br]"`
	// Policy decides which responses are compressed. Absent: the
	// defaults of its fields.
	Policy *CompressionPolicy `yaml:"policy"`
	// Methods overrides policy per method, by "service/method". Absent:
	// none.
	Methods map[string]CompressionPolicy `yaml:"methods"`
	// MaxDecodedSize bounds one decoded body. Default 64MiB; at most
	// 4GiB - 1.
	MaxDecodedSize Size `yaml:"max_decoded_size" default:"64MiB"`
	// DecodeRatio bounds expansion: a body decodes to at most
	// max(decode_floor, compressed bytes x decode_ratio). Default 128; a
	// negative value disables the bound.
	DecodeRatio int `yaml:"decode_ratio" default:"128" signed:"true"`
	// DecodeFloor is the least decoded size the ratio bound allows.
	// Default 1MiB.
	DecodeFloor Size `yaml:"decode_floor" default:"1MiB"`
}

// CompressionPolicy decides which bodies are compressed.
type CompressionPolicy struct {
	// MinSize is the least body size compressed. Default 1024; a
	// negative integer sends everything uncompressed (what arrives is
	// still decoded).
	MinSize Size `yaml:"min_size" default:"1024" signed:"true"`
	// MinSaving is the least saving, in bytes, for a compressed body to
	// be sent compressed. Default 64.
	MinSaving Size `yaml:"min_saving" default:"64"`
	// MinSavingPercent is the least saving, in percent of the body.
	// Default 5; at most 99.
	MinSavingPercent int `yaml:"min_saving_percent" default:"5"`
}

// Streams configures streams.
type Streams struct {
	// Window is the receive window of each stream once its handler
	// starts. Default 256KiB; at least 64KiB, at most 2GiB - 1.
	Window Size `yaml:"window" default:"256KiB"`
}

// Client is the client section.
type Client struct {
	// EndpointPolicy is the client's endpoint admission. Absent:
	// disabled.
	EndpointPolicy *EndpointPolicy `yaml:"endpoint_policy" default:"disabled"`
}

// EndpointPolicy is the client's endpoint admission: disabled, or the
// built-in circuit breaker. (A custom policy is code, not configuration.)
type EndpointPolicy struct {
	// Mode is disabled or circuit_breaker. Default disabled.
	Mode string `yaml:"mode" default:"disabled" enum:"disabled,circuit_breaker"`
	// CircuitBreaker configures the breaker (mode circuit_breaker only).
	// Absent: every default.
	CircuitBreaker *CircuitBreaker `yaml:"circuit_breaker"`
}

// CircuitBreaker configures endpointpolicy.CircuitBreaker.
type CircuitBreaker struct {
	// MinimumThroughput is the outcomes the sampling window must hold
	// before the breaker may open. Default 20.
	MinimumThroughput int `yaml:"minimum_throughput" default:"20"`
	// FailureRatio opens the breaker when failures/total reaches it.
	// Default 0.5; in (0, 1].
	FailureRatio float64 `yaml:"failure_ratio" default:"0.5"`
	// SamplingDuration is the span of the sampling window. Default 30s.
	SamplingDuration Duration `yaml:"sampling_duration" default:"30s"`
	// BreakDuration is how long an open breaker refuses before it lets
	// probes through. Default 10s.
	BreakDuration Duration `yaml:"break_duration" default:"10s"`
	// HalfOpenMaxCalls is the probes a half-open breaker lets be in
	// flight at once. Default 1.
	HalfOpenMaxCalls int `yaml:"half_open_max_calls" default:"1"`
}
