package filesource_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/filesource"
	"github.com/sluicerpc/sluice/server"
)

// A Source applies the file at the start (a server must not run without
// its configuration), then again whenever it changes, and at once on
// Reload (sluice serve calls it on SIGHUP). A document that does not apply
// keeps the configuration in force.
func ExampleStart() {
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	srv, err := server.New(mux, server.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sluice.yaml")
	// write replaces the file in one step (write then rename), so that
	// no read sees half a document.
	write := func(doc string) {
		if err := os.WriteFile(path+".tmp", []byte(doc), 0o600); err != nil {
			panic(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			panic(err)
		}
	}
	limit := func(n int) string {
		return fmt.Sprintf("version: 1\nserver:\n  admission:\n    global:\n      limits: [{kind: concurrency, limit: %d}]\n", n)
	}
	write(limit(2))

	results := make(chan filesource.Result, 16)
	src, err := filesource.Start(context.Background(), control.New(srv, control.Options{}), path, filesource.Options{
		// An hour: in this example only Reload reads the file again. A
		// program keeps the default and the file's changes apply by
		// themselves, DefaultDebounce after the last one.
		Debounce: time.Hour,
		Handled:  func(r filesource.Result) { results <- r },
	})
	if err != nil {
		panic(err)
	}
	defer src.Close()
	fmt.Println(srv.Admission().Generation())

	write(limit(5))
	src.Reload()
	r := <-results
	fmt.Println(r.Applied.Generation, r.Err, r.Applied.Source)

	write("version: 1\nserver: {calls: {per_connection: -1}}\n") // invalid
	src.Reload()
	r = <-results
	fmt.Println(r.Applied.Generation, r.Err != nil) // generation 2 stays in force
	// Output:
	// 1
	// 2 <nil> file
	// 2 true
}
