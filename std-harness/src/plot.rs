//! Figures with plotters, each written as SVG and PNG: line charts (with ±sd bands) and
//! density heat maps, in panels side by side.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ab_glyph::FontRef;
use plotters::coord::Shift;
use plotters::prelude::*;

mod png;
use png::PngBackend;

/// One line, with an optional band (lower, upper) around it.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// x values.
    pub x: Vec<f64>,
    /// y values.
    pub y: Vec<f64>,
    /// Optional band: lower and upper y per x.
    pub band: Option<(Vec<f64>, Vec<f64>)>,
    /// Draw thick (for an average over thin lines).
    pub thick: bool,
    /// Draw dashed as a horizontal reference (only `y[0]` is used, over the whole x range).
    pub reference: bool,
}

/// One panel of line series.
#[derive(Debug, Clone, Default)]
pub struct Panel {
    /// Title.
    pub title: String,
    /// x axis label.
    pub x_label: String,
    /// y axis label.
    pub y_label: String,
    /// Plot log₁₀ of x.
    pub log_x: bool,
    /// Plot log₁₀ of y.
    pub log_y: bool,
    /// The lines.
    pub series: Vec<Series>,
    /// Names of the x positions 0, 1, 2, … when x is a category (parameters, say): the
    /// ticks show the names and the series are drawn as markers, not lines.
    pub x_names: Vec<String>,
}

/// One heat-map panel of a density on a regular grid.
#[derive(Debug, Clone)]
pub struct Heat {
    /// Title.
    pub title: String,
    /// x range.
    pub x: (f64, f64),
    /// y range.
    pub y: (f64, f64),
    /// Row-major `ny × nx` values (row 0 at the lowest y).
    pub z: Vec<f64>,
    /// Cells along x.
    pub nx: usize,
    /// Cells along y.
    pub ny: usize,
    /// Axis labels.
    pub labels: (String, String),
    /// What the colour shows (the colour bar's label).
    pub z_label: String,
}

/// Ten distinguishable colours (matplotlib's tab10 order, with black for the tenth).
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(0, 0, 0),
];

/// Registers a system TrueType font for text (DejaVu Sans, or `$SGLD_FONT`) and
/// returns it for the PNG backend.
fn ensure_font() -> Result<FontRef<'static>, String> {
    static FONT: OnceLock<Result<FontRef<'static>, String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let candidates = std::env::var("SGLD_FONT").into_iter().map(PathBuf::from).chain(
            [
                "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                "/usr/share/fonts/TTF/DejaVuSans.ttf",
                "/usr/share/fonts/dejavu/DejaVuSans.ttf",
                "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
                "/System/Library/Fonts/Supplemental/Arial.ttf",
                "C:\\Windows\\Fonts\\arial.ttf",
            ]
            .map(PathBuf::from),
        );
        for p in candidates {
            if let Ok(bytes) = std::fs::read(&p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if let Ok(font) = FontRef::try_from_slice(bytes)
                    && plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
                {
                    return Ok(font);
                }
            }
        }
        Err("no TrueType font found for figure text: install fonts-dejavu-core or set SGLD_FONT to a .ttf file".into())
    })
    .clone()
}

fn tr(v: f64, log: bool) -> f64 {
    if log { v.log10() } else { v }
}

fn range(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 * (1.0 + lo.abs()) {
        return (lo - 0.5, hi + 0.5);
    }
    let pad = 0.04 * (hi - lo);
    (lo - pad, hi + pad)
}

