package filesource_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/filesource"
)

// The file is in force when Start returns.
func TestStartAppliesTheFile(t *testing.T) {
	h := start(t, doc(7))
	cur := h.ctl.Current()
	assert.Equal(t, uint64(1), cur.Generation)
	assert.Equal(t, control.SourceFile, cur.Source)
	assert.Equal(t, h.path, cur.Origin)
	assert.Equal(t, 7, h.perConnection())
	assert.True(t, h.srv.Admission().Enabled())
}

// A file that cannot be applied at the start is Start's error, changes
// nothing and leaves nothing running (goleak).
func TestStartRefusesWhatItCannotApply(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		lay   func(path string)
		check func(t *testing.T, err error)
	}{
		"invalid": {
			lay: func(p string) { writeFile(t, p, "version: 1\nserver:\n  calls: {per_conection: 3}\n") },
			check: func(t *testing.T, err error) {
				var ce *config.Error
				require.ErrorAs(t, err, &ce)
				require.NotEmpty(t, ce.Problems)
				assert.Equal(t, 3, ce.Problems[0].Line)
				assert.Contains(t, err.Error(), "per_conection")
			},
		},
		"missing": {
			lay:   func(string) {},
			check: func(t *testing.T, err error) { assert.ErrorIs(t, err, fs.ErrNotExist) },
		},
		"too large": {
			lay:   func(p string) { writeFile(t, p, doc(7)+strings.Repeat("#", 200)+"\n") },
			check: func(t *testing.T, err error) { assert.ErrorIs(t, err, filesource.ErrTooLarge) },
		},
		"not a regular file": {
			lay:   func(p string) { require.NoError(t, os.Mkdir(p, 0o755)) },
			check: func(t *testing.T, err error) { assert.ErrorContains(t, err, "not a regular file") },
		},
		"directory missing": {
			lay:   func(string) {},
			check: func(t *testing.T, err error) { assert.ErrorIs(t, err, fs.ErrNotExist) },
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"), "sluice.yaml")
			if name != "directory missing" {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			}
			tc.lay(path)
			h, err := newHarness(t, path, filesource.Options{MaxSize: 160})
			require.Error(t, err)
			assert.Nil(t, h.src)
			tc.check(t, err)
			assert.Equal(t, uint64(0), h.srv.Admission().Generation(), "nothing published")
			assert.Nil(t, h.ctl.Current().Document)
			goleak.VerifyNone(t)
		})
	}
}

// A valid change is applied: a new generation, its settings in force.
func TestValidChangeIsApplied(t *testing.T) {
	h := start(t, doc(7))
	writeFile(t, h.path, doc(9))
	h.fire()
	r := h.next()
	require.NoError(t, r.Err)
	assert.Equal(t, doc(9), string(r.Document))
	assert.False(t, r.Applied.Unchanged)
	assert.Equal(t, uint64(2), r.Applied.Generation)
	assert.Equal(t, uint64(2), h.srv.Admission().Generation())
	assert.Equal(t, 9, h.perConnection())
	assert.Equal(t, control.Counts{Applied: 2}, h.ctl.Status().Counts[control.SourceFile])
}

// An invalid change keeps the configuration in force and says why, with
// the problem's line; the Controller logs it, the Source does not again.
func TestInvalidChangeKeepsTheConfiguration(t *testing.T) {
	h := start(t, doc(7))
	replace(t, h.path, "version: 1\nserver:\n  calls:\n    per_connection: many\n")
	h.fire()
	r := h.next()
	var ce *config.Error
	require.ErrorAs(t, r.Err, &ce)
	require.Len(t, ce.Problems, 1)
	assert.Equal(t, 4, ce.Problems[0].Line)
	assert.Equal(t, "server.calls.per_connection", ce.Problems[0].Path)
	assert.Equal(t, uint64(1), r.Applied.Generation)
	assert.Equal(t, uint64(1), h.srv.Admission().Generation(), "nothing published")
	assert.Equal(t, 7, h.perConnection(), "nothing set")
	rej := h.ctl.Status().LastRejection
	require.NotNil(t, rej)
	assert.Equal(t, control.SourceFile, rej.Source)
	assert.Equal(t, h.path, rej.Origin)
	assert.Equal(t, r.Err, rej.Err)
	assert.Contains(t, rej.Err.Error(), h.path+":4:")
	assert.Equal(t, 1, h.log.count("configuration rejected"), h.log.String())
	assert.Equal(t, 0, h.log.count("configuration file"), "the Source adds nothing to the Controller's line: %s", h.log)

	// Fixing the file applies it.
	replace(t, h.path, doc(8))
	h.fire()
	r = h.next()
	require.NoError(t, r.Err)
	assert.Equal(t, uint64(2), r.Applied.Generation)
	assert.Equal(t, 8, h.perConnection())
}

