package plugin

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// policyServer serves the endpoint policies of a plugin binary and the
// instances hosts created from them, addressed by the id NewPolicy
// returned. The map is the only shared state; the policies synchronize
// themselves.
type policyServer struct {
	pb.UnimplementedEndpointPolicyServer
	order   []string
	entries map[string]EndpointPolicyEntry
	logger  hclog.Logger

	mu        sync.RWMutex
	next      uint64
	instances map[uint64]policyInstance
}

type policyInstance struct {
	name   string
	policy spi.EndpointPolicy
	clock  *hostClock
}

// hostClock is a policy instance's clock in the plugin: the latest host
// reading received, never going back.
type hostClock struct{ nanos atomic.Int64 }

// observe records a host reading (ignored if earlier than the latest).
func (c *hostClock) observe(t *pb.Time) {
	if !t.GetSet() {
		return
	}
	n := t.GetUnixNano()
	for {
		cur := c.nanos.Load()
		if n <= cur || c.nanos.CompareAndSwap(cur, n) {
			return
		}
	}
}

// Now returns the latest host reading.
func (c *hostClock) Now() time.Time { return time.Unix(0, c.nanos.Load()) }

func newPolicyServer(entries []EndpointPolicyEntry, logger hclog.Logger) *policyServer {
	s := &policyServer{entries: make(map[string]EndpointPolicyEntry, len(entries)), logger: logger, instances: make(map[uint64]policyInstance)}
	for _, e := range entries {
		s.order = append(s.order, e.Name)
		s.entries[e.Name] = e
	}
	return s
}

func (s *policyServer) instance(id uint64) (policyInstance, error) {
	s.mu.RLock()
	in, ok := s.instances[id]
	s.mu.RUnlock()
	if !ok {
		return policyInstance{}, status.Errorf(codes.NotFound, "no endpoint policy instance %d in the plugin", id)
	}
	return in, nil
}

func (s *policyServer) Policies(context.Context, *pb.Empty) (*pb.PolicyList, error) {
	list := &pb.PolicyList{}
	for _, name := range s.order {
		info := &pb.PolicyInfo{Name: name}
		if c := s.entries[name].Capabilities; c != nil {
			info.Capabilities = &pb.PolicyCapabilities{Deterministic: c.Deterministic, Bounded: int64(c.Bounded)}
		}
		list.Policies = append(list.Policies, info)
	}
	return list, nil
}

func (s *policyServer) NewPolicy(_ context.Context, req *pb.NewPolicyRequest) (_ *pb.NewPolicyReply, err error) {
	defer recoverPanic(&err)
	e, ok := s.entries[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "the plugin serves no endpoint policy %q (it serves %q)", req.GetName(), s.order)
	}
	clock := &hostClock{}
	clock.observe(req.GetNow())
	p := e.New(clock)
	if p == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "endpoint policy %q: New returned a nil policy", e.Name)
	}
	s.mu.Lock()
	s.next++
	id := s.next
	s.instances[id] = policyInstance{name: e.Name, policy: p, clock: clock}
	s.mu.Unlock()
	return &pb.NewPolicyReply{Id: id}, nil
}

// TryAcquire answers the host's TryAcquire. An attempt allowed after the
// host gave up on the call (its call timeout, or Close) is reported at
// once as cancelled: the host refused it, so nobody else would report it.
func (s *policyServer) TryAcquire(ctx context.Context, req *pb.PolicyAcquireRequest) (_ *pb.PolicyDecision, err error) {
	defer recoverPanic(&err)
	in, err := s.instance(req.GetId())
	if err != nil {
		return nil, err
	}
	in.clock.observe(req.GetNow())
	d := in.policy.TryAcquire(req.GetEndpoint(), req.GetMethod())
	if d.Allowed && ctx.Err() != nil {
		s.report(in, spi.AttemptOutcome{Kind: spi.OutcomeCancelled, Code: uint8(codes.Canceled)}, d.Token)
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &pb.PolicyDecision{Allowed: d.Allowed, Token: d.Token, RetryAfterNanos: int64(d.RetryAfter)}, nil
}

// Report reports an outcome. A panic of the policy is recovered and logged
// here: Report must not panic, and the host's Report returns normally.
func (s *policyServer) Report(_ context.Context, req *pb.PolicyReportRequest) (*pb.Empty, error) {
	in, err := s.instance(req.GetId())
	if err != nil {
		return nil, err
	}
	in.clock.observe(req.GetNow())
	s.report(in, fromOutcome(req.GetOutcome()), req.GetToken())
	return &pb.Empty{}, nil
}

func (s *policyServer) report(in policyInstance, o spi.AttemptOutcome, token uint64) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("endpoint policy Report panicked; ignored", "policy", in.name, "outcome", o.Kind.String(), "token", token, "panic", fmt.Sprint(r))
		}
	}()
	in.policy.Report(o, token)
}

// DropPolicy forgets an instance and closes it if it is an io.Closer.
// Dropping an unknown id does nothing.
func (s *policyServer) DropPolicy(_ context.Context, req *pb.DropPolicyRequest) (*pb.Empty, error) {
	s.mu.Lock()
	in, ok := s.instances[req.GetId()]
	delete(s.instances, req.GetId())
	s.mu.Unlock()
	if c, isCloser := in.policy.(io.Closer); ok && isCloser {
		func() {
			defer func() {
				if r := recover(); r != nil {
					s.logger.Error("closing an endpoint policy panicked", "policy", in.name, "panic", fmt.Sprint(r))
				}
			}()
			if err := c.Close(); err != nil {
				s.logger.Warn("closing an endpoint policy failed", "policy", in.name, "error", err)
			}
		}()
	}
	return &pb.Empty{}, nil
}

func toOutcome(o spi.AttemptOutcome) *pb.Outcome {
	return &pb.Outcome{Kind: uint32(o.Kind), Code: uint32(o.Code), ResponseObserved: o.ResponseObserved, ElapsedNanos: int64(o.Elapsed)}
}

func fromOutcome(o *pb.Outcome) spi.AttemptOutcome {
	return spi.AttemptOutcome{
		Kind:             spi.OutcomeKind(o.GetKind()),
		Code:             uint8(o.GetCode()),
		ResponseObserved: o.GetResponseObserved(),
		Elapsed:          time.Duration(o.GetElapsedNanos()),
	}
}
