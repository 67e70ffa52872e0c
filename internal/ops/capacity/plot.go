package capacity

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Plot draws the drain curve of r (messages waiting, and retrying when any
// failed) beside the model's straight line, and writes it to file as a PNG.
func Plot(file string, m Model, r SimResult) error {
	if ext := strings.ToLower(filepath.Ext(file)); ext != ".png" {
		return fmt.Errorf("plot %s: only .png files are written", file)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Backlog %.0f, arrival %g/s, rate %g/s", m.Backlog, m.Arrival, m.Rate)
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "messages"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())

	waiting := make(plotter.XYs, len(r.Curve))
	retrying := make(plotter.XYs, len(r.Curve))
	anyRetrying := false
	for i, pt := range r.Curve {
		waiting[i] = plotter.XY{X: pt.Seconds, Y: float64(pt.Waiting)}
		retrying[i] = plotter.XY{X: pt.Seconds, Y: float64(pt.Retrying)}
		anyRetrying = anyRetrying || pt.Retrying > 0
	}
	if err := addLine(p, waiting, "waiting (simulated)", color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, nil); err != nil {
		return err
	}
	if anyRetrying {
		if err := addLine(p, retrying, "retrying (simulated)", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, nil); err != nil {
			return err
		}
	}
	if model := modelLine(m, r.Horizon.Seconds()); len(model) > 0 {
		if err := addLine(p, model, "model: backlog − (rate − arrival)·t", color.Gray{Y: 0x60}, []vg.Length{vg.Points(4), vg.Points(3)}); err != nil {
			return err
		}
	}
	p.Legend.Top = true
	if err := p.Save(20*vg.Centimeter, 11*vg.Centimeter, file); err != nil {
		return fmt.Errorf("plot %s: %w", file, err)
	}
	return nil
}

func addLine(p *plot.Plot, xys plotter.XYs, name string, c color.Color, dashes []vg.Length) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	l.Dashes = dashes
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// modelLine is the model's backlog over time: a straight line from the
// backlog down to zero at the drain time, or flat/rising when it never
// drains, up to horizon seconds.
func modelLine(m Model, horizon float64) plotter.XYs {
	if horizon <= 0 {
		return nil
	}
	if d, ok := m.DrainTime(); ok {
		end := min(d.Seconds(), horizon)
		return plotter.XYs{{X: 0, Y: m.Backlog}, {X: end, Y: m.Backlog - m.NetRate()*end}}
	}
	return plotter.XYs{{X: 0, Y: m.Backlog}, {X: horizon, Y: m.Backlog - m.NetRate()*horizon}}
}
