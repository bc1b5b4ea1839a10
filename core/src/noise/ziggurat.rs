//! Standard normals by the ziggurat method (Marsaglia & Tsang 2000, 128 layers, with
//! Doornik's (2005) independent layer bits): what [`super::fill_normal`] runs where the
//! target has no floating-point unit (a Cortex-M0/M3, RV32IMAC), where Box–Muller's
//! logarithm, square root, sine and cosine cost over a thousand instructions a normal in
//! software.
//!
//! Each attempt takes one 64-bit word: its low 32 bits as a signed `h`, bits 32–38 as
//! the layer `i`. With probability 0.988 `|h| < kᵢ` (an integer compare) and the normal
//! is `h·wᵢ`: one integer-to-float conversion and one multiply. Otherwise the wedge of
//! layer `i` is tested against the density (two `expf`), or, for the base layer, a draw
//! is made from the tail beyond `r` (Marsaglia's method, two `logf` an attempt). The
//! draws are exact up to f32 rounding: no tail is cut.

use rand_core::Rng;

use crate::math::{exp, ln};

#[path = "ziggurat_tables.rs"]
mod tables;

use tables::{K, W};

/// The base layer's right edge `r`.
const R: f32 = 3.442_62;

const TWO_POW_31: f32 = 2_147_483_648.0;

/// Fraction bits of [`fill_normal_fixed`]'s normals: Q4.27, `|z| < 16` (a normal
/// beyond 16 has probability 10⁻⁵⁷), resolution 7.5·10⁻⁹.
pub const NORMAL_FRAC: u32 = 27;

/// `xᵢ = wᵢ·2³¹` in Q4.27 (`wᵢ·2⁵⁸`, below 2³¹ since `x₀ < 3.8`): the fast path's
/// normal `h·wᵢ` is `(h·XQᵢ) >> 31` in Q4.27.
const XQ: [i32; 128] = {
    let mut t = [0i32; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = (W[i] * 288_230_376_151_711_744.0) as i32;
        i += 1;
    }
    t
};

/// Fills `out` with independent standard normals in fixed point (Q4.27, see
/// [`NORMAL_FRAC`]), drawn by the ziggurat from the same words as
/// [`fill_normal_ziggurat`] and equal to its draws to within 2⁻²⁷ and f32 rounding. The
/// fast path (98.8% of draws) is integer work alone: a compare and one 32 × 32 → 64-bit
/// multiply. For the fixed-point learner of a core without an FPU
/// ([`crate::online::FixedSgld`]).
///
/// ```
/// let mut rng = sgld::noise::default_rng(7);
/// let mut z = [0i32; 100];
/// sgld::noise::fill_normal_fixed(&mut rng, &mut z);
/// let mean = z.iter().map(|&q| q as f64).sum::<f64>() / 100.0 / (1u64 << 27) as f64;
/// assert!(mean.abs() < 0.5);
/// ```
pub fn fill_normal_fixed<G: Rng + ?Sized>(rng: &mut G, out: &mut [i32]) {
    for o in out.iter_mut() {
        *o = normal_fixed(rng);
    }
}

/// One standard normal in Q4.27.
#[inline]
pub(crate) fn normal_fixed<G: Rng + ?Sized>(rng: &mut G) -> i32 {
    loop {
        let word = rng.next_u64();
        let h = word as u32 as i32;
        let i = ((word >> 32) & 127) as usize;
        if h.unsigned_abs() < K[i] {
            // |h·XQᵢ| < 2³¹·2³¹: the shifted product fits 31 bits.
            return ((h as i64 * XQ[i] as i64) >> 31) as i32;
        }
        if let Some(z) = edge(rng, h, i) {
            // Saturating, beyond 16 (never, in practice).
            return (z * (1u32 << NORMAL_FRAC) as f32) as i32;
        }
    }
}

/// Fills `out` with independent standard normals drawn from `rng` by the ziggurat.
/// Infallible and allocation-free; any length (including 0) is fine. Every target can
/// run it (the release tests check its moments, tails and Kolmogorov–Smirnov distance
/// on 10⁷ draws); [`super::fill_normal`] is this where the target has no FPU.
///
/// ```
/// let mut rng = sgld::noise::default_rng(7);
/// let mut z = [0.0f32; 100];
/// sgld::noise::fill_normal_ziggurat(&mut rng, &mut z);
/// assert!(z.iter().all(|x| x.is_finite()));
/// ```
pub fn fill_normal_ziggurat<G: Rng + ?Sized>(rng: &mut G, out: &mut [f32]) {
    for o in out.iter_mut() {
        *o = normal(rng);
    }
}

