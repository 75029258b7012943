package flow_test

import (
	"context"
	"fmt"

	"github.com/sluicerpc/sluice/protocol/flow"
)

// One message through a stream window of 64 KiB and a connection window of
// 1 MiB: the sender reserves on both, the receiver records it, its consumer
// takes it, and the WindowUpdates the receiver asks for are applied by the
// sender's read loop.
func Example() {
	const maxWindow = 1<<31 - 1
	ctx := context.Background()
	stream := flow.NewSendWindow(64<<10, maxWindow)
	conn := flow.NewSendWindow(1<<20, maxWindow)
	rstream := flow.NewRecvWindow(64<<10, maxWindow)
	rconn := flow.NewRecvWindow(1<<20, maxWindow)

	for _, n := range []uint64{10 << 10, 10 << 10} {
		// Sender: Send blocks here while either window is closed.
		if err := flow.ReservePair(ctx, stream, conn, n); err != nil {
			panic(err)
		}
		// ... the Message frame is written; the read loop on the other side:
		if err := rstream.OnMessage(n); err != nil {
			panic(err) // a violation: close the connection
		}
		if err := rconn.OnMessage(n); err != nil {
			panic(err)
		}
		// The consumer's Receive takes the message.
		if r, send := rstream.Consume(n); send {
			fmt.Printf("stream update: %d returned\n", r)
			_ = stream.Update(r, 0) // when the frame arrives
		}
		if r, send := rconn.Consume(n); send {
			fmt.Printf("connection update: %d returned\n", r)
			_ = conn.Update(r, 0)
		}
	}
	fmt.Println("stream credit", stream.Credit(), "connection credit", conn.Credit())
	// Output:
	// stream update: 20480 returned
	// stream credit 65536 connection credit 1028096
}
