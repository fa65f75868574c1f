//! SVG charts for the report, drawn with plotters' SVG backend (text is
//! SVG `<text>`, so no font files are needed anywhere).
//!
//! Every mark is coloured by the runtime of its row (`params.runtime`):
//! troupe blue, the baselines orange, Pekko green, anything else grey, the
//! same in every chart; series of one runtime differ by shade. Every chart
//! has a legend.

use std::collections::BTreeMap;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::shared::short;

/// One line of a line chart.
pub struct Series {
    /// Legend label.
    pub label: String,
    /// The runtime of the row(s) it comes from, which sets its colour.
    pub runtime: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// One bar of a bar chart.
pub struct Bar {
    /// The label beside it (the row's variant).
    pub label: String,
    /// The runtime of its row, which sets its colour.
    pub runtime: String,
    /// Its length.
    pub value: f64,
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 400;

/// The colour of a runtime, the same in every chart.
pub fn runtime_colour(runtime: &str) -> RGBColor {
    match runtime {
        "troupe" => RGBColor(31, 119, 180),
        "baseline" => RGBColor(255, 127, 14),
        "pekko" => RGBColor(44, 160, 44),
        // The Rust peers: purple, brown, pink.
        "kameo" => RGBColor(148, 103, 189),
        "ractor" => RGBColor(140, 86, 75),
        "actix" => RGBColor(227, 119, 194),
        _ => RGBColor(127, 127, 127),
    }
}

/// The `k`-th shade of a runtime's colour: the colour itself, then
/// alternately darker and lighter, so that lines of one runtime stay in
/// its hue and still tell apart.
fn shade(colour: RGBColor, k: usize) -> RGBColor {
    if k == 0 {
        return colour;
    }
    let step = (0.3 * k.div_ceil(2) as f64).min(0.8);
    let mix = |c: u8| -> u8 {
        let c = f64::from(c);
        let target = if k % 2 == 1 { 0.0 } else { 255.0 };
        (c + (target - c) * step).round() as u8
    };
    RGBColor(mix(colour.0), mix(colour.1), mix(colour.2))
}

/// The colour of each series: its runtime's, shaded by how many series of
/// that runtime came before it.
fn series_colours(series: &[Series]) -> Vec<RGBColor> {
    series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let before = series[..i]
                .iter()
                .filter(|o| o.runtime == s.runtime)
                .count();
            shade(runtime_colour(&s.runtime), before)
        })
        .collect()
}

fn bounds(series: &[Series], log: (bool, bool)) -> ((f64, f64), (f64, f64)) {
    let pts = || series.iter().flat_map(|s| s.points.iter());
    let fold = |f: fn(&(f64, f64)) -> f64, positive: bool| {
        pts()
            .map(f)
            .filter(|v| v.is_finite() && (!positive || *v > 0.0))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let pad = |(lo, hi): (f64, f64), log: bool| {
        if !lo.is_finite() {
            return if log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if log {
            (lo / 1.5, hi * 1.5)
        } else {
            let lo = lo.min(0.0);
            (lo, if hi > lo { hi * 1.08 } else { lo + 1.0 })
        }
    };
    (
        pad(fold(|p| p.0, log.0), log.0),
        pad(fold(|p| p.1, log.1), log.1),
    )
}

/// `(label, runtime) -> points` as line-chart series, each's points sorted
/// by x.
pub fn series(by: BTreeMap<(String, String), Vec<(f64, f64)>>) -> Vec<Series> {
    by.into_iter()
        .map(|((label, runtime), mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label,
                runtime,
                points,
            }
        })
        .collect()
}

/// A line chart; `log` sets logarithmic x and y axes.
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log: (bool, bool),
) -> String {
    svg((WIDTH, HEIGHT), |root| {
        let _ = draw_lines(root, title, x_desc, y_desc, series, log);
    })
}

/// A chart of `size` drawn by `draw` as SVG text; a drawing error leaves the
/// chart as far as it got (a report is not worth failing for a chart).
fn svg(size: (u32, u32), draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>)) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(&root);
        let _ = root.present();
    }
    svg
}

fn draw_lines<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log: (bool, bool),
) -> Result<(), Box<dyn std::error::Error + 'a>> {
    root.fill(&WHITE)?;
    let ((x0, x1), (y0, y1)) = bounds(series, log);
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    // The four axis combinations are different types in plotters.
    macro_rules! plot {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .y_label_formatter(&|v| short(*v))
                .x_label_formatter(&|v| short(*v))
                .draw()?;
            let colours = series_colours(series);
            for (s, &colour) in series.iter().zip(&colours) {
                let pts: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .copied()
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))?
                    .label(s.label.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                    });
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .draw()?;
        }};
    }
    match log {
        (false, false) => plot!(builder.build_cartesian_2d(x0..x1, y0..y1)?),
        (true, false) => plot!(builder.build_cartesian_2d((x0..x1).log_scale(), y0..y1)?),
        (false, true) => plot!(builder.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?),
        (true, true) => {
            plot!(builder.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?)
        }
    }
    Ok(())
}

