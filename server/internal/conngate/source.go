package conngate

import (
	"net"
	"net/netip"
	"strings"
)

// IPv6PrefixBits is the length of the IPv6 prefix that is one source
// address for the per-address bound. A single host can use any address of
// its /64 (SLAAC privacy addresses change on their own, and picking a new
// one takes no privilege), so a bound per /128 would bound nothing; a /64
// is the smallest block an end site is given, so keying by it neither
// lets one host multiply itself nor lumps different sites together
// (a site with a /56 or /48 still gets 256 or 65,536 keys: the server-wide
// MaxHandshakes is the bound that holds against those).
const IPv6PrefixBits = 64

// SourceKey returns the key under which connections from addr are counted
// per address: an IPv4 address (IPv4-mapped IPv6 addresses unmapped:
// ::ffff:10.0.0.1 is 10.0.0.1), or the /64 of an IPv6 address
// (2001:db8:1:2:aaaa::1 is 2001:db8:1:2::), without its zone. An invalid
// addr gives an invalid key. It does not allocate.
func SourceKey(addr netip.Addr) netip.Addr {
	if !addr.IsValid() {
		return netip.Addr{}
	}
	addr = addr.Unmap().WithZone("")
	if addr.Is4() {
		return addr
	}
	p, err := addr.Prefix(IPv6PrefixBits)
	if err != nil {
		return netip.Addr{}
	}
	return p.Addr()
}

// SourceAddr returns the IP of a connection's remote address (the port
// dropped), or an invalid Addr when a has none (an in-memory pipe, a Unix
// socket): such connections are not bounded per address. It allocates
// nothing for the address types of package net.
func SourceAddr(a net.Addr) netip.Addr {
	var ip net.IP
	switch a := a.(type) {
	case nil:
		return netip.Addr{}
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	case *net.IPAddr:
		ip = a.IP
	default:
		// Another listener's address type: parse it if it is an IP
		// network's "host:port" or "host".
		if n := a.Network(); !strings.HasPrefix(n, "tcp") && !strings.HasPrefix(n, "udp") && !strings.HasPrefix(n, "ip") {
			return netip.Addr{}
		}
		s := a.String()
		if ap, err := netip.ParseAddrPort(s); err == nil {
			return ap.Addr()
		}
		if ip, err := netip.ParseAddr(s); err == nil {
			return ip
		}
		return netip.Addr{}
	}
	addr, _ := netip.AddrFromSlice(ip)
	return addr
}
