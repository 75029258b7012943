package admin

import (
	"net"
	"sync"
	"sync/atomic"
)

// Default connection caps of the admin API's and the metrics' listeners
// in "sluice serve": enough for dashboards, scrapers and operators, and
// a single address cannot take all of them.
const (
	DefaultMaxConns           = 64
	DefaultMaxConnsPerAddress = 8
)

// LimitListener returns a listener that holds at most total connections
// at once, and at most perAddress from one remote IP address. A
// connection over either bound is closed as soon as it is accepted (its
// client sees the connection end before any answer) and Accept goes on
// to the next, so that one client cannot exhaust a port that has no
// other bound (net/http has none). A connection's place is given back
// when it is closed, once, whoever closes it. Refused counts the
// connections closed at accept.
func LimitListener(l net.Listener, total, perAddress int) *CappedListener {
	return &CappedListener{Listener: l, total: max(total, 1), perAddress: max(perAddress, 1), byAddr: map[string]int{}}
}

// CappedListener is LimitListener's listener.
type CappedListener struct {
	net.Listener
	total, perAddress int

	mu      sync.Mutex
	live    int
	byAddr  map[string]int
	refused atomic.Uint64
}

// Accept returns the next connection within the caps.
func (l *CappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		if l.live >= l.total || l.byAddr[ip] >= l.perAddress {
			l.mu.Unlock()
			l.refused.Add(1)
			_ = c.Close()
			continue
		}
		l.live++
		l.byAddr[ip]++
		l.mu.Unlock()
		return &cappedConn{Conn: c, l: l, ip: ip}, nil
	}
}

// Refused is the number of connections closed at accept over a cap.
func (l *CappedListener) Refused() uint64 { return l.refused.Load() }

// Live is the number of connections held now.
func (l *CappedListener) Live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live
}

func (l *CappedListener) release(ip string) {
	l.mu.Lock()
	l.live--
	if l.byAddr[ip]--; l.byAddr[ip] <= 0 {
		delete(l.byAddr, ip)
	}
	l.mu.Unlock()
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

type cappedConn struct {
	net.Conn
	l    *CappedListener
	ip   string
	once sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}
