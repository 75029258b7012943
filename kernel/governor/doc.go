// Package governor is the server's resource governor: the hard bounds that
// hold whatever the admission policy says, always on, owned by stable
// server state and never reset by an admission update.
//
// Today it holds call capacity: per connection ([ConnCapacities], one
// [CallCapacity] each) and per server, with the two phases of a call
// ([Call]: Reserve, then Activate, then Release, each exactly once), so
// that active plus reserved calls never exceed a capacity, which changes
// live (lowering it revokes nothing). The decode credits and byte budgets
// of compressed requests join it (docs/governor.md).
//
// Policy admission (package kernel) and the governor are two rooms with
// one direction between them: the server asks admission first, then
// reserves here; neither imports the other.
package governor
