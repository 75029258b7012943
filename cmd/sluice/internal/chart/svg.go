package chart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Layout of the document, in user units (pixels).
const (
	width       = 1100
	height      = 600
	marginLeft  = 80
	marginRight = 90
	legendTop   = 78 // the first legend row's middle
	legendRow   = 18
	headroom    = 1.08 // the axes' tops leave room above the data
	fontFamily  = "DejaVu Sans, Arial, Helvetica, sans-serif"
	axisColor   = "#333333"
	gridColor   = "#e4e4e4"
	markerColor = "#7a5195"
	bandColor   = "#ececec"
	maxXTicks   = 12
	maxYTicks   = 8
)

// node is one element of the document.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Kids    []*node
}

func el(name string, attrs ...string) *node {
	n := &node{XMLName: xml.Name{Local: name}}
	for i := 0; i+1 < len(attrs); i += 2 {
		n.Attrs = append(n.Attrs, xml.Attr{Name: xml.Name{Local: attrs[i]}, Value: attrs[i+1]})
	}
	return n
}

func (n *node) add(kids ...*node) *node { n.Kids = append(n.Kids, kids...); return n }

func text(x, y float64, s string, attrs ...string) *node {
	t := el("text", append([]string{"x", num(x), "y", num(y)}, attrs...)...)
	t.Text = s
	return t
}

