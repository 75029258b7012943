package etcdtest

import (
	"fmt"
	"net"
)

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago: each is bound with port 0 and released once all n are
// chosen, so the n differ. Another process may still take one before etcd
// binds it; Start retries with new ports when etcd reports the address in
// use.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("etcdtest: choosing a free loopback port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
