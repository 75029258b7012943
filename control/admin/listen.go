package admin

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"
)

// Listen listens on the TCP address addr ("host:port") for the admin API.
// Unless allowRemote, the host must be loopback: "localhost" or a name
// that resolves only to loopback addresses, an address of 127.0.0.0/8,
// or ::1. An empty host, 0.0.0.0, :: or any other address is refused:
// they would expose the API (and its token, which travels in clear) to
// the network.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("admin: address %q: %w", addr, err)
	}
	if !allowRemote {
		if err := checkLoopback(host); err != nil {
			return nil, fmt.Errorf("admin: refusing to listen on %q: %w (the admin API listens on loopback only unless remote listening is allowed; put TLS in front of it then)", addr, err)
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	return l, nil
}

// checkLoopback says why host is not a loopback host, nil if it is.
func checkLoopback(host string) error {
	if host == "" {
		return fmt.Errorf("no host: every interface")
	}
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("%s is not a loopback address", ip)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolving %q: %w", host, err)
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return fmt.Errorf("%q resolves to %s, not a loopback address", host, ip)
		}
	}
	return nil
}

// Timeouts of the http.Server NewServer returns.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 64 << 10
)

// NewServer returns an http.Server of h with the timeouts above, logging
// its errors to logger (nil: discarded). Stop it with Shutdown under a
// bounded context, then Close if that context ends first.
func NewServer(h http.Handler, logger *slog.Logger) *http.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// ReadToken reads a bearer token from the file at path: its first line,
// trimmed of surrounding white space, at least MinTokenLength bytes.
func ReadToken(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("admin: token file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	tok := strings.TrimSpace(line)
	if len(tok) < MinTokenLength {
		return nil, fmt.Errorf("admin: token file %s: the token (its first line) has %d bytes, at least %d required", path, len(tok), MinTokenLength)
	}
	return []byte(tok), nil
}
