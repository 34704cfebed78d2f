// Command benchplot draws the curves of the scale benchmarks: it reads the
// output of `go test -bench` on standard input, takes every line of a
// benchmark whose name holds <x>=N (bots=N unless -x says otherwise) and
// reports the metric asked for, and writes a PNG with one line per
// benchmark (the name less its <x>=N) of the metric against N, drawn with
// gonum.org/v1/plot: a title, both axes named with their units, a legend,
// the goal as a labelled dashed line, and logarithmic axes where the data
// span decades.
//
//	go test -run '^$' -bench AtScale ./bot/ | tee bench.txt
//	go run ./scripts/benchplot -metric x-floor -goal 1.5 -title "Load time against its floor" -o docs/scale.png < bench.txt
//
// With -count, each point is the median of the runs. The legend is also
// printed on standard output, with each point's value.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image/color"
	"io"
	"log"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func main() {
	metric := flag.String("metric", "x-floor", "the metric to plot, as the benchmarks report it (ns/op, x-floor, p99-ms, …)")
	out := flag.String("o", "scale.png", "the PNG file to write")
	goal := flag.Float64("goal", 0, "draw the goal as a labelled dashed line at this value (0: none)")
	goalLabel := flag.String("goal-label", "", "the goal line's label (default \"goal ≤ <goal> <unit>\")")
	match := flag.String("match", "", "plot only the benchmarks whose name matches this regular expression")
	param := flag.String("x", "bots", "the size parameter of the benchmark names, as in <x>=N: bots, conns, subscribers, people…")
	title := flag.String("title", "", "the plot's title (default: the metric against the size)")
	xLabel := flag.String("xlabel", "", "the x axis' name (default: number of <x>)")
	yLabel := flag.String("ylabel", "", "the y axis' name with its unit (default: from the metric's name)")
	flag.Parse()
	var keep *regexp.Regexp
	if *match != "" {
		var err error
		if keep, err = regexp.Compile(*match); err != nil {
			log.Fatalf("benchplot: -match: %v", err)
		}
	}
	series, err := parse(os.Stdin, *metric, *param, keep)
	if err != nil {
		log.Fatalf("benchplot: %v", err)
	}
	if len(series) == 0 {
		log.Fatalf("benchplot: no benchmark with %s=N reports %s", *param, *metric)
	}
	lab := labels{title: *title, x: *xLabel, y: *yLabel, goal: *goalLabel}
	lab.fill(*metric, *param, *goal)
	p, legend, err := drawPlot(series, *goal, lab)
	if err != nil {
		log.Fatalf("benchplot: %v", err)
	}
	names := []string{lab.goal}
	for _, s := range series {
		names = append(names, strings.TrimPrefix(s.name, "Benchmark"))
	}
	if err := save(p, legend, names, *out); err != nil {
		log.Fatalf("benchplot: write %s: %v", *out, err)
	}
	for i, s := range series {
		fmt.Printf("%d  %s:", i+1, s.name)
		for _, p := range s.points {
			fmt.Printf("  %d → %.4g", p.n, p.value)
		}
		fmt.Println()
	}
}

// series is one benchmark's curve.
type series struct {
	name   string
	points []point
}

type point struct {
	n     int
	value float64
}

