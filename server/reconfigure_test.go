package server_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// settingsOf reads every non-admission part a Reconfigure sets.
type readSettings struct {
	Calls        server.CallCapacity
	Connections  server.ConnectionLimits
	Governor     governor.Limits
	Codecs       []string
	MaxDecoded   int
	StreamWindow int
}

func settingsOf(s *server.Server) readSettings {
	var names []string
	for _, c := range s.Compression().Codecs {
		names = append(names, c.Name())
	}
	return readSettings{s.CallCapacity(), s.ConnectionLimits(), s.GovernorLimits(), names, s.Compression().MaxDecodedSize, s.StreamWindow()}
}

func fullSettings() server.Settings {
	return server.Settings{
		Admission:    &kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(2)}}},
		Calls:        server.CallCapacity{PerConnection: 5, PerServer: 50},
		Connections:  server.ConnectionLimits{MaxConnections: 40, MaxHandshakes: 8, MaxHandshakesPerAddress: 2},
		Governor:     governor.Limits{Decodes: 3, RetainedBytes: 1 << 20, DecodedBytes: 2 << 20, StreamBytes: 1 << 19},
		Compression:  codecs.Config{Codecs: []spi.Codec{codecs.Zstd()}, MaxDecodedSize: 8 << 20},
		StreamWindow: 128 << 10,
	}
}

func TestReconfigureSetsEveryPartInOneGeneration(t *testing.T) {
	s := startServer(t, server.Options{})
	gen, err := s.Reconfigure(s.Admission().Generation(), fullSettings())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), gen)
	assert.True(t, s.Admission().Enabled())
	assert.Equal(t, readSettings{
		Calls:        server.CallCapacity{PerConnection: 5, PerServer: 50},
		Connections:  server.ConnectionLimits{MaxConnections: 40, MaxHandshakes: 8, MaxHandshakesPerAddress: 2},
		Governor:     governor.Limits{Decodes: 3, RetainedBytes: 1 << 20, DecodedBytes: 2 << 20, StreamBytes: 1 << 19},
		Codecs:       []string{"zstd"},
		MaxDecoded:   8 << 20,
		StreamWindow: 128 << 10,
	}, settingsOf(s.Server))
	assert.EqualValues(t, 5, dialRaw(t, s.addr).ack.MaxConcurrentCalls, "new clients are told the new call capacity")

	// The zero Settings: every default, admission disabled, one more
	// generation; and again, disabled -> disabled is a generation too.
	for want := uint64(2); want <= 3; want++ {
		gen, err = s.Reconfigure(gen, server.Settings{})
		require.NoError(t, err)
		assert.Equal(t, want, gen)
		assert.False(t, s.Admission().Enabled())
		got := settingsOf(s.Server)
		assert.Equal(t, server.CallCapacity{PerConnection: server.DefaultCallsPerConnection, PerServer: server.DefaultCallsPerServer}, got.Calls)
		assert.Equal(t, server.ConnectionLimits{MaxConnections: 1024, MaxHandshakes: 64, MaxHandshakesPerAddress: 8}, got.Connections)
		assert.Equal(t, governor.DefaultLimits(), got.Governor)
		assert.Nil(t, got.Codecs, "the zero Config: the built-in codecs")
		assert.Equal(t, protocol.DefaultStreamWindow, got.StreamWindow)
	}
}

// An invalid part, or a candidate the kernel rejects, or a stale
// generation: nothing changes, and the error names every invalid part.
func TestReconfigureThatFailsChangesNothing(t *testing.T) {
	s := startServer(t, server.Options{})
	gen, err := s.Reconfigure(0, fullSettings())
	require.NoError(t, err)
	before := settingsOf(s.Server)
	stats := s.Admission().Stats()
	check := func(t *testing.T, err error, want ...string) {
		t.Helper()
		require.Error(t, err)
		for _, w := range want {
			assert.Contains(t, err.Error(), w)
		}
		assert.Equal(t, gen, s.Admission().Generation())
		assert.Equal(t, before, settingsOf(s.Server))
		assert.Equal(t, stats, s.Admission().Stats())
	}
	bad := fullSettings()
	bad.Calls.PerConnection = -1
	bad.Connections.MaxHandshakes = 100 // above MaxConnections 40
	bad.Governor.Decodes = -3
	bad.Compression.DecodeFloor = -1
	bad.StreamWindow = 1
	bad.Admission = &kernel.Options{Methods: map[string]kernel.Rule{"echo/Nope": {Limits: []spi.Spec{concurrency.Spec(1)}}}}
	_, err = s.Reconfigure(gen, bad)
	check(t, err, "CallCapacity.PerConnection", "MaxHandshakes", "Governor", "DecodeFloor", "StreamWindow", `Methods["echo/Nope"]`)

	only := fullSettings()
	only.Admission = bad.Admission
	_, err = s.Reconfigure(gen, only)
	check(t, err, `Methods["echo/Nope"]`)
	assert.ErrorIs(t, err, kernel.ErrCandidateRejected)

	changed := fullSettings()
	changed.Calls.PerConnection = 9
	_, err = s.Reconfigure(gen-1, changed)
	check(t, err)
	assert.ErrorIs(t, err, kernel.ErrPublicationConflict)
}

