// Package config is sluice's configuration document: one YAML file (JSON
// is accepted, since JSON is YAML) describing what a running server and
// client can change at runtime — admission rules, call capacity,
// connection limits, the decode governor, compression, stream windows and
// the client's endpoint policy.
//
// [Parse] and [Load] decode a document strictly: unknown fields, values of
// the wrong type, bad durations and negative sizes are errors, and every
// problem of a document is reported at once in an *[Error], each with its
// field path (`server.admission.methods["a/b"].limits[0].limit`) and its
// line and column. A document that fails to parse yields no *Document.
//
// [Document.ServerSettings] and [Document.ClientSettings] convert a parsed
// document into the values the server and client take
// (kernel.Options, server.CallCapacity, server.ConnectionLimits,
// governor.Limits, codecs.Config, the stream window,
// endpointpolicy.CircuitBreakerOptions), checking everything that can be
// checked without a running server, with the same field paths and lines.
//
// Conventions of the document:
//   - keys are snake_case;
//   - a duration is a Go duration string ("250ms", "1m30s"), never a bare
//     number, and never negative;
//   - a size is a non-negative integer of bytes, or a string of a decimal
//     integer and one of the binary units B, KiB, MiB, GiB, TiB
//     ("64KiB", "1MiB"); decimal units (KB, MB) are rejected as
//     ambiguous;
//   - counts are non-negative integers unless their field says otherwise;
//   - an absent section, and a zero field, select the default its doc
//     comment states; an absent server.admission leaves admission
//     disabled;
//   - anchors, aliases and merge keys (<<) work as YAML specifies,
//     within bounds that make a document's cost follow its size: a merge
//     key that refers to a mapping it is part of (a cycle) is a problem,
//     merges nest at most 64 deep, decoding visits at most 4 nodes per
//     byte of the document plus 4,096 (aliases and merges counted at
//     every use) and records at most 64 bytes of field paths per byte
//     plus 1 MiB; reaching a bound is a problem at its line, and decoding
//     stops there;
//   - an *Error lists at most 100 problems, then one that counts the
//     rest; each problem's path and reason are cut to 256 bytes and have
//     their control characters escaped, so a key of the document cannot
//     forge a line where the error is printed.
//
// schema.json is the JSON Schema of the document, generated from these
// types (go generate refreshes it and the reference in
// docs/operations.md).
package config

//go:generate go test -run ^TestGenerated$ -update .
