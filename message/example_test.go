package message_test

import (
	"fmt"

	"github.com/sluicerpc/sluice/message"
)

type hello struct {
	Name  string `json:"name"`
	Times int    `json:"times,omitempty"`
}

// A codec is chosen per method at registration (server.Handle,
// client.NewCall); this is what it does with each message.
func ExampleJSON() {
	c := message.JSON[hello]()
	body, err := c.AppendMarshal(nil, &hello{Name: "ann", Times: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Name(), string(body))

	var g hello
	if err := c.Unmarshal(body, &g); err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", g)

	// A field this version does not know, or trailing data, is refused
	// (a server answers InvalidArgument), not silently dropped.
	fmt.Println(c.Unmarshal([]byte(`{"name":"bob","lang":"fr"}`), new(hello)) != nil)
	fmt.Println(c.Unmarshal([]byte(`{"name":"bob"} {}`), new(hello)) != nil)
	// Output:
	// json {"name":"ann","times":2}
	// {Name:ann Times:2}
	// true
	// true
}

// AppendMarshal appends to a buffer the caller reuses, so a steady stream
// of messages needs no new buffer each.
func ExampleCodec_appendMarshal() {
	c := message.JSON[hello]()
	buf := make([]byte, 0, 64)
	for _, name := range []string{"ann", "bob"} {
		var err error
		buf, err = c.AppendMarshal(buf[:0], &hello{Name: name})
		if err != nil {
			panic(err)
		}
		fmt.Println(string(buf))
	}
	// Output:
	// {"name":"ann"}
	// {"name":"bob"}
}
