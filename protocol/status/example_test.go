package status_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// A handler returns a *status.Error to choose the status its caller sees;
// a caller reads the code of any error with Code and the details with
// FromError, through wrapping.
func Example() {
	lookup := func(id string) error {
		if id == "" {
			return status.New(protocol.CodeInvalidArgument, "id is required")
		}
		return status.Errorf(protocol.CodeNotFound, "user %q", id)
	}
	err := fmt.Errorf("loading profile: %w", lookup("ann"))
	fmt.Println(status.Code(err))
	if st, ok := status.FromError(err); ok {
		fmt.Println(st.Message)
	}
	fmt.Println(errors.Is(err, status.New(protocol.CodeNotFound, ""))) // matches by code
	fmt.Println(lookup(""))

	// Errors that are not statuses have codes too.
	fmt.Println(status.Code(nil), status.Code(context.DeadlineExceeded), status.Code(errors.New("boom")))
	// Output:
	// NotFound
	// user "ann"
	// true
	// sluice: InvalidArgument: id is required
	// OK DeadlineExceeded Unknown
}

// An admission rejection carries a reason and, when the server gave one,
// a retry hint.
func ExampleFromError() {
	err := error(&status.Error{Code: protocol.CodeResourceExhausted, Message: "over the limit", Reason: "concurrency", RetryAfter: 250 * time.Millisecond})
	if st, ok := status.FromError(err); ok && st.Code == protocol.CodeResourceExhausted {
		fmt.Println(st.Reason, st.RetryAfter)
	}
	fmt.Println(err)
	_, ok := status.FromError(context.Canceled)
	fmt.Println(ok)
	// Output:
	// concurrency 250ms
	// sluice: ResourceExhausted (concurrency): over the limit
	// false
}
