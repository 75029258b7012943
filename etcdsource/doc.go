// Package etcdsource applies a configuration document stored at one etcd
// key, and every later revision of it, to a running server through its
// control.Controller: the fleet's way of configuration. Every server of a
// fleet watches the same key and so converges on the same document; each
// reports the revision it runs (control.Applied.Revision) and the
// generation it made of it.
//
// The source reads the key (a Get at etcd's revision H), applies the value
// as a complete document of its own (control.Change with Latest set,
// Source control.SourceEtcd, Origin "key@revision"), then watches the key
// from H+1 with clientv3.WithRequireLeader. A watch that fails (etcd
// restarted and the client could not resume it, no leader, the channel
// closed) or that asks for a revision etcd has compacted is not resumed
// blindly: the source reads the key again and watches from that read, with
// a bounded backoff between failed attempts. Watching from H+1 rather than
// from the key's own revision + 1 matters: a key written long ago whose
// revision has since been compacted away would otherwise make every watch
// fail as compacted.
//
// Only revisions newer than the last one the source handled are applied: a
// re-read after a reconnect that finds the same revision applies nothing
// again, and one that finds an older revision (an etcd restored from an
// older backup) is logged and not applied. What the source does not
// change:
//
//   - A deleted key keeps the configuration in force (and so does a key
//     that does not exist when the source starts): deleting a key is not a
//     way to configure a fleet, and a server that lost its configuration
//     because an operator removed the wrong key would fall back to
//     defaults that nobody chose. The source logs the deletion with its
//     revision; writing the key again applies the new value.
//   - An invalid value keeps the configuration in force: the Controller
//     rejects it with its problems (control.Status.LastRejection, with the
//     revision) and logs why.
//   - A value larger than Options.MaxValueBytes (4 MiB by default) is
//     refused before it is parsed.
//
// Stop (or the end of the context given to Start) ends the source and
// waits for its goroutine. The caller owns the etcd client and closes it
// after Stop.
package etcdsource
