module github.com/sluicerpc/sluice/spi

go 1.26
