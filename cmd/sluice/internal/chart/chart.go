// Package chart draws a line chart over time as a self-contained SVG 1.1
// document: no scripts, no external fonts or style sheets, every style an
// attribute. It is the demo's chart (sluice demo -svg) and depends on the
// standard library only.
//
// A Chart is data: sample times, series of one value per sample against a
// left or a right axis, vertical markers and shaded bands. WriteSVG
// validates it (a bad chart is an error and writes nothing) and renders it
// with encoding/xml, so every text is escaped.
//
// The document's structure is part of the contract, for tests and tools
// that read it: each series is one <path id="series-ID" class="series">
// whose d has exactly one command per sample, "L x,y" drawing to the
// sample or "M x,y" when the sample has no value (NaN) or begins a
// segment; each marker is one <g id="marker-N" class="marker"> (N from 1)
// holding a <line> and a <text> of its label; each band is one
// <rect class="band">.
package chart

import (
	"errors"
	"fmt"
	"math"
	"regexp"
)

// Chart is a chart over time. WriteSVG does not modify it.
type Chart struct {
	// Title is the heading; Subtitle lines follow it, Footer lines are
	// written below the x axis.
	Title    string
	Subtitle []string
	Footer   []string
	// XLabel names the x axis, with its unit: X is in that unit.
	XLabel string
	// Left and Right name the y axes, with their units. A chart without
	// right series draws no right axis.
	Left, Right string
	// X are the sample times, non-decreasing; at least two.
	X []float64
	// Series are drawn in order, each with one value per sample.
	Series []Series
	// Markers are vertical lines at an x, labelled.
	Markers []Marker
	// Bands shade an x interval, labelled in the legend by BandLabel.
	Bands     []Band
	BandLabel string
}

// Series is one line of the chart.
type Series struct {
	// ID names the series in the document (id "series-ID"): letters,
	// digits and '-', unique in the chart.
	ID string
	// Name is its legend entry.
	Name string
	// Color is a "#rrggbb" color.
	Color string
	// Right draws it against the right axis.
	Right bool
	// Dashed draws a dashed line.
	Dashed bool
	// Values has one value per sample, finite and non-negative, or NaN
	// where the series has no value (the line is interrupted).
	Values []float64
}

// Marker is a vertical line at X with a label.
type Marker struct {
	X     float64
	Label string
}

// Band shades [From, To].
type Band struct{ From, To float64 }

var (
	idPattern    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)
	colorPattern = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
)

// validate reports every problem of c.
func (c *Chart) validate() error {
	var errs []error
	if len(c.X) < 2 {
		errs = append(errs, fmt.Errorf("chart: %d samples, at least 2 required", len(c.X)))
	}
	for i, x := range c.X {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			errs = append(errs, fmt.Errorf("chart: X[%d] is %v", i, x))
		} else if i > 0 && x < c.X[i-1] {
			errs = append(errs, fmt.Errorf("chart: X[%d]=%v is before X[%d]=%v", i, x, i-1, c.X[i-1]))
		}
	}
	if len(c.Series) == 0 {
		errs = append(errs, errors.New("chart: no series"))
	}
	seen := map[string]bool{}
	for i, s := range c.Series {
		switch {
		case !idPattern.MatchString(s.ID):
			errs = append(errs, fmt.Errorf("chart: series %d: id %q: want a letter then letters, digits or '-'", i, s.ID))
		case seen[s.ID]:
			errs = append(errs, fmt.Errorf("chart: series %d: id %q used twice", i, s.ID))
		}
		seen[s.ID] = true
		if !colorPattern.MatchString(s.Color) {
			errs = append(errs, fmt.Errorf("chart: series %q: color %q: want #rrggbb", s.ID, s.Color))
		}
		if len(s.Values) != len(c.X) {
			errs = append(errs, fmt.Errorf("chart: series %q: %d values for %d samples", s.ID, len(s.Values), len(c.X)))
		}
		for j, v := range s.Values {
			if math.IsInf(v, 0) || v < 0 {
				errs = append(errs, fmt.Errorf("chart: series %q: value %d is %v (want finite and non-negative, or NaN)", s.ID, j, v))
				break
			}
		}
	}
	for i, m := range c.Markers {
		if !c.inRange(m.X) {
			errs = append(errs, fmt.Errorf("chart: marker %d (%q): x=%v outside the samples", i+1, m.Label, m.X))
		}
	}
	for i, b := range c.Bands {
		if !c.inRange(b.From) || !c.inRange(b.To) || b.To < b.From {
			errs = append(errs, fmt.Errorf("chart: band %d: [%v, %v] is not an interval of the samples", i+1, b.From, b.To))
		}
	}
	return errors.Join(errs...)
}

func (c *Chart) inRange(x float64) bool {
	return len(c.X) > 0 && x >= c.X[0] && x <= c.X[len(c.X)-1]
}
