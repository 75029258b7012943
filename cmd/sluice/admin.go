package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicerpc/sluice/control/admin"
)

// adminTokenEnv holds the admin API's token when -token-file is not
// given.
const adminTokenEnv = "SLUICE_ADMIN_TOKEN"

const adminUsage = `usage: sluice admin <command> [flags]

commands (against "sluice serve -admin ADDR"):
  get          print the configuration document in force
  status       print the generation, the document's source, the last rejection and the counts by source
  put FILE     apply FILE (a complete document; "-" reads standard input) and print the new generation
  plan FILE    print what put FILE would do (a diff view; -json: the raw plan), changing nothing
  disable      disable admission: the document in force without server.admission

put, plan and disable derive the change from the generation of -if-match;
without it, from the current one (printed). A generation that moved since
is refused: get the configuration again.

flags:
`

// adminFlags are the flags of every "sluice admin" command.
type adminFlags struct {
	addr      string
	tokenFile string
	ifMatch   string
	json      bool
	timeout   time.Duration
}

// runAdminCommand runs "sluice admin".
func runAdminCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var af adminFlags
	fs.StringVar(&af.addr, "addr", "http://127.0.0.1:7879", "the admin API's URL (host:port: http://host:port)")
	fs.StringVar(&af.tokenFile, "token-file", "", "file holding the bearer token (its first line); default: $"+adminTokenEnv)
	fs.StringVar(&af.ifMatch, "if-match", "", "put, plan, disable: the generation the change is derived from (default: the current one)")
	fs.BoolVar(&af.json, "json", false, "plan, status: print the raw JSON")
	fs.DurationVar(&af.timeout, "timeout", 10*time.Second, "bound of the whole command")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), adminUsage)
		fs.PrintDefaults()
	}
	if len(args) == 0 {
		fs.Usage()
		return exitUsage
	}
	want := map[string]int{"get": 0, "status": 0, "put": 1, "plan": 1, "disable": 0}
	if strings.HasPrefix(args[0], "-") {
		// Flags before the command: "sluice admin -addr URL status".
		for i, a := range args {
			if _, ok := want[a]; ok && (i == 0 || !flagTakesValue(fs, args[i-1])) {
				args = append([]string{a}, append(args[:i:i], args[i+1:]...)...)
				break
			}
		}
	}
	cmd := args[0]
	if cmd == "-h" || cmd == "-help" || cmd == "--help" || cmd == "help" {
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK
	}
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	name := "sluice admin " + cmd
	n, known := want[cmd]
	switch {
	case !known:
		fmt.Fprintf(stderr, "sluice admin: unknown command %q\n\n", cmd)
		fs.Usage()
		return exitUsage
	case len(pos) != n && n == 1:
		fmt.Fprintf(stderr, "%s: want one FILE, got %q\n", name, pos)
		return exitUsage
	case len(pos) != n:
		fmt.Fprintf(stderr, "%s: unexpected arguments: %q\n", name, pos)
		return exitUsage
	}
	var ifMatch *uint64
	if af.ifMatch != "" {
		g, err := strconv.ParseUint(strings.Trim(af.ifMatch, `"`), 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "%s: -if-match %q: want a generation, like 3\n", name, af.ifMatch)
			return exitUsage
		}
		ifMatch = &g
	}
	cl, err := af.client()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	var doc []byte
	if n == 1 {
		if doc, err = readDocument(pos[0]); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return exitFail
		}
	}
	defer cl.HTTPClient.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, af.timeout)
	defer cancel()
	a := adminRun{ctx: ctx, cl: cl, name: name, file: strings.Join(pos, ""), ifMatch: ifMatch, stdout: stdout, stderr: stderr}
	switch cmd {
	case "get":
		err = a.get()
	case "status":
		err = a.status(af.json)
	case "put":
		err = a.put(doc)
	case "plan":
		err = a.plan(doc, af.json)
	case "disable":
		err = a.disable()
	}
	if err != nil {
		a.printError(err)
		return exitFail
	}
	return exitOK
}

// parseInterspersed parses fs's flags anywhere among args and returns the
// other arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// client is the API client the flags name.
func (af adminFlags) client() (*admin.Client, error) {
	var tok []byte
	if af.tokenFile != "" {
		t, err := admin.ReadToken(af.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("-token-file: %w", err)
		}
		tok = t
	} else if t := strings.TrimSpace(os.Getenv(adminTokenEnv)); t != "" {
		tok = []byte(t)
	} else {
		return nil, fmt.Errorf("no token: give -token-file or set $%s", adminTokenEnv)
	}
	base := af.addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	// Its own transport, whose connections the command closes when done.
	return &admin.Client{BaseURL: base, Token: tok, HTTPClient: &http.Client{Transport: &http.Transport{}}}, nil
}