/// Horizontal bars, one per label, values labelled at the bar's end,
/// coloured by runtime with a legend of the runtimes.
pub fn bars(title: &str, x_desc: &str, bars: &[Bar]) -> String {
    let height = (80 + 28 * bars.len() as u32).max(160);
    svg((WIDTH, height), |root| {
        let _ = draw_bars(root, title, x_desc, bars);
    })
}

fn draw_bars<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    x_desc: &str,
    bars: &[Bar],
) -> Result<(), Box<dyn std::error::Error + 'a>> {
    root.fill(&WHITE)?;
    let max = bars
        .iter()
        .map(|b| b.value)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let n = bars.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(200)
        .build_cartesian_2d(0.0..max * 1.18, 0.0..n as f64)?;
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(x_desc)
        .x_label_formatter(&|v| short(*v))
        .y_labels(n * 2 + 1)
        .y_label_formatter(&|y| {
            // Labels sit at the middle of each bar (k + 0.5), top to bottom.
            let k = (y - 0.5).round();
            if (y - 0.5 - k).abs() < 0.01 && k >= 0.0 && (k as usize) < labels.len() {
                labels[labels.len() - 1 - k as usize].clone()
            } else {
                String::new()
            }
        })
        .draw()?;
    let mut legend: Vec<&str> = Vec::new();
    for (i, bar) in bars.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        let colour = runtime_colour(&bar.runtime);
        let drawn = chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y + 0.15), (bar.value, y + 0.85)],
            colour.filled(),
        )))?;
        // The first bar of each runtime carries the legend entry.
        if !legend.contains(&bar.runtime.as_str()) {
            legend.push(&bar.runtime);
            drawn.label(bar.runtime.as_str()).legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled())
            });
        }
        chart.draw_series(std::iter::once(Text::new(
            short(bar.value),
            (bar.value + max * 0.01, y + 0.62),
            ("sans-serif", 13),
        )))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_with_their_labels() {
        let svg = lines(
            "orders/s",
            "clients",
            "orders/s",
            &[Series {
                label: "one-way/off".into(),
                runtime: "troupe".into(),
                points: vec![(1.0, 1.2e6), (10.0, 1.6e6), (40.0, 1.5e6)],
            }],
            (false, false),
        );
        assert!(
            svg.starts_with("<svg") && svg.contains("one-way/off") && svg.contains("<polyline")
        );
        let log = lines(
            "t",
            "n",
            "s",
            &[Series {
                label: "a".into(),
                runtime: "baseline".into(),
                points: vec![(1.0, 1e-5), (1e7, 3.0)],
            }],
            (true, true),
        );
        assert!(log.contains("<polyline"));
        let bar = |label: &str, runtime: &str, value| Bar {
            label: label.into(),
            runtime: runtime.into(),
            value,
        };
        let b = bars(
            "ns/msg",
            "ns",
            &[
                bar("busy-spin", "baseline", 63.0),
                bar("actor", "troupe", 60.0),
                bar("actor-2", "troupe", 61.0),
            ],
        );
        assert!(b.contains("busy-spin") && b.matches("<rect").count() >= 3);
    }

    /// The fill colour of an RGB colour in plotters' SVG output.
    fn fill(c: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    #[test]
    fn each_runtime_has_its_colour_everywhere_and_a_legend() {
        let bar = |label: &str, runtime: &str| Bar {
            label: label.into(),
            runtime: runtime.into(),
            value: 10.0,
        };
        let svg = bars(
            "t",
            "x",
            &[bar("a", "troupe"), bar("b", "baseline"), bar("c", "pekko")],
        );
        for (runtime, name) in [
            ("troupe", "troupe"),
            ("baseline", "baseline"),
            ("pekko", "pekko"),
        ] {
            let colour = fill(runtime_colour(runtime));
            assert!(svg.contains(&colour), "{runtime}: {colour} missing");
            assert!(
                svg.contains(&format!(">\n{name}\n</text>")),
                "legend entry {name} missing"
            );
        }
        // Lines of one runtime share its hue, each in its own shade; the
        // first of each runtime has the runtime's own colour.
        let series = |label: &str, runtime: &str| Series {
            label: label.into(),
            runtime: runtime.into(),
            points: vec![(1.0, 1.0), (2.0, 2.0)],
        };
        let all = [
            series("x", "troupe"),
            series("y", "troupe"),
            series("z", "pekko"),
        ];
        let colours = series_colours(&all);
        assert_eq!(colours[0], runtime_colour("troupe"));
        assert_ne!(colours[1], colours[0]);
        assert_eq!(colours[2], runtime_colour("pekko"));
        let svg = lines("t", "x", "y", &all, (false, false));
        assert!(svg.contains(&fill(runtime_colour("pekko"))) && svg.contains(">\ny\n</text>"));
    }
}
