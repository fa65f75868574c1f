//! SVG charts for the report, drawn with plotters' SVG backend (text is
//! SVG `<text>`, so no font files are needed anywhere).

use plotters::coord::Shift;
use plotters::prelude::*;

/// One line of a line chart.
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 400;

fn palette(i: usize) -> RGBColor {
    const COLOURS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    COLOURS[i % COLOURS.len()]
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

/// A line chart; `log` sets logarithmic x and y axes.
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log: (bool, bool),
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let _ = draw_lines(&root, title, x_desc, y_desc, series, log);
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
            for (i, s) in series.iter().enumerate() {
                let colour = palette(i);
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

/// Horizontal bars, one per label, values labelled at the bar's end.
pub fn bars(title: &str, x_desc: &str, bars: &[(String, f64)]) -> String {
    let mut svg = String::new();
    {
        let height = (80 + 28 * bars.len() as u32).max(160);
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        let _ = draw_bars(&root, title, x_desc, bars);
        let _ = root.present();
    }
    svg
}

fn draw_bars<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    x_desc: &str,
    bars: &[(String, f64)],
) -> Result<(), Box<dyn std::error::Error + 'a>> {
    root.fill(&WHITE)?;
    let max = bars
        .iter()
        .map(|b| b.1)
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
    let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
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
    for (i, (_, value)) in bars.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y + 0.15), (*value, y + 0.85)],
            palette(0).filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            short(*value),
            (*value + max * 0.01, y + 0.62),
            ("sans-serif", 13),
        )))?;
    }
    Ok(())
}

/// A compact number: 1.2M, 35k, 0.42, 1,234.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.001 {
        format!("{v:.3}")
    } else {
        format!("{v:.1e}")
    }
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
                points: vec![(1.0, 1e-5), (1e7, 3.0)],
            }],
            (true, true),
        );
        assert!(log.contains("<polyline"));
        let b = bars(
            "ns/msg",
            "ns",
            &[("busy-spin".into(), 63.0), ("actor".into(), 60.0)],
        );
        assert!(b.contains("busy-spin") && b.matches("<rect").count() >= 2);
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(short(1_500_000.0), "1.5M");
        assert_eq!(short(35_000.0), "35k");
        assert_eq!(short(0.25), "0.250");
        assert_eq!(short(62.84), "62.8");
    }
}