// An editor's save (a new file renamed over the old one) is seen, and so
// is the next one: the watch is on the directory, not on the replaced
// file.
func TestEditorReplaceIsApplied(t *testing.T) {
	h := start(t, doc(7))
	for i, n := range []int{9, 11, 13} {
		replace(t, h.path, doc(n))
		h.fire()
		r := h.next()
		require.NoError(t, r.Err)
		assert.Equal(t, uint64(i+2), r.Applied.Generation)
		assert.Equal(t, n, h.perConnection())
	}
}

// A Kubernetes ConfigMap volume: the file is a symlink into "..data",
// itself a symlink to a timestamped directory; an update writes a new
// directory, renames a new "..data" symlink over the old one, and removes
// the old directory. Nothing happens to the file's own name.
func TestKubernetesSymlinkSwapIsApplied(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	version := func(name, data string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, name), 0o755))
		writeFile(t, filepath.Join(dir, name, "sluice.yaml"), data)
	}
	swap := func(name string) {
		require.NoError(t, os.Symlink(name, filepath.Join(dir, "..data_tmp")))
		require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	}
	version("..2026_v1", doc(7))
	require.NoError(t, os.Symlink("..2026_v1", filepath.Join(dir, "..data")))
	require.NoError(t, os.Symlink(filepath.Join("..data", "sluice.yaml"), path))
	h, err := newHarness(t, path, filesource.Options{})
	require.NoError(t, err)
	assert.Equal(t, 7, h.perConnection())

	prev := "..2026_v1"
	for i, v := range []struct {
		name string
		n    int
	}{{"..2026_v2", 9}, {"..2026_v3", 11}} {
		version(v.name, doc(v.n))
		swap(v.name)
		h.fire()
		r := h.next()
		require.NoError(t, r.Err)
		assert.Equal(t, uint64(i+2), r.Applied.Generation)
		assert.Equal(t, v.n, h.perConnection())
		require.NoError(t, os.RemoveAll(filepath.Join(dir, prev)))
		prev = v.name
	}
	// The swapped-in version is watched too: a change made inside it (not
	// what Kubernetes does, but a symlink's target may be edited) is seen.
	writeFile(t, filepath.Join(dir, prev, "sluice.yaml"), doc(5))
	h.fire()
	r := h.next()
	require.NoError(t, r.Err)
	assert.Equal(t, 5, h.perConnection())
}

// A removed file keeps the configuration and says so; when it comes back
// it is applied.
func TestRemovedFileKeepsTheConfigurationUntilItComesBack(t *testing.T) {
	h := start(t, doc(7))
	require.NoError(t, os.Remove(h.path))
	h.fire()
	r := h.next()
	require.ErrorIs(t, r.Err, fs.ErrNotExist)
	assert.Nil(t, r.Document)
	assert.Equal(t, uint64(1), r.Applied.Generation)
	assert.Equal(t, uint64(1), h.srv.Admission().Generation())
	assert.Equal(t, 7, h.perConnection())
	assert.Equal(t, 1, h.log.count("configuration file missing; the configuration in force is kept until it comes back"), h.log.String())
	// The Controller's status says why the file's document is not the
	// one in force (issue 26 section 2: /v1/status said nothing).
	missing := h.ctl.Status().Sources[control.SourceFile]
	require.ErrorIs(t, missing.Err, fs.ErrNotExist)
	assert.Equal(t, h.path, missing.Origin)

	writeFile(t, h.path, doc(9))
	h.fire()
	r = h.next()
	require.NoError(t, r.Err)
	assert.Equal(t, uint64(2), r.Applied.Generation)
	assert.Equal(t, 9, h.perConnection())
	back := h.ctl.Status().Sources[control.SourceFile]
	assert.NoError(t, back.Err)
	assert.False(t, back.Since.Before(missing.Since), "a recovery starts a new state")
}

