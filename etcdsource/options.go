package etcdsource

import (
	"errors"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	// DefaultTimeout bounds each read of the key when Options.Timeout is 0.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxValueBytes bounds the document's size when
	// Options.MaxValueBytes is 0: 4 MiB, far above any configuration
	// document and above etcd's own default request bound (1.5 MiB).
	DefaultMaxValueBytes = 4 << 20
	// backoffBase and backoffMax are DefaultBackoff's first and longest
	// waits.
	backoffBase = 25 * time.Millisecond
	backoffMax  = time.Second
)

// Options configure a Source.
type Options struct {
	// Client is the etcd client; required. The caller owns it: it
	// closes it after Stop.
	Client *clientv3.Client
	// Key is the etcd key holding the configuration document; required.
	Key string
	// Timeout bounds each read of the key; 0: DefaultTimeout.
	Timeout time.Duration
	// MaxValueBytes bounds the document: a larger value is refused
	// before it is parsed and the configuration in force is kept;
	// 0: DefaultMaxValueBytes.
	MaxValueBytes int
	// Logger receives the source's lines (watching, failures and
	// retries, deletions, refused values); nil discards them. The
	// Controller logs the outcome of every document it is given.
	Logger *slog.Logger
	// Backoff returns how long to wait before the next attempt after
	// the n-th consecutive failure to read or watch the key (n >= 1;
	// a watch that was established resets the count); nil:
	// DefaultBackoff.
	Backoff func(n int) time.Duration
	// OnEvent, when set, is called on the source's goroutine after each
	// thing the source did or saw, in order; the source waits for it to
	// return. For tests and metrics.
	OnEvent func(Event)
}

// DefaultBackoff is 25ms after the first failure, doubling with each
// further one, at most 1s.
func DefaultBackoff(n int) time.Duration {
	d := backoffBase
	for i := 1; i < n && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}

// withDefaults checks o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("etcdsource: Options.Client is required"))
	}
	if o.Key == "" {
		errs = append(errs, errors.New("etcdsource: Options.Key is required"))
	}
	if o.Timeout < 0 {
		errs = append(errs, errors.New("etcdsource: Options.Timeout must not be negative"))
	}
	if o.MaxValueBytes < 0 {
		errs = append(errs, errors.New("etcdsource: Options.MaxValueBytes must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return o, err
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxValueBytes == 0 {
		o.MaxValueBytes = DefaultMaxValueBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.OnEvent == nil {
		o.OnEvent = func(Event) {}
	}
	return o, nil
}