/// A tick label as a person writes it: `2000`, not `2000.0`; `0.15`; `1e-5`.
fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        let s = format!("{v:.1e}");
        s.replace(".0e", "e")
    } else if (v - v.round()).abs() < 1e-9 * a.max(1.0) {
        format!("{v:.0}")
    } else {
        // Four significant digits, trailing zeros dropped.
        let digits = (3 - a.log10().floor() as i32).clamp(0, 8) as usize;
        let s = format!("{v:.digits$}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Ticks for an axis: at most `max` labels, and on whole numbers only when every value
/// plotted on it is one and it spans few of them (an axis that counts).
fn axis_ticks(vals: impl Iterator<Item = f64>, lo: f64, hi: f64) -> (usize, bool) {
    let mut integer = true;
    for v in vals.filter(|v| v.is_finite()) {
        integer &= v == v.round();
    }
    let span = hi - lo;
    if integer && span <= 12.0 {
        (span.ceil().max(1.0) as usize + 1, true)
    } else {
        (6, false)
    }
}

/// Where each legend entry goes in a strip `w` pixels wide (entries flow left to right
/// and wrap, each as wide as its label), and the strip's height.
fn legend_layout(w: u32, labels: &[&str]) -> (Vec<(i32, i32)>, u32) {
    if labels.is_empty() {
        return (vec![], 0);
    }
    let (left, right) = (40, w as i32 - 10);
    let (mut x, mut row) = (left, 0);
    let mut at = Vec::with_capacity(labels.len());
    for l in labels {
        // DejaVu Sans at 13 px: about 7.5 px a character; the swatch and a gap: 46.
        let width = 46 + (7.5 * l.chars().count() as f64) as i32;
        if x > left && x + width > right {
            (x, row) = (left, row + 1);
        }
        at.push((x, 14 + 20 * row));
        x += width;
    }
    (at, 8 + 20 * (row as u32 + 1))
}

/// The legend in its own strip below the plot, so that it never hides the data: a
/// line (or a patch, for a band alone) in the series' colour and its label.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, RGBColor, bool)],
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let (w, _) = area.dim_in_pixel();
    let labels: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
    let (at, _) = legend_layout(w, &labels);
    for ((label, color, band), &(x, y)) in entries.iter().zip(&at) {
        if *band {
            area.draw(&Rectangle::new(
                [(x, y - 6), (x + 22, y + 6)],
                color.mix(0.25).filled(),
            ))
            .map_err(e)?;
        } else {
            area.draw(&PathElement::new(
                vec![(x, y), (x + 22, y)],
                color.stroke_width(3),
            ))
            .map_err(e)?;
        }
        area.draw(&Text::new(
            label.clone(),
            (x + 28, y - 8),
            ("sans-serif", 13),
        ))
        .map_err(e)?;
    }
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let entries: Vec<(String, RGBColor, bool)> = p
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.label.is_empty())
        .map(|(k, s)| {
            (
                s.label.clone(),
                COLORS[k % COLORS.len()],
                s.y.is_empty() && s.band.is_some(),
            )
        })
        .collect();
    let (w, h) = area.dim_in_pixel();
    let labels: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
    let (_, legend_h) = legend_layout(w, &labels);
    let (area, legend) = area.split_vertically(h.saturating_sub(legend_h));
    draw_legend(&legend, &entries)?;
    let xs = p
        .series
        .iter()
        .filter(|s| !s.reference)
        .flat_map(|s| s.x.iter().map(|&v| tr(v, p.log_x)));
    let (x0, x1) = if p.x_names.is_empty() {
        range(xs)
    } else {
        (-0.5, p.x_names.len() as f64 - 0.5)
    };
    let ys = p.series.iter().flat_map(|s| {
        let band = s
            .band
            .iter()
            .flat_map(|(l, u)| l.iter().chain(u.iter()).copied());
        s.y.iter()
            .copied()
            .chain(band)
            .map(|v| tr(v, p.log_y))
            .collect::<Vec<_>>()
    });
    let (y0, y1) = range(ys);
    let (x_labels, x_int) = axis_ticks(
        p.series
            .iter()
            .filter(|s| !s.reference)
            .flat_map(|s| s.x.iter().map(|&v| tr(v, p.log_x))),
        x0,
        x1,
    );
    let lx = if p.log_x {
        format!("log10 {}", p.x_label)
    } else {
        p.x_label.clone()
    };
    let ly = if p.log_y {
        format!("log10 {}", p.y_label)
    } else {
        p.y_label.clone()
    };
    let mut chart = ChartBuilder::on(&area)
        .caption(&p.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    // Values within 10⁻⁹ of the span from zero are zero (not -2.2e-16).
    let snap = |v: f64, span: f64| if v.abs() < 1e-9 * span { 0.0 } else { v };
    let names = &p.x_names;
    let x_fmt = move |v: &f64| {
        if !names.is_empty() {
            let i = v.round();
            match names.get(i as usize) {
                Some(n) if (v - i).abs() < 1e-6 && i >= 0.0 => n.clone(),
                _ => String::new(),
            }
        } else if x_int && *v != v.round() {
            String::new()
        } else {
            tick(snap(*v, x1 - x0))
        }
    };
    let y_fmt = move |v: &f64| tick(snap(*v, y1 - y0));
    let x_labels = if names.is_empty() {
        x_labels
    } else {
        names.len().min(12)
    };
    chart
        .configure_mesh()
        .x_desc(lx)
        .y_desc(ly)
        .x_labels(x_labels)
        .y_labels(6)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(e)?;
    for (k, s) in p.series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        if let Some((lo, hi)) = &s.band {
            let pts: Vec<(f64, f64)> =
                s.x.iter()
                    .zip(lo)
                    .map(|(&x, &l)| (tr(x, p.log_x), tr(l, p.log_y)))
                    .chain(
                        s.x.iter()
                            .zip(hi)
                            .rev()
                            .map(|(&x, &h)| (tr(x, p.log_x), tr(h, p.log_y))),
                    )
                    .filter(|(a, b)| a.is_finite() && b.is_finite())
                    .collect();
            chart
                .draw_series(std::iter::once(Polygon::new(pts, color.mix(0.18))))
                .map_err(e)?;
        }
        let width = if s.thick { 3 } else { 1 };
        let style = ShapeStyle::from(color).stroke_width(width);
        if s.reference {
            let y = tr(s.y.first().copied().unwrap_or(f64::NAN), p.log_y);
            chart
                .draw_series(DashedLineSeries::new(vec![(x0, y), (x1, y)], 8, 5, style))
                .map_err(e)?;
        } else {
            let pts: Vec<(f64, f64)> =
                s.x.iter()
                    .zip(&s.y)
                    .map(|(&x, &y)| (tr(x, p.log_x), tr(y, p.log_y)))
                    .filter(|(a, b)| a.is_finite() && b.is_finite())
                    .collect();
            if names.is_empty() {
                chart.draw_series(LineSeries::new(pts, style)).map_err(e)?;
            } else {
                chart
                    .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, style.filled())))
                    .map_err(e)?;
            }
        }
    }
    Ok(())
}

