package kernel

// hooks are interleaving points for deterministic tests. A nil *hooks (the
// production value) costs one predictable branch where it is checked.
type hooks struct {
	afterCapture func(*Permit) // Capture took a lease
	afterPrepare func()        // Enable/Update: candidate prepared, publication lock not yet taken
	beforeCommit func()        // inside the publication section, before stable state changes
	afterEnqueue func(*Permit) // a waiter is registered on a state's list
	afterRelease func(*Permit) // a granted permit released its units and lease
}
