module github.com/sluicerpc/sluice/bench

go 1.26

require (
	github.com/sluicerpc/sluice/kernel v0.0.0
	github.com/sluicerpc/sluice/limiters/concurrency v0.0.0
	github.com/sluicerpc/sluice/spi v0.0.0
)

replace (
	github.com/sluicerpc/sluice/kernel => ../kernel
	github.com/sluicerpc/sluice/limiters/concurrency => ../limiters/concurrency
	github.com/sluicerpc/sluice/spi => ../spi
)