func readDocument(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

// adminRun is one "sluice admin" command under way.
type adminRun struct {
	ctx            context.Context
	cl             *admin.Client
	name, file     string
	ifMatch        *uint64
	stdout, stderr io.Writer
}

func (a adminRun) get() error {
	cfg, err := a.cl.Get(a.ctx)
	if err != nil {
		return err
	}
	if cfg.Document == nil {
		return fmt.Errorf("no configuration document in force: the server runs the configuration it was started with (generation %d); put one with \"sluice admin put FILE\"", cfg.Generation)
	}
	_, err = a.stdout.Write(cfg.Document)
	return err
}

func (a adminRun) status(raw bool) error {
	st, err := a.cl.Status(a.ctx)
	if err != nil {
		return err
	}
	if raw {
		return printJSON(a.stdout, st)
	}
	w := a.stdout
	sync := "in sync"
	if !st.InSync {
		sync = fmt.Sprintf("NOT in sync: the document is of generation %d, a writer outside the controller published since", st.ConfigGeneration)
	}
	fmt.Fprintf(w, "generation %d (%s)\n", st.Generation, sync)
	if !st.HasDocument {
		fmt.Fprintf(w, "document: none (the configuration the server was started with)\n")
	} else {
		fmt.Fprintf(w, "document: from %s %s", st.Source, st.Origin)
		if st.Revision != 0 {
			fmt.Fprintf(w, " (etcd revision %d)", st.Revision)
		}
		fmt.Fprintf(w, ", applied at %s\n", st.AppliedAt.Format(time.RFC3339))
	}
	if r := st.LastRejection; r != nil {
		fmt.Fprintf(w, "last rejection: from %s %s at %s: %s\n", r.Source, r.Origin, r.At.Format(time.RFC3339), firstErrorLine(r.Error))
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  %s\n", problemLine(p))
		}
	}
	for _, src := range sortedKeys(st.Counts) {
		c := st.Counts[src]
		fmt.Fprintf(w, "%s: applied=%d unchanged=%d rejected=%d retried=%d\n", src, c.Applied, c.Unchanged, c.Rejected, c.Retried)
	}
	return nil
}

// expected is -if-match, or the current generation (said on stderr).
func (a adminRun) expected() (uint64, error) {
	if a.ifMatch != nil {
		return *a.ifMatch, nil
	}
	cfg, err := a.cl.Get(a.ctx)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(a.stderr, "%s: -if-match not given: using the current generation %d\n", a.name, cfg.Generation)
	return cfg.Generation, nil
}

func (a adminRun) put(doc []byte) error {
	gen, err := a.expected()
	if err != nil {
		return err
	}
	res, err := a.cl.Put(a.ctx, doc, gen)
	if err != nil {
		return err
	}
	printResult(a.stdout, res)
	return nil
}

func (a adminRun) disable() error {
	gen, err := a.expected()
	if err != nil {
		return err
	}
	res, err := a.cl.DisableAdmission(a.ctx, gen)
	if err != nil {
		return err
	}
	printResult(a.stdout, res)
	return nil
}

func printResult(w io.Writer, res *admin.Result) {
	if res.Unchanged {
		fmt.Fprintf(w, "unchanged: generation %d (the document equals the one in force)\n", res.Generation)
		return
	}
	fmt.Fprintf(w, "applied: generation %d (from %d)\n", res.Generation, res.Previous)
}

func (a adminRun) plan(doc []byte, raw bool) error {
	p, err := a.cl.Plan(a.ctx, doc, a.ifMatch)
	if err != nil {
		return err
	}
	if raw {
		return printJSON(a.stdout, p)
	}
	printPlan(a.stdout, p)
	return nil
}

// printError prints err: a rejected document's problems one a line
// (FILE:line:column: path: reason), a moved generation with both.
func (a adminRun) printError(err error) {
	var ae *admin.Error
	if !errors.As(err, &ae) {
		fmt.Fprintf(a.stderr, "%s: %v\n", a.name, err)
		return
	}
	b := ae.Body
	switch {
	case len(b.Problems) > 0:
		fmt.Fprintf(a.stderr, "%s: the document was rejected (%d problems); nothing changed:\n", a.name, len(b.Problems))
		for _, p := range b.Problems {
			loc := a.file
			if loc == "" {
				loc = "document"
			}
			if p.Line > 0 {
				loc += fmt.Sprintf(":%d:%d", p.Line, p.Column)
			}
			fmt.Fprintf(a.stderr, "%s: %s\n", loc, problemText(p))
		}
	case ae.StatusCode == http.StatusPreconditionFailed && b.Expected != nil && b.Current != nil:
		fmt.Fprintf(a.stderr, "%s: the generation moved: the change was derived from %d, the server is at %d; nothing changed (get the configuration again)\n", a.name, *b.Expected, *b.Current)
	default:
		fmt.Fprintf(a.stderr, "%s: %d %s: %s\n", a.name, ae.StatusCode, http.StatusText(ae.StatusCode), b.Error)
	}
}

func problemText(p admin.Problem) string {
	if p.Path == "" {
		return p.Reason
	}
	return p.Path + ": " + p.Reason
}

func problemLine(p admin.Problem) string {
	if p.Line > 0 {
		return fmt.Sprintf("%d:%d: %s", p.Line, p.Column, problemText(p))
	}
	return problemText(p)
}

func firstErrorLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// flagTakesValue reports whether arg is a flag of fs, without "=", that
// takes the next argument as its value (not a boolean flag).
func flagTakesValue(fs *flag.FlagSet, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if name == arg || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}
