package kernel

import (
	"fmt"
	"strings"
)

// MethodID is a method's dense index in a Catalog, from 0.
type MethodID uint32

// ServiceID is a service's dense index in a Catalog, from 0.
type ServiceID uint32

// CatalogBuilder collects services and methods before a Kernel is built. It
// is not safe for concurrent use.
type CatalogBuilder struct {
	services []string
	svcIndex map[string]ServiceID
	methods  []methodEntry
	index    map[string]MethodID
}

type methodEntry struct {
	service ServiceID
	name    string // method name alone
	full    string // "service/method"
}

// Add registers method of service and returns its id. Services are created
// on first use. Names must be non-empty and must not contain '/'. Adding the
// same method twice is an error.
func (b *CatalogBuilder) Add(service, method string) (MethodID, error) {
	if err := checkName("service", service); err != nil {
		return 0, err
	}
	if err := checkName("method", method); err != nil {
		return 0, err
	}
	full := service + "/" + method
	if _, dup := b.index[full]; dup {
		return 0, fmt.Errorf("kernel: catalog: method %q registered twice", full)
	}
	if b.svcIndex == nil {
		b.svcIndex = make(map[string]ServiceID)
		b.index = make(map[string]MethodID)
	}
	sid, ok := b.svcIndex[service]
	if !ok {
		sid = ServiceID(len(b.services))
		b.services = append(b.services, service)
		b.svcIndex[service] = sid
	}
	id := MethodID(len(b.methods))
	b.methods = append(b.methods, methodEntry{service: sid, name: method, full: full})
	b.index[full] = id
	return id, nil
}

// MustAdd is Add that panics on error, for static registrations.
func (b *CatalogBuilder) MustAdd(service, method string) MethodID {
	id, err := b.Add(service, method)
	if err != nil {
		panic(err)
	}
	return id
}

// Build returns the immutable catalog. The builder may keep being used; the
// catalog does not change.
func (b *CatalogBuilder) Build() *Catalog {
	c := &Catalog{
		services: append([]string(nil), b.services...),
		methods:  append([]methodEntry(nil), b.methods...),
		svcIndex: make(map[string]ServiceID, len(b.svcIndex)),
		index:    make(map[string]MethodID, len(b.index)),
	}
	for k, v := range b.svcIndex {
		c.svcIndex[k] = v
	}
	for k, v := range b.index {
		c.index[k] = v
	}
	return c
}

func checkName(what, name string) error {
	if name == "" {
		return fmt.Errorf("kernel: catalog: empty %s name", what)
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("kernel: catalog: %s name %q contains '/'", what, name)
	}
	return nil
}

// Catalog is an immutable set of services and methods with dense ids. Rules
// name services and methods by name; the kernel resolves them against the
// catalog when it compiles a program, so the request path only indexes
// slices by MethodID.
type Catalog struct {
	services []string
	svcIndex map[string]ServiceID
	methods  []methodEntry
	index    map[string]MethodID
}

// Methods returns the number of methods; ids are 0 to Methods()-1.
func (c *Catalog) Methods() int { return len(c.methods) }

// Services returns the number of services; ids are 0 to Services()-1.
func (c *Catalog) Services() int { return len(c.services) }

// Lookup returns the id of "service/method".
func (c *Catalog) Lookup(fullMethod string) (MethodID, bool) {
	id, ok := c.index[fullMethod]
	return id, ok
}

// Service returns the id of the named service.
func (c *Catalog) Service(name string) (ServiceID, bool) {
	id, ok := c.svcIndex[name]
	return id, ok
}

// ServiceOf returns the service of method id. It panics on an id outside the
// catalog.
func (c *Catalog) ServiceOf(id MethodID) ServiceID { return c.methods[id].service }

// FullName returns "service/method" for id.
func (c *Catalog) FullName(id MethodID) string { return c.methods[id].full }

// ServiceName returns the name of service id.
func (c *Catalog) ServiceName(id ServiceID) string { return c.services[id] }
