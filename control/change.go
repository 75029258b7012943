package control

import (
	"time"

	"github.com/sluicerpc/sluice/config"
)

// Source names what brought a document.
type Source string

// The sources of sluice itself; Go code may name its own.
const (
	SourceFile  Source = "file"
	SourceAdmin Source = "admin"
	SourceEtcd  Source = "etcd"
	SourceAPI   Source = "api"
)

// Change is one complete configuration document to apply.
type Change struct {
	// Source and Origin say where the document comes from (Origin: the
	// file's path, "key@revision", the admin client's address); Revision
	// is the etcd revision that holds it (0 for other sources).
	Source   Source
	Origin   string
	Revision int64
	// Document is the document as read (YAML or JSON); Name names it in
	// errors (a file path, an etcd key).
	Document []byte
	Name     string
	// Expected is the generation the change was derived from (an admin
	// client's If-Match). With Latest set it is ignored: the change is a
	// complete document of its own source (a file, an etcd key), applied
	// over whatever is in force; a writer outside the Controller that
	// publishes meanwhile makes it re-plan from the new generation.
	Expected uint64
	Latest   bool
}

// Applied is a configuration in force.
type Applied struct {
	// Generation names it (the server's admission generation).
	Generation uint64
	Source     Source
	Origin     string
	Revision   int64
	// Document is the document as it was given; nil for the
	// configuration the server was built with (no document applied yet).
	Document []byte
	// Doc is Document parsed.
	Doc *config.Document
	// At is when it was applied.
	At time.Time
	// Unchanged is set on the result of an Apply whose document equals
	// the one in force: nothing was published, the generation is the
	// same, and the configuration in force now names this change as its
	// source, origin, revision and document (they describe the same
	// configuration): a server whose etcd revision equals the file it
	// runs reports that revision.
	Unchanged bool
}

// Rejection is a change that was not applied, and why.
type Rejection struct {
	Source   Source
	Origin   string
	Revision int64
	At       time.Time
	// Err is the error Apply returned: a *config.Error (the document's
	// problems, with paths and lines), a *kernel.PublicationConflictError,
	// or another error.
	Err error
}