/// A colour from white through blue to dark red for `t ∈ [0, 1]`.
fn heat_color(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let stops = [
        (1.0, 1.0, 1.0),
        (0.55, 0.75, 0.95),
        (0.15, 0.35, 0.75),
        (0.85, 0.2, 0.15),
        (0.45, 0.0, 0.0),
    ];
    let s = t * (stops.len() - 1) as f64;
    let i = (s.floor() as usize).min(stops.len() - 2);
    let f = s - i as f64;
    let (a, b) = (stops[i], stops[i + 1]);
    let mix = |x: f64, y: f64| ((x + (y - x) * f) * 255.0).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// The colour bar of a heat map: the colours from 0 to the map's largest value `max`,
/// with its ticks, aligned with the map's plotting area.
fn draw_color_bar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    max: f64,
    label: &str,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let mut bar = ChartBuilder::on(area)
        .margin_top(12 + 30)
        .margin_bottom(12 + 40)
        .margin_right(8)
        .y_label_area_size(0)
        .right_y_label_area_size(64)
        .build_cartesian_2d(0.0..1.0, 0.0..max)
        .map_err(e)?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .set_all_tick_mark_size(4)
        .y_desc(label)
        .y_labels(5)
        .y_label_formatter(&|v| tick(*v))
        .label_style(("sans-serif", 12))
        .draw()
        .map_err(e)?;
    let steps = 64;
    bar.draw_series((0..steps).map(|i| {
        let (a, b) = (i as f64 / steps as f64, (i + 1) as f64 / steps as f64);
        Rectangle::new(
            [(0.0, a * max), (1.0, b * max)],
            heat_color((a + b) / 2.0).filled(),
        )
    }))
    .map_err(e)?;
    Ok(())
}

