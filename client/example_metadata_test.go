package client_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// A server partitions admission by the "tenant" request metadata (one call
// in flight per tenant, as in docs/admission.md); its handler reads the
// tenant and answers with response metadata. While tenant a holds its
// slot, a second call of tenant a is refused and tenant b gets in.
func ExampleWithMetadata() {
	hold, release := make(chan struct{}), make(chan struct{})
	mux := server.NewMux()
	mux.HandleRaw("work", "Do", func(ctx context.Context, req []byte) ([]byte, error) {
		tenant, _ := server.RequestMetadata(ctx).Get("tenant")
		if string(req) == "hold" {
			hold <- struct{}{}
			<-release
		}
		if err := server.AddResponseMetadata(ctx, "served-tenant", tenant); err != nil {
			return nil, err
		}
		return []byte("done for " + tenant), nil
	})
	srv, err := server.New(mux, server.Options{Admission: &kernel.Options{
		Partition: &kernel.PartitionPolicy{
			Selector: kernel.Selector{Name: "tenant", Version: 1, Key: func(f kernel.Facts) (string, bool) {
				if f.Metadata == nil { // a request without metadata
					return "", false // the default partition
				}
				return f.Metadata.Get("tenant") // no "tenant": the default partition
			}},
			MaxPartitions: 1024,
			IdleTimeout:   5 * time.Minute,
			Rule:          kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1)}},
		},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() { _ = srv.Close(); <-served }()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, []string{l.Addr().String()}, client.Options{MaxAttempts: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	held := make(chan error, 1)
	go func() {
		_, err := c.CallRaw(ctx, "work/Do", []byte("hold"), client.WithMetadata("tenant", "a"))
		held <- err
	}()
	<-hold

	_, err = c.CallRaw(ctx, "work/Do", nil, client.WithMetadata("tenant", "a"))
	st, _ := status.FromError(err)
	fmt.Println("tenant a:", st.Code, st.Reason)

	var md protocol.Metadata
	out, err := c.CallRaw(ctx, "work/Do", nil, client.WithMetadata("tenant", "b"), client.ResponseMetadata(&md))
	by, _ := md.Get("served-tenant")
	fmt.Printf("tenant b: %s (%v), served-tenant=%s\n", out, err, by)

	close(release)
	fmt.Println("held call:", <-held)
	// Output:
	// tenant a: ResourceExhausted concurrency
	// tenant b: done for b (<nil>), served-tenant=b
	// held call: <nil>
}
