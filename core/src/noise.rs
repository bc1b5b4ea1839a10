//! Standard normal noise from any [`rand_core::Rng`], vectorised (Box–Muller).
//!
//! # Method
//!
//! Each 64-bit word of the generator gives one pair of normals: its low 32 bits give
//! `u₁ = (⌊lo/2⌋ + ½)·2⁻³¹ ∈ (0, 1]` and its top 24 bits give the angle
//! `φ = 2π·⌊hi/2⁸⌋·2⁻²⁴ ∈ [0, 2π)`; then `r = √(−2 ln u₁)` and the pair is
//! `(r cos φ, r sin φ)`.
//!
//! The SIMD path ([`fill_normal`]) takes sixteen words at a time (one `fill_bytes` of
//! 128 bytes, so a generator that makes words in bulk, like [`DefaultRng`], can) and
//! writes a block of 32 normals: the sixteen cosines first, then the sixteen sines. What
//! is left (fewer than 32) takes one `fill_bytes` of ⌈len/2⌉ words, goes through the same
//! vector code, and is written pairwise (`out[2k] = r cos φ`, `out[2k+1] = r sin φ`), an
//! odd last element taking the cosine and dropping the sine. The scalar twin
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

/// The default generator: eight xoshiro256++ streams advanced together
/// ([`crate::rng::Xoshiro256x8`]), so a block of words costs one pass of vector
/// instructions.
pub type DefaultRng = crate::rng::Xoshiro256x8;

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
    let pairs = |words: &[u64; WORDS]| {
        let mut rb = [0i32; WORDS];
        let mut ab = [0i32; WORDS];
        for ((r, a), &w) in rb.iter_mut().zip(ab.iter_mut()).zip(words) {
            *r = radius_bits(w);
            *a = angle_bits(w);
        }
        let u1 = (f32x16::from_i32x16(i32x16::new(rb)) + half) * scale;
        // max(·, 0) keeps √ away from a −0 or tiny negative when u₁ rounds to 1.
        let r = (minus_two * u1.ln()).max(f32x16::ZERO).sqrt();
        let phi = f32x16::from_i32x16(i32x16::new(ab)) * angle_scale;
        let (s, c) = phi.sin_cos();
        ((r * c).to_array(), (r * s).to_array())
    };
    let mut blocks = out.chunks_exact_mut(2 * WORDS);
    for block in &mut blocks {
        let (c, s) = pairs(&words(rng, WORDS));
        let (cos_half, sin_half) = block.split_at_mut(WORDS);
        cos_half.copy_from_slice(&c);
        sin_half.copy_from_slice(&s);
    }
    let rest = blocks.into_remainder();
    if !rest.is_empty() {
        let (c, s) = pairs(&words(rng, rest.len().div_ceil(2)));
        for (k, o) in rest.iter_mut().enumerate() {
            *o = if k % 2 == 0 { c[k / 2] } else { s[k / 2] };
        }
    }
}

/// The next `n ≤ 16` words of `rng` (through `fill_bytes`, so a generator that makes
/// words in bulk can), zero-padded to 16.
#[inline(always)]
fn words<R: Rng + ?Sized>(rng: &mut R, n: usize) -> [u64; WORDS] {
    let mut bytes = [0u8; 8 * WORDS];
    rng.fill_bytes(&mut bytes[..8 * n]);
    let mut w = [0u64; WORDS];
    for (x, b) in w.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut le = [0u8; 8];
        le.copy_from_slice(b);
        *x = u64::from_le_bytes(le);
    }
    w
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

    /// The scalar twin of [`super::fill_normal`]: same words, same layout, libm math.
    pub fn fill_normal<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32]) {
        let mut blocks = out.chunks_exact_mut(2 * WORDS);
        for block in &mut blocks {
            let w = words(rng, WORDS);
            let (cos_half, sin_half) = block.split_at_mut(WORDS);
            for ((c, s), &w) in cos_half.iter_mut().zip(sin_half.iter_mut()).zip(&w) {
                (*c, *s) = pair(w);
            }
        }
        let rest = blocks.into_remainder();
        if !rest.is_empty() {
            let w = words(rng, rest.len().div_ceil(2));
            let mut pairs = rest.chunks_mut(2);
            for (p, &w) in (&mut pairs).zip(&w) {
                let (c, s) = pair(w);
                p[0] = c;
                if let Some(x) = p.get_mut(1) {
                    *x = s;
                }
            }
        }
    }
}
