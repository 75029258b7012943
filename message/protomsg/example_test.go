package protomsg_test

import (
	"fmt"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicerpc/sluice/message/protomsg"
)

// Codec takes the generated message type (here a well-known type; with
// protoc-gen-go output it is protomsg.Codec[pb.EchoRequest]()) and is
// registered per method like message.JSON.
func ExampleCodec() {
	c := protomsg.Codec[wrapperspb.StringValue]()
	body, err := c.AppendMarshal(nil, wrapperspb.String("hello"))
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Name(), body)

	var got wrapperspb.StringValue
	if err := c.Unmarshal(body, &got); err != nil {
		panic(err)
	}
	fmt.Println(got.GetValue())
	fmt.Println(c.Unmarshal([]byte{0xff}, new(wrapperspb.StringValue)) != nil) // not a message
	// Output:
	// proto [10 5 104 101 108 108 111]
	// hello
	// true
}
