// Package plugin serves sluice SPI implementations from separate binaries
// with hashicorp/go-plugin, and loads them in the host as the same SPI.
package plugin
