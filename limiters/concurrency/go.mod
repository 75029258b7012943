module github.com/sluicerpc/sluice/limiters/concurrency

go 1.26

require github.com/sluicerpc/sluice/spi v0.0.0

require (
	github.com/stretchr/testify v1.12.1 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)

replace github.com/sluicerpc/sluice/spi => ../../spi
