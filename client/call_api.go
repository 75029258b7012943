package client

import (
	"context"
	"sync"

	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// CallRaw makes a unary call of fullMethod ("service/method") with the
// request body req and returns the response body.
//
// req is only read, and not retained once CallRaw returns; the returned
// slice belongs to the caller. ctx's deadline is sent as the call's time
// budget; when ctx ends first, the server is sent a Cancel frame and
// CallRaw returns ctx's error at once. Errors are described in the package
// documentation; attempts are retried only when that is safe.
func (c *Client) CallRaw(ctx context.Context, fullMethod string, req []byte, opts ...CallOption) ([]byte, error) {
	cl, err := c.invoke(ctx, fullMethod, req, false, opts)
	if err != nil {
		return nil, err
	}
	out := cl.body
	cl.body = nil // ownership passes to the caller
	c.calls.put(cl)
	return out, nil
}

// OneWay sends a one-way call of fullMethod with the request body req: the
// server runs it but sends no answer, so OneWay returns once the request is
// queued on a connection, not when it was delivered or handled. Delivery is
// at most once: an attempt is retried (on another endpoint) only when its
// request was not written. req is not retained once OneWay returns.
func (c *Client) OneWay(ctx context.Context, fullMethod string, req []byte, opts ...CallOption) error {
	cl, err := c.invoke(ctx, fullMethod, req, true, opts)
	if err != nil {
		return err
	}
	c.calls.put(cl)
	return nil
}

// Call makes a unary call of fullMethod with a typed request and response:
// req is encoded with reqCodec and the response decoded with respCodec into
// a new Resp. It behaves as CallRaw otherwise. An encoding failure returns
// InvalidArgument without sending; a response that does not decode returns
// Internal.
func Call[Req, Resp any](ctx context.Context, c *Client, fullMethod string, req *Req, reqCodec message.Codec[Req], respCodec message.Codec[Resp], opts ...CallOption) (*Resp, error) {
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	body, err := reqCodec.AppendMarshal((*bp)[:0], req)
	if err != nil {
		return nil, status.Errorf(protocol.CodeInvalidArgument, "encoding the request with %s: %v", reqCodec.Name(), err)
	}
	*bp = body
	cl, err := c.invoke(ctx, fullMethod, body, false, opts)
	if err != nil {
		return nil, err
	}
	defer c.calls.put(cl)
	resp := new(Resp)
	if err := respCodec.Unmarshal(cl.body, resp); err != nil {
		return nil, status.Errorf(protocol.CodeInternal, "decoding the response with %s: %v", respCodec.Name(), err)
	}
	return resp, nil
}

// bodyPool holds request encoding buffers for Call.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func putBody(bp *[]byte) {
	if cap(*bp) > maxPooledBuffer {
		return
	}
	*bp = (*bp)[:0]
	bodyPool.Put(bp)
}
