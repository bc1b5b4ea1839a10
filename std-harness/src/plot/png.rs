//! The PNG backend: plotters' bitmap backend with text drawn glyph by glyph at
//! its outline's own left edge.
//!
//! plotters 0.3.7 places each glyph's outline at the pen position and drops the
//! glyph's left side bearing, so narrow letters drift against wide ones
//! ("th e data"; plotters-rs/plotters#576). The SVG figures leave text to the
//! viewer and are unaffected. This backend hands every operation to
//! [`BitMapBackend`] except text, which it lays out with the same font, advances
//! and kerning, placing each outline at `pen + bounds.min`.

use ab_glyph::{Font, FontRef, ScaleFont};
use plotters::prelude::BitMapBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};

/// [`BitMapBackend`] with text placed by each glyph's bounds.
pub struct PngBackend<'a> {
    inner: BitMapBackend<'a>,
    font: FontRef<'static>,
}

impl<'a> PngBackend<'a> {
    /// Draws into `path` at `size` pixels, with text in `font`.
    pub fn new(path: &'a std::path::Path, size: (u32, u32), font: FontRef<'static>) -> Self {
        Self {
            inner: BitMapBackend::new(path, size),
            font,
        }
    }
}

/// Calls `pixel(x, y, coverage)` for each pixel of `text` set at `size` pixels,
/// the pen starting at x = 0 and the baseline at y = size / 2 (where plotters
/// puts it, so the layout boxes it computes still hold).
fn rasterise(font: &FontRef<'_>, size: f32, text: &str, mut pixel: impl FnMut(i32, i32, f32)) {
    let scaled = font.as_scaled(size);
    let mut pen = 0f32;
    let mut prev = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            pen += scaled.kern(p, id);
        }
        prev = Some(id);
        let glyph = id.with_scale_and_position(size, ab_glyph::point(pen, size / 2.0));
        if let Some(outline) = scaled.outline_glyph(glyph) {
            let bounds = outline.px_bounds();
            let (x0, y0) = (bounds.min.x as i32, bounds.min.y as i32);
            outline.draw(|x, y, c| pixel(x0 + x as i32, y0 + y as i32, c));
        }
        pen += scaled.h_advance(id);
    }
}

impl DrawingBackend for PngBackend<'_> {
    type ErrorType = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    /// As plotters' default `draw_text` (the same layout box, anchor and
    /// rotation), with the glyphs from [`rasterise`].
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let mut result = Ok(());
        let inner = &mut self.inner;
        rasterise(&self.font, style.size() as f32, text, |x, y, coverage| {
            if result.is_err() || coverage <= 0.0 {
                return;
            }
            let (x, y) = transform.transform(x + dx - min_x, y + dy - min_y);
            let alpha = color.alpha * f64::from(coverage.min(1.0));
            let c = BackendColor {
                alpha,
                rgb: color.rgb,
            };
            result = inner.draw_pixel((pos.0 + x, pos.1 + y), c);
        });
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns of `text` that have ink, as runs of blank columns between letters.
    fn gaps(font: &FontRef<'_>, text: &str) -> Vec<usize> {
        let mut ink = vec![false; 400];
        rasterise(font, 20.0, text, |x, _, c| {
            if c > 0.3 && (0..400).contains(&x) {
                ink[x as usize] = true;
            }
        });
        let first = ink.iter().position(|&i| i).unwrap();
        let last = ink.iter().rposition(|&i| i).unwrap();
        let mut runs = vec![];
        let mut run = 0;
        for &i in &ink[first..=last] {
            if i {
                if run > 0 {
                    runs.push(run);
                }
                run = 0;
            } else {
                run += 1;
            }
        }
        runs
    }

    #[test]
    fn letters_sit_at_their_bearings() {
        let font = super::super::ensure_font().expect("the figures' font");
        // "th e" came from an 'e' drawn without its bearing; with it, the gaps
        // between the letters of "the" differ by at most two pixels, and the
        // word's ink starts at the first glyph's left bearing.
        let g = gaps(&font, "the");
        assert_eq!(g.len(), 2, "three letters, two gaps: {g:?}");
        assert!(g[0].abs_diff(g[1]) <= 2, "{g:?}");
        let g = gaps(&font, "10");
        assert_eq!(g.len(), 1, "{g:?}");
        assert!(g[0] <= 4, "'1' and '0' {} px apart", g[0]);
    }
}
