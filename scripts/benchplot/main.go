// Command benchplot draws the curves of the scale benchmarks: it reads the
// output of `go test -bench` on standard input, takes every line of a
// benchmark whose name holds bots=N and reports the metric asked for, and
// writes a PNG with one line per benchmark (the name less its bots=N): the
// metric against the number of bots, on a logarithmic axis. It uses the
// standard library only; the numbers on the axes are drawn with a small
// built-in font, and the lines are numbered in the order the legend it
// prints on standard output gives.
//
//	go test -run '^$' -bench AtScale ./bot/ | tee bench.txt
//	go run ./scripts/benchplot -metric x-floor -goal 1.5 -o docs/scale.png < bench.txt
//
// With -count, each point is the median of the runs.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	metric := flag.String("metric", "x-floor", "the metric to plot, as the benchmarks report it (ns/op, x-floor, ms/start, …)")
	out := flag.String("o", "scale.png", "the PNG file to write")
	goal := flag.Float64("goal", 0, "draw the goal as a dashed line at this value (0: none)")
	match := flag.String("match", "", "plot only the benchmarks whose name matches this regular expression")
	flag.Parse()
	var keep *regexp.Regexp
	if *match != "" {
		var err error
		if keep, err = regexp.Compile(*match); err != nil {
			log.Fatalf("benchplot: -match: %v", err)
		}
	}
	series, err := parse(os.Stdin, *metric, keep)
	if err != nil {
		log.Fatalf("benchplot: %v", err)
	}
	if len(series) == 0 {
		log.Fatalf("benchplot: no benchmark with bots=N reports %s", *metric)
	}
	img := draw(series, *goal)
	f, err := os.Create(*out)
	if err != nil {
		log.Fatalf("benchplot: %v", err)
	}
	if err := png.Encode(f, img); err != nil {
		log.Fatalf("benchplot: write %s: %v", *out, err)
	}
	if err := f.Close(); err != nil {
		log.Fatalf("benchplot: write %s: %v", *out, err)
	}
	for i, s := range series {
		fmt.Printf("%d  %s:", i+1, s.name)
		for _, p := range s.points {
			fmt.Printf("  %d → %.4g", p.bots, p.value)
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
	bots  int
	value float64
}

var botsRe = regexp.MustCompile(`(^|/)bots=(\d+)`)

// parse reads benchmark lines and gives a series per benchmark name (less
// bots=N and the -P suffix), its points the median of the values at each N.
func parse(r io.Reader, metric string, keep *regexp.Regexp) ([]series, error) {
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
		m := botsRe.FindStringSubmatch(name)
		if m == nil || (keep != nil && !keep.MatchString(name)) {
			continue
		}
		bots, _ := strconv.Atoi(m[2])
		name = strings.Trim(botsRe.ReplaceAllString(name, "$1"), "/")
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
			values[name][bots] = append(values[name][bots], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []series
	for _, name := range order {
		s := series{name: name}
		for bots, vs := range values[name] {
			s.points = append(s.points, point{bots, median(vs)})
		}
		slices.SortFunc(s.points, func(a, b point) int { return a.bots - b.bots })
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

const (
	width, height          = 720, 420
	left, right, top, base = 70, 20, 20, 40 // margins
)

var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xff, 0x7f, 0x0e, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

// draw plots the series: bots on a log axis, the metric on a linear one
// from zero.
func draw(all []series, goal float64) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill(img, img.Rect, color.RGBA{0xff, 0xff, 0xff, 0xff})
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), goal
	var ticks []int
	for _, s := range all {
		for _, p := range s.points {
			minX = math.Min(minX, math.Log10(float64(p.bots)))
			maxX = math.Max(maxX, math.Log10(float64(p.bots)))
			maxY = math.Max(maxY, p.value)
			if !slices.Contains(ticks, p.bots) {
				ticks = append(ticks, p.bots)
			}
		}
	}
	if maxX == minX {
		minX, maxX = minX-0.5, maxX+0.5
	}
	maxY = niceCeil(maxY * 1.1)
	x := func(bots int) int {
		return left + int(float64(width-left-right)*(math.Log10(float64(bots))-minX)/(maxX-minX))
	}
	y := func(v float64) int { return height - base - int(float64(height-top-base)*v/maxY) }
	grey, black := color.RGBA{0xdd, 0xdd, 0xdd, 0xff}, color.RGBA{0, 0, 0, 0xff}
	for i := 0; i <= 5; i++ {
		v := maxY * float64(i) / 5
		line(img, left, y(v), width-right, y(v), grey, 1)
		label := strconv.FormatFloat(v, 'g', 3, 64)
		text(img, left-8-textWidth(label), y(v)-3, label, black)
	}
	for _, t := range ticks {
		line(img, x(t), top, x(t), height-base, grey, 1)
		label := strconv.Itoa(t)
		if t%1000 == 0 {
			label = strconv.Itoa(t/1000) + "k"
		}
		text(img, x(t)-textWidth(label)/2, height-base+10, label, black)
	}
	line(img, left, height-base, width-right, height-base, black, 1)
	line(img, left, top, left, height-base, black, 1)
	if goal > 0 {
		for gx := left; gx < width-right; gx += 12 {
			line(img, gx, y(goal), min(gx+6, width-right), y(goal), black, 2)
		}
	}
	for i, s := range all {
		c := palette[i%len(palette)]
		for j, p := range s.points {
			fill(img, image.Rect(x(p.bots)-3, y(p.value)-3, x(p.bots)+4, y(p.value)+4), c)
			if j > 0 {
				q := s.points[j-1]
				line(img, x(q.bots), y(q.value), x(p.bots), y(p.value), c, 2)
			}
		}
		last := s.points[len(s.points)-1]
		text(img, x(last.bots)-14, y(last.value)-12-4*(i%2), strconv.Itoa(i+1), c)
	}
	return img
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Rect)
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			img.SetRGBA(px, py, c)
		}
	}
}

// line draws from (x0, y0) to (x1, y1), w pixels thick.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, w int) {
	steps := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= steps; i++ {
		px := x0 + (x1-x0)*i/steps
		py := y0 + (y1-y0)*i/steps
		fill(img, image.Rect(px, py, px+w, py+w), c)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// glyphs is a 3×5 font for the numbers on the axes: each row is three
// bits, the high bit on the left.
var glyphs = map[rune][5]uint8{
	'0': {7, 5, 5, 5, 7}, '1': {2, 6, 2, 2, 7}, '2': {7, 1, 7, 4, 7}, '3': {7, 1, 7, 1, 7}, '4': {5, 5, 7, 1, 1},
	'5': {7, 4, 7, 1, 7}, '6': {7, 4, 7, 5, 7}, '7': {7, 1, 1, 1, 1}, '8': {7, 5, 7, 5, 7}, '9': {7, 5, 7, 1, 7},
	'.': {0, 0, 0, 0, 2}, 'k': {4, 5, 6, 5, 5}, 'e': {7, 5, 7, 4, 7}, '+': {0, 2, 7, 2, 0}, '-': {0, 0, 7, 0, 0},
}

const scale = 2 // each font pixel is 2×2

func textWidth(s string) int { return len(s) * 4 * scale }

func text(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for i, r := range s {
		g, ok := glyphs[r]
		if !ok {
			continue
		}
		for row, bits := range g {
			for col := range 3 {
				if bits&(4>>col) != 0 {
					px, py := x+(i*4+col)*scale, y+row*scale
					fill(img, image.Rect(px, py, px+scale, py+scale), c)
				}
			}
		}
	}
}
