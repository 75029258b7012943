// Package filesource keeps a running server's configuration in step with
// a configuration file: it applies the file when it starts, then again
// whenever the file changes and whenever Reload is called (the SIGHUP of
// "sluice serve"), each time as one control.Change of source
// control.SourceFile applied over the configuration in force (Latest).
//
// The Source watches directories, not the file: an editor saving a file
// writes a new one and renames it over the old, and a Kubernetes
// ConfigMap volume swaps a "..data" symlink to a new directory, neither of
// which a watch on the file itself survives. Every symlink met resolving
// the path, and the file it resolves to, is followed; an event on any of
// them (created, written, renamed, removed, its mode or times changed)
// makes the Source read the file again once the burst of events is over
// (Options.Debounce).
//
// What the Source reads goes to the Controller, which applies it, finds it
// equal to the configuration in force, or rejects it with every problem
// and its line; the Controller logs and counts those outcomes. The Source
// logs what only it knows: a file that is missing or cannot be read (the
// configuration in force is kept, and a file that comes back is applied),
// and errors of the watcher itself.
package filesource
