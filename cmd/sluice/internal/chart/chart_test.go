package chart

import (
	"bytes"
	"encoding/xml"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// elem is a parsed element of a written document.
type elem struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Kids    []elem     `xml:",any"`
}

func (e elem) attr(name string) string {
	for _, a := range e.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (e elem) walk(f func(elem)) {
	f(e)
	for _, k := range e.Kids {
		k.walk(f)
	}
}

func sample() *Chart {
	nan := math.NaN()
	return &Chart{
		Title: "t <&> title", Subtitle: []string{"sub"}, Footer: []string{"foot"},
		XLabel: "time (s)", Left: "count", Right: "rate (/s)",
		X: []float64{0, 0.5, 1, 1.5},
		Series: []Series{
			{ID: "limit", Name: "limit", Color: "#112233", Values: []float64{nan, 4, 4, 8}},
			{ID: "rate", Name: "rate", Color: "#445566", Right: true, Dashed: true, Values: []float64{0, 100, 250, 90}},
		},
		Markers:   []Marker{{X: 0.5, Label: "2 enable · gen 1"}, {X: 1.5, Label: "3 grow · gen 2"}},
		Bands:     []Band{{From: 0, To: 0.5}},
		BandLabel: "disabled",
	}
}

func TestWriteSVGStructure(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, sample().WriteSVG(&b))
	var root elem
	require.NoError(t, xml.Unmarshal(b.Bytes(), &root), b.String())
	assert.Equal(t, "svg", root.XMLName.Local)
	assert.Equal(t, "http://www.w3.org/2000/svg", root.XMLName.Space)
	assert.Equal(t, "1.1", root.attr("version"))
	assert.NotContains(t, b.String(), "<script")
	assert.NotContains(t, b.String(), "<style")
	assert.NotContains(t, b.String(), "href")

	paths := map[string]string{}
	var markers []string
	var bands, texts int
	var allText []string
	root.walk(func(e elem) {
		switch {
		case e.XMLName.Local == "path" && e.attr("class") == "series":
			paths[e.attr("id")] = e.attr("d")
		case e.XMLName.Local == "g" && e.attr("class") == "marker":
			for _, k := range e.Kids {
				if k.XMLName.Local == "text" {
					markers = append(markers, k.Text)
				}
			}
		case e.XMLName.Local == "rect" && e.attr("class") == "band":
			bands++
		case e.XMLName.Local == "text":
			texts++
			allText = append(allText, e.Text)
		}
	})
	require.Len(t, paths, 2)
	lim := strings.Fields(paths["series-limit"])
	require.Len(t, lim, 4, "one command per sample")
	assert.Equal(t, byte('M'), lim[0][0], "no value")
	assert.Equal(t, byte('M'), lim[1][0], "a segment begins")
	assert.Equal(t, byte('L'), lim[2][0])
	assert.Len(t, strings.Fields(paths["series-rate"]), 4)
	assert.Equal(t, []string{"2 enable · gen 1", "3 grow · gen 2"}, markers)
	assert.Equal(t, 1, bands)
	joined := strings.Join(allText, "|")
	for _, want := range []string{"t <&> title", "time (s)", "count", "rate (/s)", "foot", "rate (right axis)", "disabled", "1.4", "250"} {
		assert.Contains(t, joined, want)
	}
}

func TestWriteSVGRefusesBadCharts(t *testing.T) {
	for name, mutate := range map[string]func(*Chart){
		"one sample":      func(c *Chart) { c.X = c.X[:1] },
		"x goes back":     func(c *Chart) { c.X[2] = 0.1 },
		"short series":    func(c *Chart) { c.Series[0].Values = c.Series[0].Values[:3] },
		"negative value":  func(c *Chart) { c.Series[1].Values[1] = -1 },
		"infinite value":  func(c *Chart) { c.Series[1].Values[1] = math.Inf(1) },
		"duplicate id":    func(c *Chart) { c.Series[1].ID = "limit" },
		"bad id":          func(c *Chart) { c.Series[1].ID = "a b" },
		"bad color":       func(c *Chart) { c.Series[1].Color = "red" },
		"marker outside":  func(c *Chart) { c.Markers[0].X = 9 },
		"band backwards":  func(c *Chart) { c.Bands[0] = Band{From: 1, To: 0.5} },
		"no series":       func(c *Chart) { c.Series = nil },
		"nan sample time": func(c *Chart) { c.X[3] = math.NaN() },
	} {
		t.Run(name, func(t *testing.T) {
			c := sample()
			mutate(c)
			var b bytes.Buffer
			assert.Error(t, c.WriteSVG(&b))
			assert.Zero(t, b.Len(), "nothing written")
		})
	}
}

func TestTicks(t *testing.T) {
	top, step := axisMax(9, 8)
	assert.Equal(t, 2.0, step)
	assert.Equal(t, 10.0, top)
	assert.Equal(t, []float64{0, 2, 4, 6, 8, 10}, ticks(top, step))
	top, step = axisMax(2345, 8)
	assert.Equal(t, 500.0, step)
	assert.Equal(t, 2500.0, top)
	top, step = axisMax(0, 8)
	assert.Equal(t, 1.0, top)
	assert.Equal(t, "0.2", label(0.2, niceStep(1, 8)))
	assert.Equal(t, "3", label(3, 1))
	assert.Equal(t, 1.0, niceStep(6.3, 12))
	assert.Equal(t, 0.5, niceStep(4, 12))
}
