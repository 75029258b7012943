package filesource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sluicerpc/sluice/control"
)

// DefaultDebounce is how long a Source waits, unless Options.Debounce
// says otherwise, after the last event of a burst before it reads the
// file: an editor's write and rename, or the steps of a ConfigMap swap,
// become one read.
const DefaultDebounce = 100 * time.Millisecond

// Options configure a Source. The zero value is ready to use.
type Options struct {
	// Logger receives the Source's own lines (a missing or unreadable
	// file, watcher errors); the Controller logs what it does with each
	// document. Nil discards them.
	Logger *slog.Logger
	// Debounce is the quiet time after the last event concerning the
	// file before it is read again; 0 means DefaultDebounce. Each new
	// event starts the wait again. Reload does not wait.
	Debounce time.Duration
	// After is the timer of Debounce; nil means time.After. The Source
	// calls it on every event concerning the file and reads the file
	// when the channel of the last call delivers (tests inject their
	// own to decide when a burst is over).
	After func(time.Duration) <-chan time.Time
	// MaxSize bounds the file in bytes; 0 means DefaultMaxSize. A larger
	// file is refused unread (ErrTooLarge).
	MaxSize int64
	// Handled, when not nil, is called with the result of every read
	// after the first (which Start returns), from the Source's goroutine
	// once the read is handled and logged. It must not block for long:
	// no further change is handled until it returns.
	Handled func(Result)
}

// Result is the outcome of one read of the file.
type Result struct {
	// Applied is the configuration in force afterwards; with Err nil it
	// is the file's document (Applied.Unchanged: it already was).
	Applied control.Applied
	// Document is what was read; nil when the read failed.
	Document []byte
	// Err is nil when the file's document is in force. Otherwise the
	// configuration in force was kept, and Err says why: an error
	// wrapping fs.ErrNotExist for a missing file, ErrTooLarge for one
	// larger than Options.MaxSize, another read error, or the error of
	// control.Controller.Apply (a *config.Error with every problem and
	// its line for an invalid document).
	Err error
}

// A Source keeps a Controller's configuration in step with a file. Its
// methods are safe for concurrent use.
type Source struct {
	ctl    *control.Controller
	path   string // as given: the Origin and Name of its changes
	abs    string
	o      Options
	w      *fsnotify.Watcher
	cancel context.CancelFunc
	reload chan struct{}
	done   chan struct{}
	err    error // of closing the watcher; read after done

	// Owned by the goroutine of run (and by Start before it).
	chain []string
}

// Start applies the file at path through ctl and, when that succeeded,
// watches it until ctx ends or Close is called. A file that cannot be
// watched, read or applied at the start is an error and nothing keeps
// running: a server must not start without its configuration. Later, the
// same failures keep the configuration in force (see Result).
func Start(ctx context.Context, ctl *control.Controller, path string, o Options) (*Source, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Debounce == 0 {
		o.Debounce = DefaultDebounce
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("configuration file %s: watching: %w", path, err)
	}
	s := &Source{ctl: ctl, path: path, abs: abs, o: o, w: w, reload: make(chan struct{}, 1), done: make(chan struct{})}
	// Watch first, then read: a change made meanwhile is not missed.
	if err := s.rewatch(); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("configuration file %s: watching: %w", path, err)
	}
	if r := s.read(); r.Err != nil {
		_ = w.Close()
		return nil, r.Err
	}
	ctl.ReportSource(control.SourceFile, path, nil)
	ctx, s.cancel = context.WithCancel(ctx)
	go s.run(ctx)
	return s, nil
}

// Reload makes the Source read the file again now, without waiting for
// an event or the debounce; it also watches again the directories it may
// have lost (a directory removed and made again). It does not block: a
// Reload asked while one is pending is the same Reload.
func (s *Source) Reload() {
	select {
	case s.reload <- struct{}{}:
	default:
	}
}

// Close stops the Source and waits for its goroutine; the configuration
// in force stays. It returns the error of closing the watcher, the same
// on every call.
func (s *Source) Close() error {
	s.cancel()
	<-s.done
	return s.err
}

// run handles the watcher's events, Reload and the debounce until ctx
// ends.
func (s *Source) run(ctx context.Context) {
	defer close(s.done)
	defer func() { s.err = s.w.Close() }()
	var quiet <-chan time.Time // non-nil: a burst is pending
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-s.w.Events:
			if !ok {
				return
			}
			if concerns(s.chain, ev.Name) {
				quiet = s.o.After(s.o.Debounce)
			}
		case err, ok := <-s.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				s.o.Logger.Warn("configuration file: the watcher lost events; reading the file again", "path", s.path, "error", err)
				quiet = s.o.After(s.o.Debounce)
				continue
			}
			s.o.Logger.Warn("configuration file: watcher error", "path", s.path, "error", err)
		case <-s.reload:
			quiet = nil
			s.handled(s.read())
		case <-quiet:
			quiet = nil
			s.handled(s.read())
		}
	}
}

// read resolves the path again (watching what it now goes through),
// reads the file and applies it.
func (s *Source) read() Result {
	if err := s.rewatch(); err != nil {
		s.o.Logger.Warn("configuration file: cannot watch; changes are seen again after SIGHUP", "path", s.path, "error", err)
	}
	doc, err := readFile(s.abs, s.o.MaxSize)
	if err != nil {
		return Result{Applied: s.ctl.Current(), Err: err}
	}
	a, err := s.ctl.Apply(control.Change{Source: control.SourceFile, Origin: s.path, Name: s.path, Document: doc, Latest: true})
	return Result{Applied: a, Document: doc, Err: err}
}

// handled logs what only the Source knows of r, then hands it to
// Options.Handled.
func (s *Source) handled(r Result) {
	if r.Document == nil {
		s.ctl.ReportSource(control.SourceFile, s.path, r.Err) // unreadable
	} else {
		s.ctl.ReportSource(control.SourceFile, s.path, nil) // read (applied or rejected: Status says)
	}
	if r.Err != nil && r.Document == nil {
		msg := "configuration file unreadable; the configuration in force is kept"
		if errors.Is(r.Err, fs.ErrNotExist) {
			msg = "configuration file missing; the configuration in force is kept until it comes back"
		}
		s.o.Logger.Warn(msg, "path", s.path, "generation", r.Applied.Generation, "error", r.Err)
	}
	if s.o.Handled != nil {
		s.o.Handled(r)
	}
}

// rewatch resolves the path and watches the directories of its chain,
// no longer those it left. It returns the errors of the directories it
// could not watch.
func (s *Source) rewatch() error {
	s.chain = resolve(s.abs)
	want := dirs(s.chain)
	// The watcher's own list: it drops the watch of a directory removed.
	watched := map[string]bool{}
	for _, d := range s.w.WatchList() {
		watched[d] = true
	}
	var errs []error
	for d := range want {
		if watched[d] {
			continue
		}
		if err := s.w.Add(d); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
		}
	}
	for d := range watched {
		if !want[d] {
			_ = s.w.Remove(d) // fails when d is gone, which ended its watch anyway
		}
	}
	return errors.Join(errs...)
}
