package conngate_test

import (
	"net"
	"net/netip"
	"testing"

	"github.com/sluicerpc/sluice/server/internal/conngate"
	"github.com/stretchr/testify/assert"
)

func TestSourceKey(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"127.0.0.2", "127.0.0.2"},
		{"::ffff:10.0.0.1", "10.0.0.1"}, // IPv4-mapped: the IPv4 address
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::"},
		{"2001:db8:1:2::1", "2001:db8:1:2::"}, // same /64
		{"2001:db8:1:3::1", "2001:db8:1:3::"}, // the next /64
		{"fe80::1%eth0", "fe80::"},            // zone dropped
		{"::1", "::"},
	} {
		got := conngate.SourceKey(netip.MustParseAddr(tt.in))
		assert.Equal(t, netip.MustParseAddr(tt.want), got, tt.in)
	}
	assert.False(t, conngate.SourceKey(netip.Addr{}).IsValid())
}

// otherAddr is a listener's own address type.
type otherAddr struct{ network, s string }

func (a otherAddr) Network() string { return a.network }
func (a otherAddr) String() string  { return a.s }

func TestSourceAddr(t *testing.T) {
	ip4 := netip.MustParseAddr("127.0.0.2")
	for _, tt := range []struct {
		name string
		in   net.Addr
		want netip.Addr
	}{
		{"tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 4000}, ip4.Unmap()},
		{"tcp6", &net.TCPAddr{IP: net.ParseIP("2001:db8::7"), Port: 1}, netip.MustParseAddr("2001:db8::7")},
		{"udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2).To4(), Port: 1}, ip4},
		{"ip", &net.IPAddr{IP: net.IPv4(127, 0, 0, 2).To4()}, ip4},
		{"other tcp type", otherAddr{"tcp", "127.0.0.2:99"}, ip4},
		{"other tcp type, no port", otherAddr{"tcp4", "127.0.0.2"}, ip4},
		{"other tcp type, unparsable", otherAddr{"tcp", "somewhere"}, netip.Addr{}},
		{"pipe", otherAddr{"pipe", "127.0.0.2:1"}, netip.Addr{}},
		{"unix", &net.UnixAddr{Name: "/tmp/s", Net: "unix"}, netip.Addr{}},
		{"nil", nil, netip.Addr{}},
	} {
		got := conngate.SourceAddr(tt.in)
		// net.IPv4 is 16 bytes (IPv4-mapped): compare the source keys.
		assert.Equal(t, conngate.SourceKey(tt.want), conngate.SourceKey(got), tt.name)
		assert.Equal(t, tt.want.IsValid(), got.IsValid(), tt.name)
	}
}

func TestSourceAddrAndKeyAllocateNothing(t *testing.T) {
	tcp := &net.TCPAddr{IP: net.ParseIP("2001:db8::7"), Port: 1}
	pipe, _ := net.Pipe()
	defer pipe.Close()
	allocs := testing.AllocsPerRun(1000, func() {
		_ = conngate.SourceKey(conngate.SourceAddr(tcp))
		_ = conngate.SourceKey(conngate.SourceAddr(pipe.RemoteAddr()))
	})
	assert.Zero(t, allocs)
}
