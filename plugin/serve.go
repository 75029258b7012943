package plugin

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// hostCheckInterval is how often a plugin checks that its host is alive.
const hostCheckInterval = 250 * time.Millisecond

// NewPluginLogger returns a logger for code running in a plugin binary. It
// writes JSON lines to stderr, which go-plugin forwards to the host's
// logger. A plugin must never write to stdout: go-plugin reads its
// handshake there.
func NewPluginLogger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Output:     os.Stderr,
		Level:      hclog.Info,
		JSONFormat: true,
	})
}

// ServeLimiterKind serves kind over go-plugin's gRPC protocol. Call it from
// a plugin binary's main; it returns only when the host asks the plugin to
// stop. Every limiter the host creates lives in this process; every call
// carries the host's now, so the limiter sees exactly the host's instants
// (to the nanosecond; the monotonic reading and location do not cross).
//
// The plugin exits by itself when its host dies (checked every 250ms), so a
// crashed host does not leave it running. If the implementation panics in
// a call, the panic is reported to the host, which re-raises it in the
// caller, and the plugin keeps serving.
//
// Nothing may be written to stdout before ServeLimiterKind runs: it would
// break the handshake. Log to stderr, e.g. with NewPluginLogger.
func ServeLimiterKind(kind spi.LimiterKind) {
	logger := NewPluginLogger("sluice-plugin." + kind.Name())
	go watchHost(logger)
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         goplugin.PluginSet{limiterKindPluginName: &limiterKindPlugin{impl: kind}},
		GRPCServer:      goplugin.DefaultGRPCServer,
		Logger:          logger,
	})
}

// watchHost exits the process when the host that started it has died: the
// plugin then has another parent.
func watchHost(logger hclog.Logger) {
	host := os.Getppid()
	if s := os.Getenv(hostPIDEnv); s != "" {
		if pid, err := strconv.Atoi(s); err == nil {
			host = pid
		}
	}
	t := time.NewTicker(hostCheckInterval)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != host {
			logger.Error("host process is gone; exiting", "host_pid", host)
			os.Exit(2)
		}
	}
}

// kindServer serves one spi.LimiterKind and the limiters created from it.
type kindServer struct {
	pb.UnimplementedLimiterKindServer
	kind spi.LimiterKind

	mu       sync.RWMutex
	next     uint64
	limiters map[uint64]spi.Limiter
}

func newKindServer(kind spi.LimiterKind) *kindServer {
	return &kindServer{kind: kind, limiters: make(map[uint64]spi.Limiter)}
}

// recoverPanic turns a panic of the implementation into a status error
// that the host re-raises.
func recoverPanic(err *error) {
	if r := recover(); r != nil {
		*err = status.Error(codes.Internal, panicPrefix+fmt.Sprint(r))
	}
}

func (s *kindServer) limiter(id uint64) (spi.Limiter, error) {
	s.mu.RLock()
	l, ok := s.limiters[id]
	s.mu.RUnlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no limiter %d in the plugin", id)
	}
	return l, nil
}

func (s *kindServer) Describe(context.Context, *pb.Empty) (*pb.KindInfo, error) {
	return &pb.KindInfo{Name: s.kind.Name(), Class: uint32(s.kind.Class())}, nil
}

func (s *kindServer) Validate(_ context.Context, req *pb.ValidateRequest) (_ *pb.ErrorReply, err error) {
	defer recoverPanic(&err)
	return &pb.ErrorReply{Error: toError(s.kind.Validate(fromParams(req.GetParams())))}, nil
}

func (s *kindServer) New(_ context.Context, req *pb.NewRequest) (_ *pb.NewReply, err error) {
	defer recoverPanic(&err)
	l, lerr := s.kind.New(fromParams(req.GetParams()), fromTime(req.GetNow()))
	if lerr != nil {
		return &pb.NewReply{Error: toError(lerr)}, nil
	}
	if l == nil {
		return &pb.NewReply{Error: &pb.Error{Message: "limiter kind " + s.kind.Name() + " returned a nil limiter"}}, nil
	}
	s.mu.Lock()
	s.next++
	id := s.next
	s.limiters[id] = l
	s.mu.Unlock()
	return &pb.NewReply{Id: id}, nil
}

func (s *kindServer) TryAcquire(_ context.Context, req *pb.UnitsRequest) (_ *pb.DecisionReply, err error) {
	defer recoverPanic(&err)
	l, err := s.limiter(req.GetId())
	if err != nil {
		return nil, err
	}
	return toDecision(l.TryAcquire(fromTime(req.GetNow()), req.GetN())), nil
}

func (s *kindServer) Release(_ context.Context, req *pb.UnitsRequest) (_ *pb.Empty, err error) {
	defer recoverPanic(&err)
	l, err := s.limiter(req.GetId())
	if err != nil {
		return nil, err
	}
	l.Release(fromTime(req.GetNow()), req.GetN())
	return &pb.Empty{}, nil
}

func (s *kindServer) Cancel(_ context.Context, req *pb.UnitsRequest) (_ *pb.Empty, err error) {
	defer recoverPanic(&err)
	l, err := s.limiter(req.GetId())
	if err != nil {
		return nil, err
	}
	l.Cancel(fromTime(req.GetNow()), req.GetN())
	return &pb.Empty{}, nil
}

func (s *kindServer) Reconfigure(_ context.Context, req *pb.ReconfigureRequest) (_ *pb.ErrorReply, err error) {
	defer recoverPanic(&err)
	l, err := s.limiter(req.GetId())
	if err != nil {
		return nil, err
	}
	return &pb.ErrorReply{Error: toError(l.Reconfigure(fromTime(req.GetNow()), fromParams(req.GetParams())))}, nil
}

func (s *kindServer) Snapshot(_ context.Context, req *pb.SnapshotRequest) (_ *pb.SnapshotReply, err error) {
	defer recoverPanic(&err)
	l, err := s.limiter(req.GetId())
	if err != nil {
		return nil, err
	}
	sn := l.Snapshot(fromTime(req.GetNow()))
	return &pb.SnapshotReply{Kind: sn.Kind, Limit: sn.Limit, InUse: sn.InUse, Available: sn.Available}, nil
}

func (s *kindServer) Drop(_ context.Context, req *pb.DropRequest) (*pb.Empty, error) {
	s.mu.Lock()
	delete(s.limiters, req.GetId())
	s.mu.Unlock()
	return &pb.Empty{}, nil
}

// limiterKindPlugin is the go-plugin glue on both sides: impl on the plugin
// side, opts on the host side.
type limiterKindPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl spi.LimiterKind
	opts options
}

var _ goplugin.GRPCPlugin = (*limiterKindPlugin)(nil)

func (p *limiterKindPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterLimiterKindServer(s, newKindServer(p.impl))
	return nil
}

func (p *limiterKindPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return newLimiterKindClient(ctx, pb.NewLimiterKindClient(c), p.opts)
}
