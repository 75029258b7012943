module github.com/sluicerpc/sluice/codecs

go 1.26

require (
	github.com/andybalholm/brotli v1.3.0
	github.com/klauspost/compress v1.20.4
	github.com/sluicerpc/sluice/spi v0.0.0
	go.uber.org/goleak v1.3.0
)

replace github.com/sluicerpc/sluice/spi => ../spi
