// Package control is the one writer path of a running server's
// configuration (DESIGN.md section 9): a Controller turns a configuration
// document (package config) into one complete-candidate
// server.Reconfigure with the expected generation, whatever brought the
// document: a file (package filesource), the admin API (package admin),
// etcd (module etcdsource) or Go code. None of them has apply logic of
// its own.
//
// The generation is the version of the whole configuration: every
// document applied makes one (admission unchanged or disabled included),
// a document equal to the one in force makes none. A change derived from
// a generation that is no longer current is refused (an admin PUT with a
// stale If-Match) or, for sources that hold a complete document of their
// own (a file, an etcd key), applied again from the new generation. An
// invalid document changes nothing; the Controller keeps the last
// rejection, with its problems, for the status.
package control