// parse reads benchmark lines and gives a series per benchmark name (less
// param=N and the -P suffix), its points the median of the values at
// each N.
func parse(r io.Reader, metric, param string, keep *regexp.Regexp) ([]series, error) {
	sizeRe, err := regexp.Compile(`(^|/)` + regexp.QuoteMeta(param) + `=(\d+)`)
	if err != nil {
		return nil, err
	}
	values := map[string]map[int][]float64{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		m := sizeRe.FindStringSubmatch(name)
		if m == nil || (keep != nil && !keep.MatchString(name)) {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		name = strings.Trim(sizeRe.ReplaceAllString(name, "$1"), "/")
		name = strings.ReplaceAll(name, "//", "/")
		for i := 2; i+1 < len(f); i += 2 {
			if f[i+1] != metric {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %s is not a number", f[0], f[i])
			}
			if values[name] == nil {
				values[name] = map[int][]float64{}
				order = append(order, name)
			}
			values[name][n] = append(values[name][n], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []series
	for _, name := range order {
		s := series{name: name}
		for n, vs := range values[name] {
			s.points = append(s.points, point{n, median(vs)})
		}
		slices.SortFunc(s.points, func(a, b point) int { return a.n - b.n })
		out = append(out, s)
	}
	return out, nil
}

func median(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}

// labels are the words on a plot.
type labels struct{ title, x, y, goal string }

// units names the unit of a metric by the suffix of its name.
var units = []struct{ suffix, unit string }{
	{"x-floor", "× the floor"}, {"-ms", "ms"}, {"-µs", "µs"}, {"-us", "µs"}, {"ns/op", "ns"},
	{"B/bot", "bytes per bot"}, {"B/conn", "bytes per connection"}, {"µs/turn", "µs per turn"}, {"µs/make", "µs per make"},
}

// unit is the unit of metric, or "" when its name does not say.
func unit(metric string) string {
	for _, u := range units {
		if strings.HasSuffix(metric, u.suffix) {
			return u.unit
		}
	}
	return ""
}

// fill gives every label left empty its default.
func (l *labels) fill(metric, param string, goal float64) {
	u := unit(metric)
	if l.y == "" {
		l.y = metric
		if u != "" && !strings.Contains(metric, "x-floor") {
			l.y += " (" + u + ")"
		} else if u != "" {
			l.y = u + " (" + metric + ")"
		}
	}
	if l.x == "" {
		l.x = "number of " + param + " (log scale)"
	}
	if l.title == "" {
		l.title = metric + " by number of " + param
	}
	if l.goal == "" && goal > 0 {
		l.goal = "goal ≤ " + strconv.FormatFloat(goal, 'g', -1, 64)
		if u != "" {
			l.goal += " " + strings.TrimPrefix(u, "× ")
			if strings.HasPrefix(u, "× ") {
				l.goal = "goal ≤ " + strconv.FormatFloat(goal, 'g', -1, 64) + "× the floor"
			}
		}
	}
}

// decades is how many powers of ten lo to hi span.
func decades(lo, hi float64) float64 {
	if lo <= 0 || hi <= 0 {
		return 0
	}
	return math.Log10(hi / lo)
}

var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xff, 0x7f, 0x0e, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

// drawPlot plots the series: the size on a log axis when it spans a decade or
// more, the metric on a log axis when it spans one and a half or more, else a linear
// one from zero.
func drawPlot(all []series, goal float64, lab labels) (*plot.Plot, *plot.Legend, error) {
	p := plot.New()
	p.Title.Text = lab.title
	p.Title.TextStyle.Font.Size = vg.Points(15)
	p.Title.Padding = vg.Points(10)
	p.X.Label.Text, p.Y.Label.Text = lab.x, lab.y
	p.X.Label.TextStyle.Font.Size, p.Y.Label.TextStyle.Font.Size = vg.Points(12), vg.Points(12)
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	var sizes []int
	for _, s := range all {
		for _, pt := range s.points {
			minX, maxX = math.Min(minX, float64(pt.n)), math.Max(maxX, float64(pt.n))
			minY, maxY = math.Min(minY, pt.value), math.Max(maxY, pt.value)
			if !slices.Contains(sizes, pt.n) {
				sizes = append(sizes, pt.n)
			}
		}
	}
	if goal > 0 {
		minY, maxY = math.Min(minY, goal), math.Max(maxY, goal)
	}
	slices.Sort(sizes)
	logX := decades(minX, maxX) >= 1
	logY := decades(minY, maxY) >= 1.5
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = sizeTicks(sizes)
		p.X.Min, p.X.Max = minX/1.4, maxX*1.4
	} else {
		p.X.Label.Text = strings.TrimSuffix(lab.x, " (log scale)")
		p.X.Tick.Marker = sizeTicks(sizes)
		p.X.Min, p.X.Max = minX-0.05*(maxX-minX+1), maxX+0.05*(maxX-minX+1)
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Label.Text += " (log scale)"
		p.Y.Min, p.Y.Max = minY/1.5, maxY*1.5
	} else {
		p.Y.Min, p.Y.Max = 0, maxY*1.15
	}
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	for i, s := range all {
		xys := make(plotter.XYs, len(s.points))
		for j, pt := range s.points {
			xys[j].X, xys[j].Y = float64(pt.n), pt.value
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s.name, err)
		}
		c := palette[i%len(palette)]
		line.Color, line.Width = c, vg.Points(2)
		points.Color, points.Shape, points.Radius = c, draw.CircleGlyph{}, vg.Points(3)
		p.Add(line, points)
		legend.Add(strings.TrimPrefix(s.name, "Benchmark"), line, points)
	}
	if goal > 0 {
		gl, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: goal}, {X: p.X.Max, Y: goal}})
		if err != nil {
			return nil, nil, err
		}
		gl.Color, gl.Width, gl.Dashes = color.Black, vg.Points(1.5), []vg.Length{vg.Points(6), vg.Points(4)}
		p.Add(gl)
		legend.Add(lab.goal, gl)
		tl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: p.X.Max, Y: goal}}, Labels: []string{lab.goal}})
		if err != nil {
			return nil, nil, err
		}
		tl.Offset = vg.Point{X: -vg.Points(4), Y: vg.Points(3)}
		tl.TextStyle[0].XAlign, tl.TextStyle[0].YAlign = draw.XRight, draw.YBottom
		tl.TextStyle[0].Font.Size = vg.Points(10)
		p.Add(tl)
	}
	return p, &legend, nil
}

// The size of a plot, and of the band at its right that holds the legend.
const (
	width, height = 10 * vg.Inch, 5.4 * vg.Inch
)

// save writes the plot to a PNG at path, its legend (whose entries are
// names) in a band at the right, clear of the curves.
func save(p *plot.Plot, legend *plot.Legend, names []string, path string) error {
	band := vg.Length(0)
	for _, e := range names {
		band = max(band, legend.TextStyle.Width(e))
	}
	band += legend.ThumbnailWidth + 3*legend.Padding + vg.Points(16)
	img := vgimg.New(width, height)
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -band, 0, 0))
	title := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	legend.Draw(draw.Crop(dc, width-band+vg.Points(8), 0, 0, -title-vg.Points(8)))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sizeTicks marks the sizes measured, 100000 written 100k.
type sizeTicks []int

// Ticks returns a tick at each size.
func (t sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, n := range t {
		if float64(n) < lo || float64(n) > hi {
			continue
		}
		label := strconv.Itoa(n)
		if n >= 1000 && n%1000 == 0 {
			label = strconv.Itoa(n/1000) + "k"
		}
		out = append(out, plot.Tick{Value: float64(n), Label: label})
	}
	return out
}

// logTicks marks 1, 2 and 5 times each power of ten, labelled.
type logTicks struct{}

// Ticks returns the ticks between lo and hi.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= lo && v <= hi {
				out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
			}
		}
	}
	return out
}
