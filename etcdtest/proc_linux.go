package etcdtest

import "syscall"

// sysProcAttr asks the kernel to kill etcd when the test process dies
// without running its cleanups (a panic elsewhere, go test's -timeout), so
// no etcd outlives the test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
