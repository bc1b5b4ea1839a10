//! Standard normal noise from any [`rand_core::Rng`], vectorised (Box–Muller).
//!
//! # Method
//!
//! Each 64-bit word of the generator gives one pair of normals: its low 32 bits give
//! `u₁ = (⌊lo/2⌋ + ½)·2⁻³¹ ∈ (0, 1]` and its top 24 bits give the angle
//! `φ = 2π·⌊hi/2⁸⌋·2⁻²⁴ ∈ [0, 2π)`; then `r = √(−2 ln u₁)` and the pair is
//! `(r cos φ, r sin φ)`.
//!
//! The SIMD path ([`fill_normal`]) takes sixteen words at a time and writes a block of
//! 32 normals: the sixteen cosines first, then the sixteen sines. What is left (fewer than
//! 32) is filled pairwise (`out[2k] = r cos φ`, `out[2k+1] = r sin φ`), an odd last
//! element taking the cosine and dropping the sine. The scalar twin
//! ([`reference::fill_normal`]) follows the same layout with `libm`, so the two consume
//! the generator identically and agree to a few ulps (see the tests).
//!
//! # Accuracy
//!
//! The uniforms are exact; `ln`, `sin` and `cos` are `wide`'s polynomial approximations
//! (within 2 ulps of libm's). Since `u₁ ≥ 2⁻³²`, `|z| ≤ √(64 ln 2) ≈ 6.66`: the tails
//! beyond 6.66σ (probability 2.7·10⁻¹¹) are cut. The release test suite checks 10⁷ draws
//! for moments, a Kolmogorov–Smirnov test against Φ, tail frequencies and lag-1
//! autocorrelation.

use rand_core::{Rng, SeedableRng};
use wide::{f32x16, i32x16};

/// The default generator: PCG-64 MCG (128-bit multiplicative state, 64-bit output).
pub type DefaultRng = rand_pcg::Pcg64Mcg;

/// The default generator seeded from a `u64` (via `SeedableRng::seed_from_u64`).
pub fn default_rng(seed: u64) -> DefaultRng {
    DefaultRng::seed_from_u64(seed)
}

const TWO_PI_OVER_2_24: f32 = core::f32::consts::TAU / 16_777_216.0;
const TWO_POW_M31: f32 = 1.0 / 2_147_483_648.0;
/// Words per SIMD block; each gives two normals.
const WORDS: usize = 16;

/// The radius input: `u₁ ∈ (0, 1]` from the low 32 bits of a word, as an exact integer.
#[inline(always)]
fn radius_bits(word: u64) -> i32 {
    ((word as u32) >> 1) as i32
}

/// The angle input: the top 24 bits of a word.
#[inline(always)]
fn angle_bits(word: u64) -> i32 {
    (word >> 40) as i32
}

/// Fills `out` with independent standard normals drawn from `rng`.
///
/// Infallible and allocation-free; any length (including 0) is fine.
///
/// ```
/// let mut rng = sgld::noise::default_rng(7);
/// let mut z = [0.0f32; 100];
/// sgld::noise::fill_normal(&mut rng, &mut z);
/// assert!(z.iter().all(|x| x.is_finite() && x.abs() < 7.0));
/// ```
pub fn fill_normal<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32]) {
    #[cfg(sgld_force_scalar)]
    {
        reference::fill_normal(rng, out)
    }
    #[cfg(not(sgld_force_scalar))]
    {
        fill_normal_simd(rng, out)
    }
}

/// The SIMD implementation behind [`fill_normal`] (public so tests and benches can
/// compare it with [`reference::fill_normal`] under either cfg).
pub fn fill_normal_simd<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32]) {
    let scale = f32x16::splat(TWO_POW_M31);
    let half = f32x16::splat(0.5);
    let minus_two = f32x16::splat(-2.0);
    let angle_scale = f32x16::splat(TWO_PI_OVER_2_24);
    let mut blocks = out.chunks_exact_mut(2 * WORDS);
    for block in &mut blocks {
        let mut rb = [0i32; WORDS];
        let mut ab = [0i32; WORDS];
        for (r, a) in rb.iter_mut().zip(ab.iter_mut()) {
            let w = rng.next_u64();
            *r = radius_bits(w);
            *a = angle_bits(w);
        }
        let u1 = (f32x16::from_i32x16(i32x16::new(rb)) + half) * scale;
        // max(·, 0) keeps √ away from a −0 or tiny negative when u₁ rounds to 1.
        let r = (minus_two * u1.ln()).max(f32x16::ZERO).sqrt();
        let phi = f32x16::from_i32x16(i32x16::new(ab)) * angle_scale;
        let (s, c) = phi.sin_cos();
        let (cos_half, sin_half) = block.split_at_mut(WORDS);
        for (o, x) in cos_half.iter_mut().zip((r * c).to_array()) {
            *o = x;
        }
        for (o, x) in sin_half.iter_mut().zip((r * s).to_array()) {
            *o = x;
        }
    }
    reference::fill_pairs(rng, blocks.into_remainder());
}

/// Scalar twins of the noise kernels.
pub mod reference {
    use super::*;

    /// One Box–Muller pair `(r cos φ, r sin φ)` from one word, with libm.
    #[inline]
    pub fn pair(word: u64) -> (f32, f32) {
        let u1 = (radius_bits(word) as f32 + 0.5) * TWO_POW_M31;
        let r = libm::sqrtf((-2.0 * libm::logf(u1)).max(0.0));
        let phi = angle_bits(word) as f32 * TWO_PI_OVER_2_24;
        let (s, c) = libm::sincosf(phi);
        (r * c, r * s)
    }

    /// Fills `out` pairwise: `out[2k] = r cos φ`, `out[2k+1] = r sin φ`, one word per pair.
    pub fn fill_pairs<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32]) {
        let mut pairs = out.chunks_exact_mut(2);
        for p in &mut pairs {
            let (c, s) = pair(rng.next_u64());
            p[0] = c;
            p[1] = s;
        }
        if let [last] = pairs.into_remainder() {
            *last = pair(rng.next_u64()).0;
        }
    }

    /// The scalar twin of [`super::fill_normal`]: same words, same layout, libm math.
    pub fn fill_normal<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32]) {
        let mut blocks = out.chunks_exact_mut(2 * WORDS);
        for block in &mut blocks {
            let (cos_half, sin_half) = block.split_at_mut(WORDS);
            for (c, s) in cos_half.iter_mut().zip(sin_half.iter_mut()) {
                (*c, *s) = pair(rng.next_u64());
            }
        }
        fill_pairs(rng, blocks.into_remainder());
    }
}
