package plugin

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// kindServer serves the limiter kinds of a plugin binary and the limiters
// created from them. Limiters are addressed by the id New returned; the
// map is the only shared state and a read lock guards it (the limiters
// synchronize themselves).
type kindServer struct {
	pb.UnimplementedLimiterKindServer
	order []string // kind names, in the order served
	kinds map[string]LimiterKindEntry

	mu       sync.RWMutex
	next     uint64
	limiters map[uint64]spi.Limiter
}

func newKindServer(entries []LimiterKindEntry) *kindServer {
	s := &kindServer{kinds: make(map[string]LimiterKindEntry, len(entries)), limiters: make(map[uint64]spi.Limiter)}
	for _, e := range entries {
		s.order = append(s.order, e.Kind.Name())
		s.kinds[e.Kind.Name()] = e
	}
	return s
}

// recoverPanic turns a panic of the implementation into a status error
// that the host re-raises.
func recoverPanic(err *error) {
	if r := recover(); r != nil {
		*err = status.Error(codes.Internal, panicPrefix+fmt.Sprint(r))
	}
}

func (s *kindServer) kind(name string) (LimiterKindEntry, error) {
	e, ok := s.kinds[name]
	if !ok {
		return LimiterKindEntry{}, status.Errorf(codes.NotFound, "the plugin serves no limiter kind %q (it serves %q)", name, s.order)
	}
	return e, nil
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

func (s *kindServer) Kinds(context.Context, *pb.Empty) (*pb.KindList, error) {
	list := &pb.KindList{}
	for _, name := range s.order {
		e := s.kinds[name]
		info := &pb.KindInfo{Name: name, Class: uint32(e.Kind.Class())}
		if c := e.Capabilities; c != nil {
			info.Capabilities = &pb.Capabilities{
				ReconfigureLimit: c.ReconfigureLimit,
				RaiseFreesUnits:  c.RaiseFreesUnits,
				TickNanos:        int64(c.Tick),
				HintSlackNanos:   int64(c.HintSlack),
				HasAltParams:     c.AltParams != nil,
			}
		}
		list.Kinds = append(list.Kinds, info)
	}
	return list, nil
}

func (s *kindServer) Validate(_ context.Context, req *pb.ValidateRequest) (_ *pb.ErrorReply, err error) {
	defer recoverPanic(&err)
	e, err := s.kind(req.GetKind())
	if err != nil {
		return nil, err
	}
	return &pb.ErrorReply{Error: toError(e.Kind.Validate(fromParams(req.GetParams())))}, nil
}

func (s *kindServer) New(_ context.Context, req *pb.NewRequest) (_ *pb.NewReply, err error) {
	defer recoverPanic(&err)
	e, err := s.kind(req.GetKind())
	if err != nil {
		return nil, err
	}
	l, lerr := e.Kind.New(fromParams(req.GetParams()), fromTime(req.GetNow()))
	if lerr != nil {
		return &pb.NewReply{Error: toError(lerr)}, nil
	}
	if l == nil {
		return &pb.NewReply{Error: &pb.Error{Message: "limiter kind " + e.Kind.Name() + " returned a nil limiter"}}, nil
	}
	s.mu.Lock()
	s.next++
	id := s.next
	s.limiters[id] = l
	s.mu.Unlock()
	return &pb.NewReply{Id: id}, nil
}

// TryAcquire answers the host's acquire. A grant made after the host gave
// up on the call (its call timeout, or Close) is rolled back with Cancel:
// nobody would ever release it. A host that gives up while the answer is
// already on its way back cannot be told apart here; see the package
// documentation.
func (s *kindServer) TryAcquire(ctx context.Context, req *pb.UnitsRequest) (_ *pb.DecisionReply, err error) {
	defer recoverPanic(&err)
	l, err := s.limiter(req.GetId())
	if err != nil {
		return nil, err
	}
	now, n := fromTime(req.GetNow()), req.GetN()
	d := l.TryAcquire(now, n)
	if d.Granted && ctx.Err() != nil {
		l.Cancel(now, n)
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return toDecision(d), nil
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

// declared returns the capabilities the kind declared, or an error.
func (s *kindServer) declared(name string) (*capabilities.Limiter, error) {
	e, err := s.kind(name)
	if err != nil {
		return nil, err
	}
	if e.Capabilities == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "limiter kind %q declares no capabilities", name)
	}
	return e.Capabilities, nil
}

func (s *kindServer) CapabilityParams(_ context.Context, req *pb.CapabilityParamsRequest) (_ *pb.ParamsMsg, err error) {
	defer recoverPanic(&err)
	c, err := s.declared(req.GetKind())
	if err != nil {
		return nil, err
	}
	f := c.Params
	if req.GetAlt() {
		if f = c.AltParams; f == nil {
			return nil, status.Errorf(codes.FailedPrecondition, "limiter kind %q declares no AltParams", req.GetKind())
		}
	}
	return toParams(f(req.GetLimit())), nil
}

func (s *kindServer) CapabilityAllowance(_ context.Context, req *pb.CapabilityAllowanceRequest) (_ *pb.CapabilityAllowanceReply, err error) {
	defer recoverPanic(&err)
	c, err := s.declared(req.GetKind())
	if err != nil {
		return nil, err
	}
	if c.Allowance == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "limiter kind %q declares no Allowance", req.GetKind())
	}
	units := c.Allowance(fromParams(req.GetParams()), fromTime(req.GetFrom()), fromTime(req.GetTo()))
	return &pb.CapabilityAllowanceReply{Units: units}, nil
}
