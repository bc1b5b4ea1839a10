//! Standard normal noise from any [`rand_core::Rng`], vectorised (Box–Muller).
//!
//! # Method
//!
//! Each 64-bit word of the generator gives one pair of normals: its low 32 bits give
//! `u₁ = (⌊lo/2⌋ + ½)·2⁻³¹ ∈ (0, 1]` and its top 24 bits `a` give the angle
//! `φ = 2π·a·2⁻²⁴ ∈ [0, 2π)`; then `r = √(−2 ln u₁)` and the pair is
//! `(r cos φ, r sin φ)`. The angle is reduced exactly, in integers, to a quarter turn
//! `k` and a residual `x ∈ [−π/4, π/4)` (`a = k·2²² + x·2²⁴/2π`), so `sin` and `cos` are
//! only evaluated where their polynomials are accurate, then rotated by `k`.
//!
//! The SIMD path ([`fill_normal`]) writes blocks of 32 normals from sixteen words: the
//! sixteen cosines first, then the sixteen sines. Words come through `fill_bytes`, four
//! blocks' worth (512 bytes) per call where the output is long enough, so a generator
//! that makes words in bulk, like [`DefaultRng`], can. What is left (fewer than 128
//! normals) takes its ⌈len/2⌉ words in one more call, so its blocks are independent and
//! overlap in the pipeline (a short fill is bound by the latency of one block, not by
//! throughput): its whole blocks as above, then a last partial block written pairwise
//! (`out[2k] = r cos φ`, `out[2k+1] = r sin φ`), an odd last element taking the cosine
//! and dropping the sine. The scalar twin ([`reference::fill_normal`]) follows the same
//! layout and reduction with `libm`, taking its words sixteen at a time: the same words
//! for any generator whose `fill_bytes` of 128-byte pieces concatenates (as
//! [`DefaultRng`]'s and the `rand_pcg` generators' do), so the two consume the generator
//! identically and agree to a few ulps (see the tests).
//!
//! # Accuracy
//!
//! `ln`, `sin` and `cos` are Cephes' single-precision polynomials (within 2 ulps of
//! libm's) on reduced arguments. Since `u₁ ≥ 2⁻³²`, `|z| ≤ √(64 ln 2) ≈ 6.66`: the tails
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

/// The angle `φ = 2π·a/2²⁴` as a quarter turn `k ∈ {0, 1, 2, 3}` and a residual
/// `x = 2π·(a − k·2²²)/2²⁴ ∈ [−π/4, π/4)`: exact integer range reduction, so `sin` and
/// `cos` are only ever evaluated where their polynomials are accurate.
#[inline(always)]
fn quadrant(a: i32) -> (i32, i32) {
    let k = (a + (1 << 21)) >> 22;
    (k & 3, a - (k << 22))
}

/// `(sin φ, cos φ)` from `(sin x, cos x)` of the residual and the quarter turn `k`.
#[inline(always)]
fn rotate(k: i32, s: f32, c: f32) -> (f32, f32) {
    match k {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
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
    // Words for up to four blocks come from one `fill_bytes` call.
    let mut bytes = [0u8; 8 * WORDS * SUPER];
    let mut supers = out.chunks_exact_mut(2 * WORDS * SUPER);
    for sup in &mut supers {
        rng.fill_bytes(&mut bytes);
        for (block, b) in sup
            .chunks_exact_mut(2 * WORDS)
            .zip(bytes.chunks_exact(8 * WORDS))
        {
            let (c, s) = pairs(&le_words(b));
            let (cos_half, sin_half) = block.split_at_mut(WORDS);
            cos_half.copy_from_slice(&c);
            sin_half.copy_from_slice(&s);
        }
    }
    // What is left (fewer than four blocks) takes its words in one call too, so its
    // blocks are independent of each other and can overlap in the pipeline.
    let rest = supers.into_remainder();
    if rest.is_empty() {
        return;
    }
    rng.fill_bytes(&mut bytes[..8 * rest.len().div_ceil(2)]);
    let mut src = bytes.chunks_exact(8 * WORDS);
    let mut blocks = rest.chunks_exact_mut(2 * WORDS);
    for (block, b) in (&mut blocks).zip(&mut src) {
        let (c, s) = pairs(&le_words(b));
        let (cos_half, sin_half) = block.split_at_mut(WORDS);
        cos_half.copy_from_slice(&c);
        sin_half.copy_from_slice(&s);
    }
    let tail = blocks.into_remainder();
    if let Some(b) = src.next().filter(|_| !tail.is_empty()) {
        let (c, s) = pairs(&le_words(b));
        let mut interleaved = [0.0f32; 2 * WORDS];
        for ((p, c), s) in interleaved.chunks_exact_mut(2).zip(c).zip(s) {
            p[0] = c;
            p[1] = s;
        }
        tail.copy_from_slice(&interleaved[..tail.len()]);
    }
}

/// Blocks whose words one `fill_bytes` call makes.
const SUPER: usize = 4;

/// Sixteen little-endian words from 128 bytes.
#[inline(always)]
fn le_words(bytes: &[u8]) -> [u64; WORDS] {
    let mut w = [0u64; WORDS];
    for (x, b) in w.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut le = [0u8; 8];
        le.copy_from_slice(b);
        *x = u64::from_le_bytes(le);
    }
    w
}

