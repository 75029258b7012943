package protocol_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

// kv is a comparable copy of one metadata entry.
type kv struct{ K, V string }

func entries(m *protocol.Metadata) []kv {
	var out []kv
	for i := 0; i < m.Len(); i++ {
		k, v := m.At(i)
		out = append(out, kv{string(k), string(v)})
	}
	return out
}

func md(t testing.TB, pairs ...string) protocol.Metadata {
	t.Helper()
	var m protocol.Metadata
	for i := 0; i < len(pairs); i += 2 {
		require.NoError(t, m.Add(pairs[i], []byte(pairs[i+1])))
	}
	return m
}

// reqView is a comparable copy of a Request.
type reqView struct {
	Service, Method     uint16
	Budget              int64
	HasBudget           bool
	MD                  []kv
	Body                string
	Compressed          bool
	CodecID             uint8
	OriginalLength      uint32
	OneWay, Cancellable bool
	Stream, HasMessage  bool
	EndStream           bool
}

func viewRequest(r *protocol.Request) reqView {
	return reqView{r.Service, r.Method, int64(r.Budget), r.HasBudget, entries(&r.Metadata), string(r.Body),
		r.Compressed, r.CodecID, r.OriginalLength, r.OneWay, r.Cancellable, r.Stream, r.HasMessage, r.EndStream}
}

type respView struct {
	MD             []kv
	Body           string
	Compressed     bool
	CodecID        uint8
	OriginalLength uint32
}

func viewResponse(r *protocol.Response) respView {
	return respView{entries(&r.Metadata), string(r.Body), r.Compressed, r.CodecID, r.OriginalLength}
}

type msgView struct {
	MD             []kv
	Body           string
	Compressed     bool
	CodecID        uint8
	OriginalLength uint32
	EndStream      bool
}

func viewMessage(m *protocol.Message) msgView {
	return msgView{entries(&m.Metadata), string(m.Body), m.Compressed, m.CodecID, m.OriginalLength, m.EndStream}
}

type errView struct {
	Code            protocol.Code
	Message, Reason string
	RetryAfter      int64
	MD              []kv
}

func viewError(e *protocol.ErrorFrame) errView {
	return errView{e.Code, e.Message, e.Reason, int64(e.RetryAfter), entries(&e.Metadata)}
}

// split parses the header of a complete frame and returns it with the
// payload.
func split(t testing.TB, frame []byte) (protocol.Header, []byte) {
	t.Helper()
	h, err := protocol.ParseHeader(frame, protocol.DefaultLimits().MaxFrameSize)
	require.NoError(t, err)
	require.Len(t, frame, protocol.HeaderSize+int(h.Length))
	return h, frame[protocol.HeaderSize:]
}

// must returns a function that fails t on a non-nil error and returns b,
// for calls like must(t)(protocol.AppendX(...)).
func must(t testing.TB) func(b []byte, err error) []byte {
	return func(b []byte, err error) []byte {
		t.Helper()
		require.NoError(t, err)
		return b
	}
}
