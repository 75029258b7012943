package etcdtest

import (
	"fmt"
	"strconv"
)

// binaryName is the etcd server program Start runs, looked up on PATH.
// Debian's etcd-server package installs it as /usr/bin/etcd;
// scripts/deps.sh installs that package when the program is missing.
const binaryName = "etcd"

// missingVerdict decides what Start does when the etcd binary cannot be
// found: under CI (the environment variable CI set to a true value, as
// strconv.ParseBool reads it: "true", "1", ...) the test must fail, so a
// CI run never passes by skipping the tests that need etcd; anywhere else
// it is skipped. msg names the cure, scripts/deps.sh.
func missingVerdict(getenv func(string) string, lookErr error) (fatal bool, msg string) {
	ci, _ := strconv.ParseBool(getenv("CI"))
	msg = fmt.Sprintf("etcdtest: the %s binary is not on PATH (%v): run scripts/deps.sh", binaryName, lookErr)
	if !ci {
		msg += " (skipped: CI is not true)"
	}
	return ci, msg
}