// The file's directory removed and made again: the Source watches the
// parent meanwhile, and applies the file that comes back.
func TestRemovedDirectoryComesBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	require.NoError(t, os.Mkdir(dir, 0o755))
	path := filepath.Join(dir, "sluice.yaml")
	writeFile(t, path, doc(7))
	h, err := newHarness(t, path, filesource.Options{})
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(dir))
	h.fire()
	r := h.next()
	require.ErrorIs(t, r.Err, fs.ErrNotExist)
	assert.Equal(t, 7, h.perConnection())

	require.NoError(t, os.Mkdir(dir, 0o755))
	writeFile(t, path, doc(9))
	h.fire()
	r = h.next()
	require.NoError(t, r.Err)
	assert.Equal(t, uint64(2), r.Applied.Generation)
	assert.Equal(t, 9, h.perConnection())
	// And the directory is watched again.
	replace(t, path, doc(11))
	h.fire()
	r = h.next()
	require.NoError(t, r.Err)
	assert.Equal(t, 11, h.perConnection())
}

// A touch (times changed, content not) reads the file, which is the
// configuration in force: unchanged, no new generation.
func TestTouchIsUnchanged(t *testing.T) {
	h := start(t, doc(7))
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(h.path, later, later))
	h.fire()
	r := h.next()
	require.NoError(t, r.Err)
	assert.True(t, r.Applied.Unchanged)
	assert.Equal(t, uint64(1), r.Applied.Generation)
	assert.Equal(t, uint64(1), h.srv.Admission().Generation())
	assert.Equal(t, control.Counts{Applied: 1, Unchanged: 1}, h.ctl.Status().Counts[control.SourceFile])
}

// Reload reads the file at once, without waiting for the debounce (which
// the test never ends here).
func TestReloadReadsAtOnce(t *testing.T) {
	h := start(t, doc(7))
	replace(t, h.path, doc(9))
	h.src.Reload()
	r := h.next()
	require.NoError(t, r.Err)
	assert.Equal(t, uint64(2), r.Applied.Generation)
	assert.Equal(t, 9, h.perConnection())
	// Again, with nothing changed: unchanged.
	h.src.Reload()
	r = h.next()
	require.NoError(t, r.Err)
	assert.True(t, r.Applied.Unchanged)
}

// A burst of events is one read, after the debounce of Options.Debounce:
// two saves before it ends apply the second only.
func TestBurstIsOneRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	writeFile(t, path, doc(7))
	h, err := newHarness(t, path, filesource.Options{Debounce: 250 * time.Millisecond})
	require.NoError(t, err)
	replace(t, path, doc(9))
	select {
	case d := <-h.armed:
		assert.Equal(t, 250*time.Millisecond, d)
	case <-time.After(bound):
		t.Fatal("the save armed no debounce")
	}
	select {
	case r := <-h.results:
		t.Fatalf("read before the debounce ended: %+v", r)
	default:
	}
	replace(t, path, doc(11))
	h.fire()
	r := h.next()
	require.NoError(t, r.Err)
	assert.Equal(t, uint64(2), r.Applied.Generation, "the first save was never applied on its own")
	assert.Equal(t, 11, h.perConnection())
}

// A file grown past Options.MaxSize is refused unread; the configuration
// in force stays.
func TestTooLargeChangeKeepsTheConfiguration(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	writeFile(t, path, doc(7))
	h, err := newHarness(t, path, filesource.Options{MaxSize: 160})
	require.NoError(t, err)
	replace(t, path, doc(9)+strings.Repeat("#", 200)+"\n")
	h.fire()
	r := h.next()
	require.ErrorIs(t, r.Err, filesource.ErrTooLarge)
	assert.ErrorContains(t, r.Err, "more than 160 bytes")
	assert.Equal(t, 7, h.perConnection())
	assert.Equal(t, uint64(1), h.srv.Admission().Generation())
	assert.Equal(t, 1, h.log.count("configuration file unreadable"), h.log.String())
}

// The end of Start's context stops the Source's goroutine (and the
// watcher's) without Close.
func TestContextEndStops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	writeFile(t, path, doc(7))
	ctx, cancel := context.WithCancel(context.Background())
	srv := newServer(t)
	src, err := filesource.Start(ctx, control.New(srv, control.Options{}), path, filesource.Options{})
	require.NoError(t, err)
	cancel()
	goleak.VerifyNone(t)
	require.NoError(t, src.Close())
	require.NoError(t, src.Close(), "Close again is harmless")
}

// The errors name what could not be done.
func TestErrorsAreClear(t *testing.T) {
	dir := t.TempDir()
	_, err := filesource.Start(context.Background(), control.New(newServer(t), control.Options{}), filepath.Join(dir, "nope.yaml"), filesource.Options{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	assert.Contains(t, err.Error(), filepath.Join(dir, "nope.yaml"))
}
