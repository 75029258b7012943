package protocol_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/protocol"
)

func Example() {
	// Client side: encode a request into a reusable buffer.
	req := protocol.Request{Service: 0, Method: 1, HasBudget: true, Budget: 50 * time.Millisecond, Body: []byte("hi")}
	if err := req.Metadata.Add("tenant", []byte("acme")); err != nil {
		panic(err)
	}
	frame, err := protocol.AppendRequest(nil, 1, &req)
	if err != nil {
		panic(err)
	}

	// Server side: read the frame and decode it in place.
	r := protocol.NewReader(bytes.NewReader(frame), protocol.DefaultLimits())
	h, payload, err := r.ReadFrame()
	if err != nil {
		panic(err)
	}
	var got protocol.Request
	if err := protocol.ParseRequest(h, payload, protocol.DefaultLimits(), &got); err != nil {
		panic(err)
	}
	tenant, _ := got.Metadata.Get("tenant")
	fmt.Println(h.Type, h.ID, h.Flags, got.Service, got.Method, got.Budget, string(tenant), string(got.Body))
	// Output: Request 1 HasBudget|HasMetadata 0 1 50ms acme hi
}
