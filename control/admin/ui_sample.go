package admin

import (
	"time"

	"github.com/sluicerpc/sluice/server"
)

// Sample is the data of one "sample" event of GET /v1/events: the
// server's figures (server.Stats, its admission kernel's included) at
// Time. The counters are cumulative since the server started (a client
// computes rates from two samples: a lost sample loses no count); the
// gauges are the values at Time. Field names are the contract.
type Sample struct {
	// Seq numbers the samples of one handler, from 1, across every
	// client: a gap in one client's stream is a sample it did not get.
	Seq uint64 `json:"seq"`
	// Time is when the sample was taken; IntervalMS the sampling period.
	Time       time.Time `json:"time"`
	IntervalMS int64     `json:"interval_ms"`
	// Generation is the server's generation; Enabled whether admission
	// is on.
	Generation uint64 `json:"generation"`
	Enabled    bool   `json:"enabled"`
	// Admitted counts the calls handed to a handler (server.Stats.Calls);
	// Refused the calls refused without running them, by reason
	// (server.Stats.Refusals: "concurrency", "rate", "queue_full",
	// "queue_timeout", "call_capacity", ...); EndedWhileQueued the calls
	// their client gave up on while queued.
	Admitted         uint64            `json:"admitted"`
	Refused          map[string]uint64 `json:"refused"`
	EndedWhileQueued uint64            `json:"ended_while_queued"`
	// Queued and QueuedBytes are the admission queue now.
	Queued      int   `json:"queued"`
	QueuedBytes int64 `json:"queued_bytes"`
	// Connections and Handshakes are the live connections.
	Connections int `json:"connections"`
	Handshakes  int `json:"handshakes"`
	// Scopes are the admission states, sorted by name.
	Scopes []ScopeSample `json:"scopes"`
	// Partitions are the live partition namespaces (their entries are
	// not listed: there may be thousands).
	Partitions []PartitionSample `json:"partitions"`
}

// ScopeSample is one admission state (kernel.ScopeStats): Active is the
// permits held now (InUse), Limit its limit, Waiters the requests queued
// on it.
type ScopeSample struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Limit     int64  `json:"limit"`
	Active    int64  `json:"active"`
	Available int64  `json:"available"`
	Waiters   int    `json:"waiters"`
}

// PartitionSample is one partition namespace (kernel.PartitionStats).
type PartitionSample struct {
	Name string `json:"name"`
	Keys int64  `json:"keys"`
	Max  int64  `json:"max"`
}

// sampleOf is the Sample of st.
func sampleOf(st server.Stats, seq uint64, at time.Time, interval time.Duration) Sample {
	k := st.Admission
	s := Sample{
		Seq: seq, Time: at, IntervalMS: interval.Milliseconds(),
		Generation: k.Generation, Enabled: k.Enabled,
		Admitted: st.Calls, Refused: st.Refusals, EndedWhileQueued: st.EndedWhileQueued,
		Queued: k.QueuedCalls, QueuedBytes: k.QueuedBytes,
		Connections: st.Connections, Handshakes: st.Handshakes,
		Scopes: make([]ScopeSample, len(k.Scopes)), Partitions: make([]PartitionSample, len(k.Partitions)),
	}
	if s.Refused == nil {
		s.Refused = map[string]uint64{}
	}
	for i, sc := range k.Scopes {
		s.Scopes[i] = ScopeSample{Name: sc.Name, Kind: sc.Kind, Limit: sc.Limit, Active: sc.InUse, Available: sc.Available, Waiters: sc.Waiters}
	}
	for i, p := range k.Partitions {
		s.Partitions[i] = PartitionSample{Name: p.Name, Keys: p.Keys, Max: p.Max}
	}
	return s
}