// The plan says what the Reconfigure then does, and changes nothing
// itself.
func TestPlanReconfigureMatchesTheReconfigure(t *testing.T) {
	s := startServer(t, server.Options{})
	gen, err := s.Reconfigure(0, fullSettings())
	require.NoError(t, err)
	next := fullSettings()
	next.Admission = &kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(7)}}}
	next.Calls.PerServer = 30
	next.Connections.MaxConnections = 80
	next.Governor.DecodedBytes = 4 << 20
	next.Compression = codecs.Config{Off: true}
	next.StreamWindow = 0
	before := settingsOf(s.Server)
	p, err := s.PlanReconfigure(gen, next)
	require.NoError(t, err)
	assert.Equal(t, before, settingsOf(s.Server), "a plan sets nothing")
	assert.Equal(t, gen, s.Admission().Generation())
	assert.Equal(t, gen, p.Generation)
	require.Len(t, p.Admission.States, 1)
	assert.Equal(t, kernel.PlanReconfigure, p.Admission.States[0].Action)
	assert.Equal(t, int64(7), p.Admission.States[0].NewLimit)
	fields := map[string]server.SettingChange{}
	for _, ch := range p.Changes {
		fields[ch.Field] = ch
	}
	want := map[string][2]string{
		"Calls.PerServer":            {"50", "30"},
		"Connections.MaxConnections": {"40", "80"},
		"Governor.DecodedBytes":      {"2097152", "4194304"},
		"Compression.Codecs":         {"zstd", "off"},
		"Compression.MaxDecodedSize": {"8388608", "67108864"},
		"StreamWindow":               {"131072", "262144"},
	}
	require.Len(t, fields, len(want), "%+v", p.Changes)
	for f, w := range want {
		assert.Equal(t, w, [2]string{fields[f].Old, fields[f].New}, f)
		assert.NotEmpty(t, fields[f].Effect, f)
	}
	assert.True(t, strings.HasPrefix(fields["Calls.PerServer"].Effect, "calls in flight finish"), fields["Calls.PerServer"].Effect)

	_, err = s.Reconfigure(gen, next)
	require.NoError(t, err)
	got := settingsOf(s.Server)
	assert.Equal(t, 30, got.Calls.PerServer)
	assert.Equal(t, 80, got.Connections.MaxConnections)
	assert.Equal(t, int64(4<<20), got.Governor.DecodedBytes)
	assert.True(t, s.Compression().Off)
	assert.Equal(t, protocol.DefaultStreamWindow, got.StreamWindow)
	for _, sc := range s.Admission().Stats().Scopes {
		if sc.Name == "global/concurrency" {
			assert.Equal(t, int64(7), sc.Limit)
		}
	}
	_, err = s.PlanReconfigure(gen, next)
	assert.ErrorIs(t, err, kernel.ErrPublicationConflict, "the plan of a stale candidate is refused as its Reconfigure would be")
}

