// Command pingpong measures the floor under every plug-in call on this
// machine: one 40-byte round trip over a unix socket between two processes,
// with nothing else (no gRPC, no HTTP/2, no bridge). docs/benchmarks.md
// compares it with BenchmarkPluginBridge's subprocess round trips.
//
//	go run ./pingpong [-n 20000] [-rounds 5]
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

const size = 40

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-echo" {
		if err := echo(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "pingpong echo:", err)
			os.Exit(1)
		}
		return
	}
	n := flag.Int("n", 20000, "round trips per round")
	rounds := flag.Int("rounds", 5, "rounds; the median is reported")
	flag.Parse()
	if err := run(*n, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
}

// echo is the child: it echoes whatever it reads until the parent closes.
func echo(sock string) error {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, size)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return nil
		}
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
}

func run(n, rounds int) error {
	dir, err := os.MkdirTemp("", "pingpong-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	defer l.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(self, "-echo", sock)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return err
	}
	defer child.Wait()
	c, err := l.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, size)
	per := make([]time.Duration, 0, rounds)
	for range rounds {
		start := time.Now()
		for range n {
			if _, err := c.Write(buf); err != nil {
				return err
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				return err
			}
		}
		per = append(per, time.Since(start)/time.Duration(n))
	}
	slices.Sort(per)
	fmt.Printf("unix socket round trip between two processes, %d bytes: median %v over %d rounds of %d (min %v, max %v)\n",
		size, per[len(per)/2], rounds, n, per[0], per[len(per)-1])
	return nil
}