fn draw_heat<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, h: &Heat) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let max = h.z.iter().copied().fold(0.0f64, f64::max).max(1e-300);
    let (w, _) = area.dim_in_pixel();
    let (area, bar) = area.split_horizontally(w.saturating_sub(96));
    draw_color_bar(&bar, max, &h.z_label)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(&h.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(h.x.0..h.x.1, h.y.0..h.y.1)
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(&h.labels.0)
        .y_desc(&h.labels.1)
        .x_labels(6)
        .y_labels(6)
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(e)?;
    let (dx, dy) = ((h.x.1 - h.x.0) / h.nx as f64, (h.y.1 - h.y.0) / h.ny as f64);
    chart
        .draw_series(
            (0..h.ny)
                .flat_map(|r| (0..h.nx).map(move |c| (r, c)))
                .map(|(r, c)| {
                    let x = h.x.0 + c as f64 * dx;
                    let y = h.y.0 + r as f64 * dy;
                    Rectangle::new(
                        [(x, y), (x + dx, y + dy)],
                        heat_color(h.z[r * h.nx + c] / max).filled(),
                    )
                }),
        )
        .map_err(e)?;
    Ok(())
}

/// Draws panel `k` into its area.
type PanelFn<'a, DB> = &'a dyn Fn(&DrawingArea<DB, Shift>, usize) -> Result<(), String>;

fn render<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    n: usize,
    f: PanelFn<'_, DB>,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let areas = root.split_evenly((1, n.max(1)));
    for (k, a) in areas.iter().enumerate() {
        f(a, k)?;
    }
    root.present().map_err(|e| e.to_string())
}

/// Writes `stem.svg` and `stem.png` with `panels` side by side.
pub fn line_chart(stem: &Path, panels: &[Panel]) -> Result<(), String> {
    let font = ensure_font()?;
    let size = (520 * panels.len().max(1) as u32, 420);
    let svg = stem.with_extension("svg");
    render(
        SVGBackend::new(&svg, size).into_drawing_area(),
        panels.len(),
        &|a, k| draw_panel(a, &panels[k]),
    )?;
    let png = stem.with_extension("png");
    render(
        PngBackend::new(&png, size, font).into_drawing_area(),
        panels.len(),
        &|a, k| draw_panel(a, &panels[k]),
    )
}

/// Writes `stem.svg` and `stem.png` with heat maps side by side.
pub fn heat_maps(stem: &Path, panels: &[Heat]) -> Result<(), String> {
    let font = ensure_font()?;
    let size = (560 * panels.len().max(1) as u32, 440);
    let svg = stem.with_extension("svg");
    render(
        SVGBackend::new(&svg, size).into_drawing_area(),
        panels.len(),
        &|a, k| draw_heat(a, &panels[k]),
    )?;
    let png = stem.with_extension("png");
    render(
        PngBackend::new(&png, size, font).into_drawing_area(),
        panels.len(),
        &|a, k| draw_heat(a, &panels[k]),
    )
}

/// Writes a CSV of named columns (equal lengths).
pub fn write_csv(path: &Path, columns: &[(&str, &[f64])]) -> Result<(), String> {
    let mut w = csv::Writer::from_path(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let io = |e: csv::Error| format!("cannot write {}: {e}", path.display());
    w.write_record(columns.iter().map(|c| c.0)).map_err(io)?;
    let n = columns.iter().map(|c| c.1.len()).max().unwrap_or(0);
    for i in 0..n {
        w.write_record(
            columns
                .iter()
                .map(|c| c.1.get(i).map_or(String::new(), |v| v.to_string())),
        )
        .map_err(io)?;
    }
    w.flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