// Turning a codec off live takes effect on connections that negotiated
// it: their compressed requests are refused on the call, their responses
// go uncompressed; turning it back on restores both. New connections
// negotiate from the list in force.
func TestSetCompressionAppliesToConnectionsThatNegotiatedBefore(t *testing.T) {
	s := startInstrumented(t, server.Options{})
	c := s.dial(t)
	zid := c.codecID("zstd")
	body := compressible(64 << 10)
	z := compress(t, s.codecs["zstd"].Codec, body)
	r := c.call("echo", "Say", body)
	require.Nil(t, r.err)
	require.True(t, r.compressed)

	require.NoError(t, s.SetCompression(codecs.Config{Codecs: []spi.Codec{s.codecs["gzip"]}}))
	id := c.send("echo", "Say", z, compressed(zid, len(body)))
	r = c.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeInvalidArgument, r.err.Code)
	assert.Contains(t, r.err.Message, `profile "zstd" is no longer accepted`)
	assert.Zero(t, s.codecs["zstd"].decodes.Load(), "refused before any decode")
	r = c.call("echo", "Say", body)
	require.Nil(t, r.err)
	assert.False(t, r.compressed, "the connection's response codec, zstd, is no longer accepted")
	assert.Equal(t, body, r.body)
	// gzip, accepted still, decodes on the same connection.
	gz := compress(t, s.codecs["gzip"].Codec, body)
	id = c.send("echo", "Say", gz, compressed(c.codecID("gzip"), len(body)))
	r = c.next()
	require.Equal(t, id, r.id)
	require.Nil(t, r.err)
	n := dialOffering(t, s.addr, "zstd", "gzip")
	assert.Equal(t, []string{"gzip"}, n.ack.Codecs, "a new connection negotiates from the list in force")

	require.NoError(t, s.SetCompression(codecs.Config{Codecs: []spi.Codec{s.codecs["zstd"], s.codecs["gzip"]}}))
	id = c.send("echo", "Say", z, compressed(zid, len(body)))
	r = c.next()
	require.Equal(t, id, r.id)
	require.Nil(t, r.err)
	assert.True(t, r.compressed)
	assert.Equal(t, body, c.decodeResponse(r))

	err := s.SetCompression(codecs.Config{MaxDecodedSize: -1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MaxDecodedSize")
	assert.Len(t, s.Compression().Codecs, 2, "a rejected change changes nothing")
	requireLedgerZero(t, s.testServer)
}

// The decode bounds apply from the next request.
func TestSetCompressionBoundsApplyToTheNextRequest(t *testing.T) {
	s := startInstrumented(t, server.Options{})
	c := s.dial(t)
	body := compressible(64 << 10)
	z := compress(t, s.codecs["zstd"].Codec, body)
	require.NoError(t, s.SetCompression(codecs.Config{Codecs: s.Compression().Codecs, MaxDecodedSize: 32 << 10}))
	id := c.send("echo", "Say", z, compressed(c.codecID("zstd"), len(body)))
	r := c.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
	assert.Contains(t, r.err.Message, "maximum decoded size 32768")
}

func TestSetStreamWindow(t *testing.T) {
	s := startServer(t, server.Options{StreamWindow: protocol.DefaultStreamWindow}) // startServer's default is the initial window
	assert.Equal(t, protocol.DefaultStreamWindow, s.StreamWindow())
	for _, w := range []int{-1, protocol.InitialStreamWindow - 1, protocol.MaxWindow + 1} {
		require.Error(t, s.SetStreamWindow(w), "%d", w)
		assert.Equal(t, protocol.DefaultStreamWindow, s.StreamWindow(), "a rejected window changes nothing")
	}
	c := dialStream(t, s.addr)
	growth := func() uint32 {
		t.Helper()
		id := c.open("stream", "Hold", nil, false)
		f := c.nextStream()
		require.Equal(t, protocol.FrameWindowUpdate, f.typ, "%+v", f)
		require.Equal(t, id, f.id)
		c.cancel(id)
		for f := c.nextStream(); f.typ != protocol.FrameError || f.id != id; f = c.nextStream() {
		}
		return f.wu.Growth
	}
	assert.Equal(t, uint32(protocol.DefaultStreamWindow-protocol.InitialStreamWindow), growth())
	require.NoError(t, s.SetStreamWindow(protocol.MaxWindow))
	assert.Equal(t, protocol.MaxWindow, s.StreamWindow())
	assert.Equal(t, uint32(protocol.MaxWindow-protocol.InitialStreamWindow), growth(), "a stream started after the change grows to the new window")
	require.NoError(t, s.SetStreamWindow(0))
	assert.Equal(t, protocol.DefaultStreamWindow, s.StreamWindow())
}