/// Box–Muller on sixteen words: the cosines and the sines of the pairs, lane order.
#[inline(always)]
fn pairs(words: &[u64; WORDS]) -> ([f32; WORDS], [f32; WORDS]) {
    let mut rb = [0i32; WORDS];
    let mut ab = [0i32; WORDS];
    for ((r, a), &w) in rb.iter_mut().zip(ab.iter_mut()).zip(words) {
        *r = radius_bits(w);
        *a = angle_bits(w);
    }
    let u1 =
        (f32x16::from_i32x16(i32x16::new(rb)) + f32x16::splat(0.5)) * f32x16::splat(TWO_POW_M31);
    // max(·, 0) keeps √ away from a −0 or tiny negative when u₁ rounds to 1.
    let r = (f32x16::splat(-2.0) * vector::ln_unit(u1))
        .max(f32x16::ZERO)
        .sqrt();
    let (s, c) = vector::sin_cos_turns(i32x16::new(ab));
    ((r * c).to_array(), (r * s).to_array())
}

/// The next `n ≤ 16` words of `rng` (one `fill_bytes` call), zero-padded to 16.
#[inline(always)]
fn words<R: Rng + ?Sized>(rng: &mut R, n: usize) -> [u64; WORDS] {
    let mut bytes = [0u8; 8 * WORDS];
    rng.fill_bytes(&mut bytes[..8 * n]);
    le_words(&bytes)
}

/// Vector `ln` and `sin`/`cos` specialised to this kernel's inputs: no special values
/// to handle, and the angle reduced exactly by integer arithmetic. Cephes' single
/// precision polynomials (the ones `wide` and libm's ports use), so both stay within
/// 2 ulps of libm.
mod vector {
    use wide::bytemuck::cast;
    use wide::{f32x16, i32x16};

    /// `ln x` for normal `x > 0` (here `u₁ ∈ [2⁻³², 1]`).
    #[inline(always)]
    pub(super) fn ln_unit(x: f32x16) -> f32x16 {
        const SQRT_HALF_BITS: i32 = 0x3f35_04f3;
        // x = 2^e·f with f ∈ [√½, √2): shift the exponent field by √½'s bits.
        let bits: i32x16 = cast(x);
        let k = bits - i32x16::splat(SQRT_HALF_BITS);
        let e = f32x16::from_i32x16(k >> 23u32);
        let f: f32x16 = cast((k & i32x16::splat(0x007f_ffff)) + i32x16::splat(SQRT_HALF_BITS));
        let t = f - f32x16::ONE;
        let c = |v: f32| f32x16::splat(v);
        let p = c(7.037_683_6e-2)
            .mul_add(t, c(-1.151_461e-1))
            .mul_add(t, c(1.167_699_9e-1))
            .mul_add(t, c(-1.242_014_1e-1))
            .mul_add(t, c(1.424_932_3e-1))
            .mul_add(t, c(-1.666_805_8e-1))
            .mul_add(t, c(2.000_071_5e-1))
            .mul_add(t, c(-2.499_999_4e-1))
            .mul_add(t, c(3.333_333e-1));
        let t2 = t * t;
        let y = (t2 * t) * p;
        let y = e.mul_add(f32x16::splat(-2.121_944_4e-4), y);
        let y = t2.mul_add(f32x16::splat(-0.5), y) + t;
        e.mul_add(f32x16::splat(0.693_359_4), y)
    }

    /// `(sin φ, cos φ)` for `φ = 2π·a/2²⁴`, `a ∈ [0, 2²⁴)`.
    #[inline(always)]
    pub(super) fn sin_cos_turns(a: i32x16) -> (f32x16, f32x16) {
        let k = (a + i32x16::splat(1 << 21)) >> 22u32;
        let x = f32x16::from_i32x16(a - (k << 22u32)) * f32x16::splat(super::TWO_PI_OVER_2_24);
        let z = x * x;
        let sp = f32x16::splat(-1.951_529_6e-4)
            .mul_add(z, f32x16::splat(8.332_161e-3))
            .mul_add(z, f32x16::splat(-1.666_665_5e-1));
        let sin = (x * z).mul_add(sp, x);
        let cp = f32x16::splat(2.443_315_7e-5)
            .mul_add(z, f32x16::splat(-1.388_731_6e-3))
            .mul_add(z, f32x16::splat(4.166_664_6e-2));
        let cos = (z * z).mul_add(cp, z.mul_neg_add(f32x16::splat(0.5), f32x16::ONE));
        // Quarter turn k: swap when k is odd; sin negated for k ∈ {2, 3}, cos for {1, 2}.
        let swap: f32x16 = cast((k & i32x16::ONE).simd_eq(i32x16::ONE));
        let (s, c) = (swap.select(cos, sin), swap.select(sin, cos));
        let sin_sign: f32x16 = cast((k & i32x16::splat(2)) << 30u32);
        let cos_sign: f32x16 = cast(((k + i32x16::ONE) & i32x16::splat(2)) << 30u32);
        (s ^ sin_sign, c ^ cos_sign)
    }
}

/// Scalar twins of the noise kernels.
pub mod reference {
    use super::*;

    /// One Box–Muller pair `(r cos φ, r sin φ)` from one word, with libm.
    #[inline]
    pub fn pair(word: u64) -> (f32, f32) {
        let u1 = (radius_bits(word) as f32 + 0.5) * TWO_POW_M31;
        let r = libm::sqrtf((-2.0 * libm::logf(u1)).max(0.0));
        let (k, x) = quadrant(angle_bits(word));
        let (s, c) = libm::sincosf(x as f32 * TWO_PI_OVER_2_24);
        let (s, c) = rotate(k, s, c);
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