// num formats a coordinate with at most one decimal.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// WriteSVG validates c and writes it to w as an SVG 1.1 document. A chart
// that does not validate is an error, and nothing is written.
func (c *Chart) WriteSVG(w io.Writer) error {
	if err := c.validate(); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", " ")
	if err := enc.Encode(c.document()); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// frame maps data to the plot area.
type frame struct {
	x0, x1       float64 // data
	left, right  float64 // pixels
	top, bottom  float64
	leftTop      float64 // the left axis' top value
	rightTop     float64
	hasRightAxis bool
}

func (f frame) px(x float64) float64 {
	if f.x1 == f.x0 {
		return f.left
	}
	return f.left + (x-f.x0)/(f.x1-f.x0)*(f.right-f.left)
}

func (f frame) py(v float64, right bool) float64 {
	top := f.leftTop
	if right {
		top = f.rightTop
	}
	return f.bottom - v/top*(f.bottom-f.top)
}

func (c *Chart) document() *node {
	footerLines := len(c.Footer)
	legend, rows := c.legend()
	f := frame{
		x0: c.X[0], x1: c.X[len(c.X)-1],
		left: marginLeft, right: width - marginRight,
		top: legendTop + float64(rows)*legendRow, bottom: float64(height - 56 - 16*footerLines),
	}
	var leftMax, rightMax float64
	for _, s := range c.Series {
		for _, v := range s.Values {
			if math.IsNaN(v) {
				continue
			}
			if s.Right {
				rightMax = max(rightMax, v)
				f.hasRightAxis = true
			} else {
				leftMax = max(leftMax, v)
			}
		}
	}
	var leftStep, rightStep float64
	f.leftTop, leftStep = axisMax(leftMax*headroom, maxYTicks)
	f.rightTop, rightStep = axisMax(rightMax*headroom, maxYTicks)

	svg := el("svg", "xmlns", "http://www.w3.org/2000/svg", "version", "1.1",
		"width", strconv.Itoa(width), "height", strconv.Itoa(height),
		"viewBox", fmt.Sprintf("0 0 %d %d", width, height),
		"font-family", fontFamily, "font-size", "12")
	title := el("title")
	title.Text = c.Title
	desc := el("desc")
	desc.Text = strings.Join(append([]string{c.Title}, c.Subtitle...), "\n")
	svg.add(title, desc, el("rect", "x", "0", "y", "0", "width", strconv.Itoa(width), "height", strconv.Itoa(height), "fill", "#ffffff"))

	// Heading.
	svg.add(text(marginLeft, 28, c.Title, "font-size", "18", "font-weight", "bold", "fill", axisColor))
	for i, s := range c.Subtitle {
		svg.add(text(marginLeft, 48+float64(i)*16, s, "fill", "#555555"))
	}

	// Bands, under everything else in the plot.
	bands := el("g", "id", "bands")
	for _, b := range c.Bands {
		bands.add(el("rect", "class", "band", "x", num(f.px(b.From)), "y", num(f.top),
			"width", num(f.px(b.To)-f.px(b.From)), "height", num(f.bottom-f.top), "fill", bandColor))
	}
	svg.add(bands)

	svg.add(c.axes(f, leftStep, rightStep))

	markers := el("g", "id", "markers")
	for i, m := range c.Markers {
		x := f.px(m.X)
		g := el("g", "id", fmt.Sprintf("marker-%d", i+1), "class", "marker")
		g.add(el("line", "x1", num(x), "y1", num(f.top), "x2", num(x), "y2", num(f.bottom),
			"stroke", markerColor, "stroke-width", "1", "stroke-dasharray", "3,3"))
		g.add(text(0, 0, m.Label, "transform", fmt.Sprintf("translate(%s,%s) rotate(-90)", num(x-3), num(f.top+4)),
			"text-anchor", "end", "font-size", "10", "fill", markerColor))
		markers.add(g)
	}
	svg.add(markers)

	series := el("g", "id", "series", "fill", "none", "stroke-linejoin", "round")
	for _, s := range c.Series {
		p := el("path", "id", "series-"+s.ID, "class", "series", "d", f.path(c.X, s), "stroke", s.Color, "stroke-width", "1.8")
		if s.Dashed {
			p.Attrs = append(p.Attrs, xml.Attr{Name: xml.Name{Local: "stroke-dasharray"}, Value: "6,3"})
		}
		series.add(p)
	}
	svg.add(series)

	svg.add(legend)
	for i, s := range c.Footer {
		svg.add(text(marginLeft, float64(height-16*footerLines+12+16*i)-8, s, "fill", "#555555", "font-family", "DejaVu Sans Mono, Menlo, Consolas, monospace"))
	}
	return svg
}

// path is the d of s: one command per sample.
func (f frame) path(xs []float64, s Series) string {
	var b strings.Builder
	drawing := false
	for i, v := range s.Values {
		if i > 0 {
			b.WriteByte(' ')
		}
		y := v
		cmd := "L"
		if math.IsNaN(v) {
			y, cmd, drawing = 0, "M", false
		} else if !drawing {
			cmd, drawing = "M", true
		}
		b.WriteString(cmd + num(f.px(xs[i])) + "," + num(f.py(y, s.Right)))
	}
	return b.String()
}

// axes draws the grid, the axes, their ticks and their titles.
func (c *Chart) axes(f frame, leftStep, rightStep float64) *node {
	g := el("g", "id", "axes", "fill", axisColor)
	grid := el("g", "stroke", gridColor, "stroke-width", "1")
	for _, v := range ticks(f.leftTop, leftStep) {
		y := f.py(v, false)
		grid.add(el("line", "x1", num(f.left), "y1", num(y), "x2", num(f.right), "y2", num(y)))
		g.add(text(f.left-8, y+4, label(v, leftStep), "text-anchor", "end"))
	}
	xStep := niceStep(f.x1-f.x0, maxXTicks)
	for i := math.Ceil(f.x0/xStep - 1e-9); i*xStep <= f.x1+xStep*1e-9; i++ {
		v := i * xStep
		x := f.px(v)
		grid.add(el("line", "x1", num(x), "y1", num(f.top), "x2", num(x), "y2", num(f.bottom)))
		g.add(el("line", "x1", num(x), "y1", num(f.bottom), "x2", num(x), "y2", num(f.bottom+5), "stroke", axisColor))
		g.add(text(x, f.bottom+18, label(v, xStep), "text-anchor", "middle"))
	}
	g.Kids = append([]*node{grid}, g.Kids...)
	g.add(el("line", "x1", num(f.left), "y1", num(f.bottom), "x2", num(f.right), "y2", num(f.bottom), "stroke", axisColor))
	g.add(el("line", "x1", num(f.left), "y1", num(f.top), "x2", num(f.left), "y2", num(f.bottom), "stroke", axisColor))
	g.add(text(0, 0, c.Left, "transform", fmt.Sprintf("translate(%s,%s) rotate(-90)", num(f.left-52), num((f.top+f.bottom)/2)), "text-anchor", "middle"))
	if f.hasRightAxis {
		g.add(el("line", "x1", num(f.right), "y1", num(f.top), "x2", num(f.right), "y2", num(f.bottom), "stroke", axisColor))
		for _, v := range ticks(f.rightTop, rightStep) {
			y := f.py(v, true)
			g.add(el("line", "x1", num(f.right), "y1", num(y), "x2", num(f.right+5), "y2", num(y), "stroke", axisColor))
			g.add(text(f.right+8, y+4, label(v, rightStep)))
		}
		g.add(text(0, 0, c.Right, "transform", fmt.Sprintf("translate(%s,%s) rotate(90)", num(f.right+66), num((f.top+f.bottom)/2)), "text-anchor", "middle"))
	}
	g.add(text((f.left+f.right)/2, f.bottom+38, c.XLabel, "text-anchor", "middle"))
	return g
}

// legend is the rows of swatches above the plot, and how many rows.
func (c *Chart) legend() (*node, int) {
	g := el("g", "id", "legend", "fill", axisColor)
	x, y, rows := float64(marginLeft), float64(legendTop), 1
	item := func(swatch func(x, y float64) *node, name string) {
		w := 30 + 7*float64(len([]rune(name))) // an estimate: 12px sans-serif
		if x > marginLeft && x+w > width-marginRight {
			x, y, rows = marginLeft, y+legendRow, rows+1
		}
		g.add(swatch(x, y), text(x+30, y+4, name))
		x += w + 20
	}
	for _, s := range c.Series {
		name := s.Name
		if s.Right {
			name += " (right axis)"
		}
		item(func(x, y float64) *node {
			line := el("line", "x1", num(x), "y1", num(y), "x2", num(x+24), "y2", num(y), "stroke", s.Color, "stroke-width", "3")
			if s.Dashed {
				line.Attrs = append(line.Attrs, xml.Attr{Name: xml.Name{Local: "stroke-dasharray"}, Value: "6,3"})
			}
			return line
		}, name)
	}
	if len(c.Bands) > 0 && c.BandLabel != "" {
		item(func(x, y float64) *node {
			return el("rect", "x", num(x), "y", num(y-6), "width", "24", "height", "12", "fill", bandColor, "stroke", "#bbbbbb")
		}, c.BandLabel)
	}
	if len(c.Markers) > 0 {
		item(func(x, y float64) *node {
			return el("line", "x1", num(x+12), "y1", num(y-8), "x2", num(x+12), "y2", num(y+8), "stroke", markerColor, "stroke-dasharray", "3,3")
		}, "update (step · generation)")
	}
	return g, rows
}
