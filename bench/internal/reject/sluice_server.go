package reject

import (
	"context"
	"net"
	"sync"

	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/server"
)

// sluiceServer is the sluice child: call capacity 1, default compression
// (the built-in profiles accepted), admission disabled. flood/Hold blocks
// until its call ends; flood/Say echoes, and is never reached while Hold
// runs.
type sluiceServer struct {
	srv     *server.Server
	l       net.Listener
	entered chan struct{}
}

func serveSluice() (floodServer, error) {
	s := &sluiceServer{entered: make(chan struct{})}
	var once sync.Once
	mux := server.NewMux()
	mux.HandleRaw("flood", "Hold", func(ctx context.Context, _ []byte) ([]byte, error) {
		once.Do(func() { close(s.entered) })
		<-ctx.Done()
		return nil, ctx.Err()
	})
	mux.HandleRaw("flood", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	srv, err := server.New(mux, server.Options{Calls: server.CallCapacity{PerServer: 1}})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.srv, s.l = srv, l
	go func() { _ = srv.Serve(l) }()
	return s, nil
}

func (s *sluiceServer) addr() string { return s.l.Addr().String() }
func (s *sluiceServer) held()        { <-s.entered }
func (s *sluiceServer) stop()        { _ = s.srv.Close() }

func (s *sluiceServer) counts() (uint64, uint64) {
	st := s.srv.Stats()
	return st.Refusals[governor.CallCapacityReason], st.Decompressions
}
