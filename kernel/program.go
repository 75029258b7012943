package kernel

import (
	"sync/atomic"

	"github.com/sluicerpc/sluice/spi"
)

// maxRouteStates bounds the states one request acquires: a concurrency and a
// rate limiter at each of Global, Service and Method, and room for the
// partition layer.
const maxRouteStates = 8

// route is the precompiled admission plan of one method under one program:
// the states to acquire, in order (Global, Service, Method; concurrency
// before rate in each). It is immutable once published.
type route struct {
	n          int
	needsClock bool
	states     [maxRouteStates]*state
}

// program is the immutable publication unit. Everything a request needs
// until its permit is released is reachable from the program it captured.
type program struct {
	k      *Kernel
	gen    uint64
	sealed bool // the sentinel published by Seal: every Admit is refused
	routes []route
	queue  QueuePolicy
	// states are the distinct states this program binds; each holds one
	// ref for the program until it drains.
	states []*state
	opts   Options
	// part is the partition namespace (nil: no partition layer) and
	// selector its key function, as this program's candidate gave it.
	part     *namespace
	selector func(Facts) (string, bool)
	// done is set once the program has drained.
	done atomic.Bool
}

func (p *program) drained() bool { return p.done.Load() }

// compile builds the routes of c over the bound states (aligned with
// c.descs).
func compile(c *candidate, bound []*state, cat *Catalog) []route {
	routes := make([]route, cat.Methods())
	for m := range routes {
		r := &routes[m]
		add := func(slots ruleSlots) {
			for _, i := range slots {
				if i >= 0 {
					st := bound[i]
					r.states[r.n] = st
					r.n++
					if st.class != spi.ClassConcurrency {
						r.needsClock = true
					}
				}
			}
		}
		add(c.global)
		add(c.services[cat.ServiceOf(MethodID(m))])
		add(c.methods[m])
	}
	return routes
}
