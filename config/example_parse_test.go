package config_test

import (
	"fmt"

	"github.com/sluicerpc/sluice/config"
)

// Every problem of a document is reported at once, with its line, column
// and field path.
func ExampleParse() {
	_, err := config.Parse([]byte(`version: 1
server:
  admission:
    methods:
      "echo/Say":
        limits:
          - kind: concurrency
            limit: ten
  streams:
    window: 64KB
  calls:
    per_conection: 8
`), "sluice.yaml")
	fmt.Println(err)
	// Output:
	// config: sluice.yaml:8:20: server.admission.methods["echo/Say"].limits[0].limit: want an integer, got the string "ten"
	// config: sluice.yaml:10:13: server.streams.window: invalid size "64KB" (want bytes as an integer, or an integer with B, KiB, MiB, GiB or TiB, such as "64KiB")
	// config: sluice.yaml:12:5: server.calls.per_conection: unknown field "per_conection" (known: per_connection, per_server)
}

// ServerSettings checks values and the partition selector against the
// program's registry.
func ExampleDocument_ServerSettings() {
	doc, err := config.Parse([]byte(`version: 1
server:
  admission:
    partition:
      selector: region
      max_partitions: 100
      idle_timeout: 1m
      limits:
        - kind: sliding_window
          limit: 10
          window: 1s
          segments: 3
`), "sluice.yaml")
	if err != nil {
		panic(err)
	}
	_, err = doc.ServerSettings(config.Selectors{"tenant": tenant})
	fmt.Println(err)
	// Output:
	// config: sluice.yaml:5:17: server.admission.partition.selector: unknown selector "region" (registered: "tenant")
	// config: sluice.yaml:12:21: server.admission.partition.limits[0].segments: must divide window (1000000000ns) exactly, got 3
}
