package plugin

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// codecServer serves the codecs of a plugin binary. It holds no state of
// its own: codecs are safe for concurrent use and synchronize themselves.
type codecServer struct {
	pb.UnimplementedCodecServer
	order  []string
	codecs map[string]CodecEntry
}

func newCodecServer(entries []CodecEntry) *codecServer {
	s := &codecServer{codecs: make(map[string]CodecEntry, len(entries))}
	for _, e := range entries {
		s.order = append(s.order, e.Codec.Name())
		s.codecs[e.Codec.Name()] = e
	}
	return s
}

func (s *codecServer) codec(name string) (CodecEntry, error) {
	e, ok := s.codecs[name]
	if !ok {
		return CodecEntry{}, status.Errorf(codes.NotFound, "the plugin serves no codec %q (it serves %q)", name, s.order)
	}
	return e, nil
}

func (s *codecServer) Codecs(context.Context, *pb.Empty) (*pb.CodecList, error) {
	list := &pb.CodecList{}
	for _, name := range s.order {
		list.Codecs = append(list.Codecs, &pb.CodecInfo{Name: name, Bomb: s.codecs[name].Bomb != nil})
	}
	return list, nil
}

// Compress compresses into a buffer of the host's bound: the codec cannot
// answer more than the host has room for, unless it grows the buffer,
// which the host refuses.
func (s *codecServer) Compress(_ context.Context, req *pb.CompressRequest) (_ *pb.CompressReply, err error) {
	defer recoverPanic(&err)
	e, err := s.codec(req.GetName())
	if err != nil {
		return nil, err
	}
	bound := req.GetBound()
	if bound < 0 || bound > MaxCodecBody {
		return nil, status.Errorf(codes.InvalidArgument, "codec %q: compress bound %d outside [0, %d]", req.GetName(), bound, MaxCodecBody)
	}
	out, fits, cerr := e.Codec.Compress(make([]byte, 0, bound), req.GetSrc())
	switch {
	case cerr != nil:
		return &pb.CompressReply{Error: toCodecError(cerr)}, nil
	case !fits:
		return &pb.CompressReply{}, nil
	}
	return &pb.CompressReply{Fits: true, Out: out}, nil
}

// DecompressChunks decodes under the host's limit and the stream's
// context, which ends when the host's context does (its deadline crosses
// as the call's, its cancellation as the call's), when the host stops
// reading (it checks its context between pieces and cancels the stream),
// when the host's call watch gives up, or when the connection is lost.
// The decoded bytes cross in pieces of at most spi.DecodeQuantum, each
// sent when the host's flow-control window has room, so a host that has
// stopped reading stops the sending too; an error crosses alone, last.
func (s *codecServer) DecompressChunks(req *pb.DecompressRequest, stream pb.Codec_DecompressChunksServer) (err error) {
	defer recoverPanic(&err)
	e, err := s.codec(req.GetName())
	if err != nil {
		return err
	}
	limit := req.GetLimit()
	if limit < 0 || limit > MaxCodecBody {
		return status.Errorf(codes.InvalidArgument, "codec %q: decompress limit %d outside [0, %d]", req.GetName(), limit, MaxCodecBody)
	}
	hint := min(max(req.GetHint(), 0), limit)
	out, derr := e.Codec.Decompress(stream.Context(), make([]byte, 0, hint), req.GetSrc(), int(limit))
	if derr != nil {
		return stream.Send(&pb.DecompressReply{Error: toCodecError(derr)})
	}
	for len(out) > 0 {
		n := min(len(out), spi.DecodeQuantum)
		if err := stream.Send(&pb.DecompressReply{Out: out[:n]}); err != nil {
			return err
		}
		out = out[n:]
	}
	return nil
}

func (s *codecServer) Bomb(_ context.Context, req *pb.BombRequest) (_ *pb.BombReply, err error) {
	defer recoverPanic(&err)
	e, err := s.codec(req.GetName())
	if err != nil {
		return nil, err
	}
	if e.Bomb == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "codec %q: the plugin builds no bombs for it", req.GetName())
	}
	body, berr := e.Bomb(req.GetDecoded())
	if berr != nil {
		return &pb.BombReply{Error: toCodecError(berr)}, nil
	}
	return &pb.BombReply{Body: body}, nil
}
