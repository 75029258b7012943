module github.com/sluicerpc/sluice/config

go 1.26.0

require go.yaml.in/yaml/v3 v3.0.6

replace (
	github.com/sluicerpc/sluice/codecs => ../codecs
	github.com/sluicerpc/sluice/conformance => ../conformance
	github.com/sluicerpc/sluice/endpointpolicy => ../endpointpolicy
	github.com/sluicerpc/sluice/kernel => ../kernel
	github.com/sluicerpc/sluice/limiters/concurrency => ../limiters/concurrency
	github.com/sluicerpc/sluice/limiters/tokenbucket => ../limiters/tokenbucket
	github.com/sluicerpc/sluice/limiters/window => ../limiters/window
	github.com/sluicerpc/sluice/message => ../message
	github.com/sluicerpc/sluice/protocol => ../protocol
	github.com/sluicerpc/sluice/server => ../server
	github.com/sluicerpc/sluice/spi => ../spi
)
