//go:build !linux

package etcdtest

import "syscall"

// sysProcAttr has nothing to add outside Linux: there a test process that
// dies without its cleanups can leave etcd running.
func sysProcAttr() *syscall.SysProcAttr { return nil }