/// One standard normal.
#[inline]
fn normal<G: Rng + ?Sized>(rng: &mut G) -> f32 {
    loop {
        let word = rng.next_u64();
        let h = word as u32 as i32;
        let i = ((word >> 32) & 127) as usize;
        if h.unsigned_abs() < K[i] {
            return h as f32 * W[i];
        }
        if let Some(z) = edge(rng, h, i) {
            return z;
        }
    }
}

/// The rare attempts (1.2%): the tail beyond `r` from the base layer, the wedge test
/// elsewhere; `None` to try again.
#[cold]
fn edge<G: Rng + ?Sized>(rng: &mut G, h: i32, i: usize) -> Option<f32> {
    if i == 0 {
        return Some(tail(rng, h < 0));
    }
    let x = h as f32 * W[i];
    // xᵢ = wᵢ·2³¹, exactly.
    let (outer, inner) = (W[i] * TWO_POW_31, W[i + 1] * TWO_POW_31);
    let f0 = exp(-0.5 * (outer * outer - x * x));
    let f1 = exp(-0.5 * (inner * inner - x * x));
    (f1 + open_uniform(rng) * (f0 - f1) < 1.0).then_some(x)
}

/// A draw from the normal's tail beyond `r` (Marsaglia 1964), on the side `negative`.
fn tail<G: Rng + ?Sized>(rng: &mut G, negative: bool) -> f32 {
    loop {
        let x = ln(open_uniform(rng)) / R;
        let y = ln(open_uniform(rng));
        if -2.0 * y >= x * x {
            return if negative { x - R } else { R - x };
        }
    }
}

/// A uniform on (0, 1): 24 random bits and a half.
fn open_uniform<G: Rng + ?Sized>(rng: &mut G) -> f32 {
    ((rng.next_u32() >> 8) as f32 + 0.5) * (1.0 / 16_777_216.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables are their definition, recomputed in f64: `x₁ = r`, each layer of area
    /// `v`, the compare bounds `⌈(xᵢ₊₁/xᵢ)·2³¹⌉` exact, the rest to f32 rounding.
    #[test]
    fn tables_match_their_definition() {
        let (r, v) = (3.442619855899f64, 9.91256303526217e-3f64);
        let mut x = [0.0f64; 129];
        let mut f = libm::exp(-0.5 * r * r);
        x[0] = v / f;
        x[1] = r;
        for i in 2..128 {
            x[i] = libm::sqrt(-2.0 * libm::log(v / x[i - 1] + f));
            f = libm::exp(-0.5 * x[i] * x[i]);
        }
        let close = |a: f32, b: f64| ((a as f64 - b) / b).abs() < 1e-7;
        for i in 0..128 {
            assert!(close(W[i], x[i] / 2147483648.0), "w[{i}]");
            let k = libm::ceil(x[i + 1] / x[i] * 2147483648.0);
            assert!((K[i] as f64 - k).abs() <= 1.0, "k[{i}]");
        }
        assert_eq!(W[128], 0.0);
        assert!((R as f64 - r).abs() < 1e-6);
    }

    /// The fixed-point normals are the f32 ones, draw for draw, to within the f32
    /// rounding of the table and 2⁻²⁷.
    #[test]
    fn fixed_point_normals_are_the_float_ones() {
        let (mut a, mut b) = (crate::noise::default_rng(11), crate::noise::default_rng(11));
        let mut fixed = [0i32; 4096];
        let mut float = [0.0f32; 4096];
        fill_normal_fixed(&mut a, &mut fixed);
        fill_normal_ziggurat(&mut b, &mut float);
        for (&q, &z) in fixed.iter().zip(&float) {
            let back = q as f64 / (1u64 << NORMAL_FRAC) as f64;
            let tol =
                2.0 * f32::EPSILON as f64 * (z as f64).abs() + 2.0 / (1u64 << NORMAL_FRAC) as f64;
            assert!((back - z as f64).abs() <= tol, "{q} {z}");
        }
        // The same words were drawn.
        assert_eq!(a.next_u64(), b.next_u64());
    }

    /// Both sides of the tail and of every wedge are reached, and stay finite.
    #[test]
    fn edges_are_finite_and_on_their_side() {
        let mut rng = crate::noise::default_rng(3);
        for _ in 0..1000 {
            let t = tail(&mut rng, false);
            assert!(t >= R && t.is_finite());
            assert!(tail(&mut rng, true) <= -R);
        }
        for i in 1..128 {
            for h in [K[i] as i32, -(K[i] as i32), i32::MIN] {
                if let Some(z) = edge(&mut rng, h, i) {
                    let edge = W[i] * TWO_POW_31 * 1.000_001;
                    assert!(z.is_finite() && z.abs() <= edge, "{i} {h} {z}");
                }
            }
        }
    }
}
