package reject

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/sluicerpc/sluice/bench/internal/cputime"
)

// ChildEnv names the environment variable that makes this executable a
// reject server: its value is the server kind. A main package calls
// ServeChild when it is set.
const ChildEnv = "SLUICE_BENCH_REJECT_SERVER"

// The child speaks lines on its standard input and output: it first
// prints "addr <host:port>", then answers each command with one line:
//
//	held      -> "ok" once the held call has entered its handler
//	counters  -> "cpu=<ns> refused=<n> decompressions=<n>"
//
// and stops when its standard input ends.

// counters is what the child reports.
type counters struct {
	cpu                     time.Duration
	refused, decompressions uint64
}

// floodServer is a child's server.
type floodServer interface {
	addr() string
	// held blocks until the held call is in its handler.
	held()
	// counts are the refusals and decompressions so far.
	counts() (refused, decompressions uint64)
	stop()
}

// ServeChild runs the server kind for the parent on in and out, until in
// ends.
func ServeChild(kind string, in io.Reader, out io.Writer) error {
	var (
		s   floodServer
		err error
	)
	switch kind {
	case Sluice:
		s, err = serveSluice()
	case GRPCInterceptor:
		s, err = serveGRPC(false)
	case GRPCTap:
		s, err = serveGRPC(true)
	default:
		err = fmt.Errorf("unknown server %q", kind)
	}
	if err != nil {
		return err
	}
	defer s.stop()
	w := bufio.NewWriter(out)
	reply := func(format string, args ...any) error {
		fmt.Fprintf(w, format+"\n", args...)
		return w.Flush()
	}
	if err := reply("addr %s", s.addr()); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch sc.Text() {
		case "held":
			s.held()
			err = reply("ok")
		case "counters":
			refused, decomp := s.counts()
			err = reply("cpu=%d refused=%d decompressions=%d", int64(cputime.Self()), refused, decomp)
		default:
			err = fmt.Errorf("unknown command %q", sc.Text())
		}
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

// child is a running child process, from the parent's side.
type child struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	addr string
}

func startChild(kind string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), ChildEnv+"="+kind)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := c.line()
	if err == nil && !strings.HasPrefix(line, "addr ") {
		err = fmt.Errorf("child %s said %q, not its address", kind, line)
	}
	if err != nil {
		c.close()
		return nil, err
	}
	c.addr = strings.TrimPrefix(line, "addr ")
	return c, nil
}

func (c *child) line() (string, error) {
	s, err := c.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("child: %w", err)
	}
	return strings.TrimSuffix(s, "\n"), nil
}

func (c *child) ask(cmd string) (string, error) {
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		return "", fmt.Errorf("child: %w", err)
	}
	return c.line()
}

func (c *child) waitHeld() error {
	s, err := c.ask("held")
	if err == nil && s != "ok" {
		err = fmt.Errorf("child answered %q to held", s)
	}
	return err
}

func (c *child) counters() (counters, error) {
	s, err := c.ask("counters")
	if err != nil {
		return counters{}, err
	}
	var (
		cpu int64
		n   counters
	)
	if _, err := fmt.Sscanf(s, "cpu=%d refused=%d decompressions=%d", &cpu, &n.refused, &n.decompressions); err != nil {
		return counters{}, fmt.Errorf("child counters %q: %w", s, err)
	}
	n.cpu = time.Duration(cpu)
	return n, nil
}

// close ends the child: its input ends, it stops its server and exits.
func (c *child) close() {
	_ = c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			fmt.Fprintln(os.Stderr, "reject: child:", err)
		}
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}
