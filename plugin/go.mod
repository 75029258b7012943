module github.com/sluicerpc/sluice/plugin

go 1.26

require github.com/sluicerpc/sluice/spi v0.0.0

replace github.com/sluicerpc/sluice/spi => ../spi
