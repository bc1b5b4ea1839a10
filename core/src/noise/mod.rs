//! Standard normal noise from any [`rand_core::Rng`], vectorised (Box–Muller); by the
//! ziggurat ([`fill_normal_ziggurat`]) where the target has no floating-point unit.
//!
//! # Method
//!
//! Normals come in blocks of sixteen pairs from sixteen 64-bit words of the generator,
//! read as 32 little-endian 32-bit halves `h₀ … h₃₁` (`h₂ᵢ` the low half of word `i`,
//! `h₂ᵢ₊₁` its high half). Pair `j` takes its radius from `h_j` and its angle from
//! `h₁₆₊ⱼ`: `u₁ = (⌊h_j/2⌋ + ½)·2⁻³¹ ∈ (0, 1]`, and the top 24 bits `a` of `h₁₆₊ⱼ` give
//! `φ = 2π·a·2⁻²⁴ ∈ [0, 2π)`; then `r = √(−2 ln u₁)` and the pair is
//! `(r cos φ, r sin φ)`. (So the radii of a block are the first eight words as they are
//! in a vector register, and the angles the next eight: no shuffling of halves.) The
//! arguments are reduced exactly: the scalar twin takes the angle to a quarter turn `k`
//! and a residual `x ∈ [−π/4, π/4)` (`a = k·2²² + x·2²⁴/2π`) for libm's `sin` and `cos`,
//! then rotates by `k`; the SIMD path takes it to one of 32 sectors and a residual in
//! `[−π/32, π/32)`, and `u₁`'s mantissa to one of sixteen bins, so that short
//! polynomials suffice, with tables read by one permute each. Where there is no vector
//! permute (wasm32, x86 without AVX-512, Arm), a lookup would be one lane at a time, and
//! the SIMD path computes without tables ([`fill_normal_polynomial`]): the scalar twin's
//! quarter turns with Cephes' `sin` and `cos` polynomials, and `ln` as the series of
//! `atanh` on `u₁`'s mantissa.
//!
//! The SIMD path ([`fill_normal`]) writes a block as 32 normals: the sixteen cosines
//! first, then the sixteen sines. Words come through `fill_bytes`, four blocks' worth
//! (512 bytes) per call where the output is long enough, so a generator that makes
//! words in bulk, like [`DefaultRng`], can. What is left (fewer than 128 normals) takes
//! the words of its ⌈len/32⌉ blocks in one more call, so its blocks are independent and
//! overlap in the pipeline (a short fill is bound by the latency of one block, not by
//! throughput): its whole blocks as above, then a last partial block written pairwise
//! (`out[2k] = r cos φ`, `out[2k+1] = r sin φ`), an odd last element taking the cosine
//! and dropping the sine. Every block, partial or not, takes sixteen words. The scalar
//! twin ([`reference::fill_normal`]) follows the same layout and reduction with `libm`,
//! taking its words sixteen at a time: the same words for any generator whose
//! `fill_bytes` of 128-byte pieces concatenates (as [`DefaultRng`]'s and the `rand_pcg`
//! generators' do), so the two consume the generator identically and agree to a few
//! ulps (see the tests).
//!
//! # Accuracy
//!
//! The SIMD path's `ln` (a table of sixteen reciprocals and `log1p` to its `t⁵` term)
//! and `sin`/`cos` (32 tabled sectors and Taylor polynomials on the residual) keep each
//! normal within 8 ulps of `max(1, |z|)` of the scalar twin's (under 2 in the tests'
//! 1,200 fills; under 3 without tables). Since `u₁ ≥ 2⁻³²`, `|z| ≤ √(64 ln 2) ≈ 6.66`: the tails
//! beyond 6.66σ (probability 2.7·10⁻¹¹) are cut. The release test suite checks 10⁷ draws
//! for moments, a Kolmogorov–Smirnov test against Φ, tail frequencies and lag-1
//! autocorrelation.

use rand_core::{Rng, SeedableRng};

use crate::rng::CacheLines;

mod ziggurat;
use wide::bytemuck::cast;
use wide::{f32x16, i32x16, u32x16, u64x8};
pub(crate) use ziggurat::normal_fixed;
pub use ziggurat::{NORMAL_FRAC, fill_normal_fixed, fill_normal_ziggurat};

/// The default generator: eight xoshiro256++ streams advanced together
/// ([`crate::rng::Xoshiro256x8`]), so a block of words costs one pass of vector
/// instructions.
pub type DefaultRng = crate::rng::Xoshiro256x8;

/// The default generator seeded from a `u64` (via `SeedableRng::seed_from_u64`).
pub fn default_rng(seed: u64) -> DefaultRng {
    DefaultRng::seed_from_u64(seed)
}

/// A uniform draw in `[0, 1)` with 53 random bits (a Metropolis test's).
///
/// ```
/// let mut rng = sgld::noise::default_rng(7);
/// let u = sgld::noise::uniform(&mut rng);
/// assert!((0.0..1.0).contains(&u));
/// ```
pub fn uniform<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

const TWO_PI_OVER_2_24: f32 = core::f32::consts::TAU / 16_777_216.0;
const TWO_POW_M31: f32 = 1.0 / 2_147_483_648.0;
/// Words per block: sixteen words give sixteen pairs of normals.
const WORDS: usize = 16;

/// The radius input of a pair from its 32-bit half `h`: `⌊h/2⌋`, so that
/// `u₁ = (⌊h/2⌋ + ½)·2⁻³¹ ∈ (0, 1]` as an exact integer.
#[inline(always)]
fn radius_bits(half: u32) -> i32 {
    (half >> 1) as i32
}

/// The angle input of a pair from its 32-bit half: the top 24 bits.
#[inline(always)]
fn angle_bits(half: u32) -> i32 {
    (half >> 8) as i32
}

/// Half `j` of a block's words: the low half of word `j/2` for even `j`, else its high
/// half (the words' little-endian bytes read as 32-bit values).
#[inline(always)]
fn half(words: &[u64; WORDS], j: usize) -> u32 {
    (words[j / 2] >> (32 * (j % 2))) as u32
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
    #[cfg(all(not(sgld_force_scalar), sgld_soft_float))]
    {
        fill_normal_ziggurat(rng, out)
    }
    #[cfg(all(not(any(sgld_force_scalar, sgld_soft_float)), sgld_scalar_target))]
    {
        fill_normal_lanes(rng, out)
    }
    #[cfg(not(any(sgld_force_scalar, sgld_soft_float, sgld_scalar_target)))]
    {
        fill_normal_simd(rng, out)
    }
}

/// The SIMD implementation behind [`fill_normal`] (public so tests and benches can
/// compare it with [`reference::fill_normal`] under either cfg).
pub fn fill_normal_simd<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32]) {
    fill_blocks(rng, out, pairs)
}

/// The SIMD implementation without tables, on any target: what [`fill_normal_simd`] is
/// where there is no vector permute (wasm32 with `simd128`, x86 without AVX-512, Arm),
/// public so tests and benches can run it on a target that has one. Within a few ulps
/// of [`reference::fill_normal`] (the tests compare them); same layout, same words.
pub fn fill_normal_polynomial<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32]) {
    fill_blocks(rng, out, pairs_polynomial)
}

/// The tabled SIMD arithmetic one pair at a time, in plain f32 (no libm): what
/// [`fill_normal`] runs on a target where `wide` has no SIMD backend (a Cortex-M4F), where
/// a table lookup costs one load. It equals [`fill_normal_simd`] with tables (a target
/// with a vector permute) bit for bit where `mul_add` is two roundings, and is within a
/// few ulps of every path elsewhere (the tests compare them).
pub fn fill_normal_lanes<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32]) {
    // A block's words from its own `fill_bytes` call (the same words as the SIMD path's
    // calls of up to four blocks, for a generator whose 128-byte pieces concatenate), and
    // each normal written where it goes: no staging arrays to clear and copy.
    for block in out.chunks_mut(2 * WORDS) {
        let mut bytes = [0u8; 8 * WORDS];
        rng.fill_bytes(&mut bytes);
        let halves = bytes.as_chunks::<4>().0;
        if block.len() == 2 * WORDS {
            let (cos_half, sin_half) = block.split_at_mut(WORDS);
            for (j, (c, s)) in cos_half.iter_mut().zip(sin_half).enumerate() {
                (*c, *s) = lanes::pair(halves, j);
            }
        } else {
            lanes::write_pairwise(halves, block);
        }
    }
}

/// The block layout of [`fill_normal`] around a block's Box–Muller `pairs`.
#[inline(always)]
fn fill_blocks<R: Rng + ?Sized>(
    rng: &mut R,
    out: &mut [f32],
    pairs: impl Fn(&[u64; WORDS]) -> ([f32; WORDS], [f32; WORDS]),
) {
    // Words for up to four blocks come from one `fill_bytes` call, into a buffer on a
    // cache line of its own, so that a generator's vector stores and the vector loads
    // here never straddle two lines (a straddling store does not forward to its load:
    // the fill ran at two speeds with the stack's alignment).
    let mut buf = CacheLines([0u8; 8 * WORDS * SUPER]);
    let bytes = &mut buf.0;
    let blocks = out.len().div_ceil(2 * WORDS);
    // One block an iteration, whole runs of four included: a body of four blocks
    // unrolled together needs more than the 32 vector registers, and its spills made a
    // fill of 128 cost what one of 124 does plus a third.
    for (i, block) in out.chunks_mut(2 * WORDS).enumerate() {
        let k = i % SUPER;
        if k == 0 {
            // Four blocks' words, or what is left (the last block maybe partial).
            rng.fill_bytes(&mut bytes[..8 * WORDS * (blocks - i).min(SUPER)]);
        }
        let (c, s) = pairs(&le_words(&bytes[8 * WORDS * k..8 * WORDS * (k + 1)]));
        if block.len() == 2 * WORDS {
            let (cos_half, sin_half) = block.split_at_mut(WORDS);
            cos_half.copy_from_slice(&c);
            sin_half.copy_from_slice(&s);
        } else {
            write_pairwise(block, c, s);
        }
    }
}

/// One block of 32 normals in the pairwise order of a partial block, `[c₀, s₀, c₁, s₁,
/// …]`, from one block's words: every prefix of `out` is what [`fill_normal`] draws for
/// that length, and the generator moves on as it would. (For a pool of normals handed
/// out a few at a time.)
pub(crate) fn fill_block_pairwise<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32; 2 * WORDS]) {
    let (c, s) = if cfg!(sgld_force_scalar) {
        // A whole block: its sixteen cosines, then its sixteen sines.
        let mut block = [0.0f32; 2 * WORDS];
        reference::fill_normal(rng, &mut block);
        let [c, s]: [[f32; WORDS]; 2] = cast(block);
        (c, s)
    } else if cfg!(sgld_soft_float) {
        // The ziggurat's normals in the order it draws them, as `fill_normal` gives them.
        fill_normal_ziggurat(rng, out);
        return;
    } else if cfg!(sgld_scalar_target) {
        let mut bytes = [0u8; 8 * WORDS];
        rng.fill_bytes(&mut bytes);
        lanes::write_pairwise(bytes.as_chunks::<4>().0, out);
        return;
    } else {
        pairs(&words(rng))
    };
    write_pairwise(out, c, s);
}

/// Writes `tail` (at most 32 values) with a block's first normals in the pairwise
/// order of a partial block: `[c₀, s₀, c₁, s₁, …]`.
///
/// With AVX-512 each sixteen consecutive values of that order are one two-source
/// permute of the cosines and the sines, values `0..16` and `16..32`, so the stores
/// come from registers: the first sixteen as one vector, and fewer than sixteen in the
/// fixed pieces of the kernels' tails, which the step's loads of the noise read back
/// one piece from one store. (Element-wise moves extract each lane and store it alone,
/// and a vector read across those stores, or across two overlapping vector stores,
/// waits for them to reach the cache.)
#[inline(always)]
fn write_pairwise(tail: &mut [f32], c: [f32; WORDS], s: [f32; WORDS]) {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    ))]
    {
        use safe_arch::{m512, m512i, permute2_i32_m512i};
        let (c, s): (m512i, m512i) = (cast(c), cast(s));
        // Value `m` of the pairwise order is lane m/2 of the cosines (index m/2) for
        // even m, of the sines (index 16 + m/2) for odd m.
        let from = |start: usize| -> m512 {
            let m = i32x16::from(core::array::from_fn::<i32, WORDS, _>(|j| j as i32))
                + i32x16::splat(start as i32);
            let idx = (m >> 1u32) + ((m & i32x16::ONE) << 4u32);
            cast(permute2_i32_m512i(c, cast(idx), s))
        };
        // Sixteen values as one 512-bit store (an array assignment is two 256-bit
        // stores, which the step's 512-bit load would span), fewer in the pieces the
        // step's tail loads read.
        for (part, start) in tail.chunks_mut(WORDS).zip([0, WORDS]) {
            crate::kernels::simd::store_or_tail(cast(from(start)), part);
        }
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    )))]
    {
        let mut pairwise = [0.0f32; 2 * WORDS];
        for ((p, c), s) in pairwise.chunks_exact_mut(2).zip(c).zip(s) {
            p[0] = c;
            p[1] = s;
        }
        crate::kernels::copy(tail, &pairwise);
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

/// Whether the target reads a sixteen-entry table into sixteen lanes with one
/// instruction (AVX-512's permutes). Where it cannot, a lookup is sixteen scalar reads
/// and lane inserts, which cost more than the polynomials that replace the tables.
const PERMUTE: bool = cfg!(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx512f"
));

/// Box–Muller on sixteen words as the target computes it best: [`pairs_tabled`] with
/// a vector permute, [`pairs_polynomial`] without one.
#[inline(always)]
fn pairs(words: &[u64; WORDS]) -> ([f32; WORDS], [f32; WORDS]) {
    if PERMUTE {
        pairs_tabled(words)
    } else {
        pairs_polynomial(words)
    }
}

/// Box–Muller on sixteen words with [`vector`]'s tables: the cosines and the sines of
/// the pairs, lane order.
#[inline(always)]
fn pairs_tabled(words: &[u64; WORDS]) -> ([f32; WORDS], [f32; WORDS]) {
    // max(·, 0) keeps √ away from a −0 or tiny negative when u₁ rounds to 1.
    let radius_sq = |u| vector::minus_two_ln_scaled(u).max(f32x16::ZERO);
    box_muller(words, radius_sq, vector::polar)
}

/// Box–Muller on sixteen words with [`polynomial`]'s table-free `ln`, `sin` and `cos`.
#[inline(always)]
fn pairs_polynomial(words: &[u64; WORDS]) -> ([f32; WORDS], [f32; WORDS]) {
    // No max(·, 0): that `−2 ln u₁` is exactly +0 at u₁ = 1 and positive below it.
    box_muller(words, polynomial::minus_two_ln_scaled, polynomial::polar)
}

/// The pairs of sixteen words given `r² = −2 ln(x·2⁻³¹)` (never negative) and the
/// polar map.
#[inline(always)]
fn box_muller(
    words: &[u64; WORDS],
    radius_sq: impl Fn(f32x16) -> f32x16,
    polar: impl Fn(f32x16, i32x16) -> (f32x16, f32x16),
) -> ([f32; WORDS], [f32; WORDS]) {
    // Eight words as sixteen 32-bit halves are a plain reinterpretation of the register
    // (lane j is half j): the radii's halves, then the angles'.
    let (radii, angles) = words.split_at(WORDS / 2);
    let halves = |w: &[u64]| -> u32x16 {
        let mut v = [0u64; WORDS / 2];
        v.copy_from_slice(w);
        if cfg!(target_endian = "big") {
            // The low half first in memory, as on a little-endian target.
            v = v.map(|x| x.rotate_left(32));
        }
        cast(u64x8::new(v))
    };
    let rb: i32x16 = cast(halves(radii) >> 1u32);
    let ab: i32x16 = cast(halves(angles) >> 8u32);
    // u₁·2³¹ = ⌊h/2⌋ + ½; the power of two is taken in ln's exponent.
    let u = f32x16::from_i32x16(rb) + f32x16::splat(0.5);
    let r = radius_sq(u).sqrt();
    let (c, s) = polar(r, ab);
    (c.to_array(), s.to_array())
}

/// The next sixteen words of `rng` (one `fill_bytes` call).
#[inline(always)]
fn words<R: Rng + ?Sized>(rng: &mut R) -> [u64; WORDS] {
    let mut bytes = [0u8; 8 * WORDS];
    rng.fill_bytes(&mut bytes);
    le_words(&bytes)
}

/// Vector `ln` and `sin`/`cos` specialised to this kernel's inputs: no special values
/// to handle, and both arguments reduced exactly by integer arithmetic to a table
/// entry and a small residual, so that short polynomials are accurate to within an
/// ulp or two of libm's.
mod vector {
    use wide::bytemuck::cast;
    use wide::{f32x16, i32x16};

    /// `√½` rounded to f32: the lower end of the reduced mantissa's range `[√½, √2)`.
    pub(super) const SQRT_HALF: f32 = f32::from_bits(0x3f35_04f3);
    /// Reciprocals `r_j` of the centres of the sixteen bins of `f ∈ [√½, √2)` that the
    /// top four bits of its reduced mantissa pick (`1` for the bin holding `f = 1`, so
    /// that `ln u₁` keeps its relative accuracy as `u₁ → 1`), rounded to f32 (the
    /// tests recompute the tables).
    #[rustfmt::skip]
    pub(super) const LN_RECIP: [f32; 16] = from_bits([
        0x3fb1_1b17, 0x3fa9_c3f0, 0x3fa3_025b, 0x3f9c_c52b, 0x3f96_fdbc, 0x3f91_9f80,
        0x3f8c_9f9f, 0x3f87_f4b6, 0x3f83_9693, 0x3f80_0000, 0x3f6f_2613, 0x3f61_f4c2,
        0x3f56_2494, 0x3f4b_80e6, 0x3f41_df0e, 0x3f39_1c17,
    ]);
    /// `2 ln r_j`, rounded to f32.
    #[rustfmt::skip]
    pub(super) const TWO_LN_RECIP: [f32; 16] = from_bits([
        0x3f26_4153, 0x3f10_950b, 0x3ef7_943a, 0x3ecf_9de1, 0x3ea9_27d2, 0x3e84_1641,
        0x3e40_a06c, 0x3df6_fd78, 0x3d62_7bd5, 0x0000_0000, 0xbe0b_73b6, 0xbe7f_aa6d,
        0xbeb6_d19c, 0xbeeb_0087, 0xbf0e_53c5, 0xbf26_014d,
    ]);
    /// `sin(2πs/32)` for `s = 0 … 8`, rounded to f32; the whole turn follows by
    /// symmetry ([`SIN_32`], [`COS_32`]).
    #[rustfmt::skip]
    pub(super) const SIN_QUARTER: [f32; 9] = from_bits([
        0x0000_0000, 0x3e47_c5c2, 0x3ec3_ef15, 0x3f0e_39da, 0x3f35_04f3, 0x3f54_db31,
        0x3f6c_835e, 0x3f7b_14be, 0x3f80_0000,
    ]);
    /// `sin(2πs/32)`, `s = 0 … 31`.
    pub(super) const SIN_32: [f32; 32] = sin_turn(0);
    /// `cos(2πs/32) = sin(2π(s + 8)/32)`.
    pub(super) const COS_32: [f32; 32] = sin_turn(8);

    const fn from_bits<const N: usize>(bits: [u32; N]) -> [f32; N] {
        let mut out = [0.0; N];
        let mut i = 0;
        while i < N {
            out[i] = f32::from_bits(bits[i]);
            i += 1;
        }
        out
    }

    /// `sin(2π(s + shift)/32)` for `s = 0 … 31`, from the first quarter by symmetry
    /// (exact zeros and signs).
    const fn sin_turn(shift: usize) -> [f32; 32] {
        let mut out = [0.0; 32];
        let mut s = 0;
        while s < 32 {
            let q = (s + shift) % 32;
            out[s] = match q {
                0..=8 => SIN_QUARTER[q],
                9..=16 => SIN_QUARTER[16 - q],
                17..=24 => -SIN_QUARTER[q - 16],
                _ => -SIN_QUARTER[32 - q],
            };
            s += 1;
        }
        out
    }

    /// Lane `l` is `table[idx[l] mod 16]`: one `vpermd` with AVX-512.
    #[inline(always)]
    fn lookup16(table: &[f32; 16], idx: i32x16) -> f32x16 {
        #[cfg(all(
            any(target_arch = "x86", target_arch = "x86_64"),
            target_feature = "avx512f"
        ))]
        {
            use safe_arch::{m512i, permute_i32_m512i};
            cast(permute_i32_m512i(
                cast(idx),
                cast::<[f32; 16], m512i>(*table),
            ))
        }
        #[cfg(not(all(
            any(target_arch = "x86", target_arch = "x86_64"),
            target_feature = "avx512f"
        )))]
        {
            let idx = idx.to_array();
            f32x16::new(core::array::from_fn(|l| table[(idx[l] & 15) as usize]))
        }
    }

    /// Lane `l` is `table[idx[l] mod 32]`: one two-source `vpermt2d` with AVX-512.
    #[inline(always)]
    fn lookup32(table: &[f32; 32], idx: i32x16) -> f32x16 {
        #[cfg(all(
            any(target_arch = "x86", target_arch = "x86_64"),
            target_feature = "avx512f"
        ))]
        {
            use safe_arch::{m512i, permute2_i32_m512i};
            let [lo, hi]: [m512i; 2] = cast(*table);
            cast(permute2_i32_m512i(lo, cast(idx), hi))
        }
        #[cfg(not(all(
            any(target_arch = "x86", target_arch = "x86_64"),
            target_feature = "avx512f"
        )))]
        {
            let idx = idx.to_array();
            f32x16::new(core::array::from_fn(|l| table[(idx[l] & 31) as usize]))
        }
    }

    /// `x·2⁻³¹ = 2^e·f` with `f ∈ [√½, √2)`, from `x`'s bits: `(k, e, f)`, `k` the bits
    /// less those of `√½·2³¹` (its mantissa's top bits index the tables).
    #[inline(always)]
    pub(super) fn split_scaled(x: f32x16) -> (i32x16, f32x16, f32x16) {
        const SQRT_HALF_BITS: i32 = SQRT_HALF.to_bits() as i32;
        let bits: i32x16 = cast(x);
        let k = bits - i32x16::splat(SQRT_HALF_BITS + (31 << 23));
        let e = f32x16::from_i32x16(k >> 23u32);
        let f: f32x16 = cast((k & i32x16::splat(0x007f_ffff)) + i32x16::splat(SQRT_HALF_BITS));
        (k, e, f)
    }

    /// `−2 ln(x·2⁻³¹)` for `x ∈ [½, 2³¹]` (so `x·2⁻³¹ = u₁ ∈ [2⁻³², 1]`).
    ///
    /// `u₁ = 2^e·f` with `f ∈ [√½, √2)` (the factor 2⁻³¹ taken from the exponent
    /// field); the top four bits of `f`'s reduced mantissa pick `r_j ≈ 1/f`, so
    /// `t = f·r_j − 1 ∈ [−0.022, 0.040]` (one rounding, by FMA) and
    /// `−2 ln u₁ = −2e ln 2 + 2 ln r_j − 2 log1p(t)`, with `log1p` to the `t⁵` term
    /// (the next is below 10⁻⁹) and `ln 2` split as Cephes' `ln` splits it.
    #[inline(always)]
    pub(super) fn minus_two_ln_scaled(x: f32x16) -> f32x16 {
        let (k, e, f) = split_scaled(x);
        // The mantissa's top four bits are bits 19–22 of k; the lookups read the
        // index's low four bits.
        let j = k >> 19u32;
        let t = f.mul_add(lookup16(&LN_RECIP, j), f32x16::splat(-1.0));
        // −2 log1p(t) = −2t + t²(1 − ⅔t + ½t² − ⅖t³).
        let q = t
            .mul_add(f32x16::splat(-0.4), f32x16::splat(0.5))
            .mul_add(t, f32x16::splat(-2.0 / 3.0))
            .mul_add(t, f32x16::ONE);
        let y = (t * t).mul_sub(q, t + t);
        let y = e.mul_add(f32x16::splat(-2.0 * -2.121_944_4e-4), y) + lookup16(&TWO_LN_RECIP, j);
        e.mul_add(f32x16::splat(-2.0 * 0.693_359_4), y)
    }

    /// `(r cos φ, r sin φ)` for `φ = 2π·a/2²⁴`, `a ∈ [0, 2²⁴)`.
    ///
    /// The angle is the nearest of 32 sectors `s` plus a residual
    /// `x ∈ [−π/32, π/32)`, both exact in integers; `sin x` to the `x⁵` term and
    /// `cos x` to the `x⁴` term (the next terms are below 2·10⁻⁹), then the sector's
    /// tabled `sin` and `cos` rotate them.
    #[inline(always)]
    pub(super) fn polar(r: f32x16, a: i32x16) -> (f32x16, f32x16) {
        let s = (a + i32x16::splat(1 << 18)) >> 19u32;
        let x = f32x16::from_i32x16(a - (s << 19u32)) * f32x16::splat(super::TWO_PI_OVER_2_24);
        let z = x * x;
        let sin_x = (x * z).mul_add(
            z.mul_add(f32x16::splat(1.0 / 120.0), f32x16::splat(-1.0 / 6.0)),
            x,
        );
        let cos_x = z.mul_add(
            z.mul_add(f32x16::splat(1.0 / 24.0), f32x16::splat(-0.5)),
            f32x16::ONE,
        );
        // The sector's sin and cos times r; the lookups read the index's low five bits
        // (sector 32 is sector 0).
        let (rs, rc) = (r * lookup32(&SIN_32, s), r * lookup32(&COS_32, s));
        (rc.mul_sub(cos_x, rs * sin_x), rs.mul_add(cos_x, rc * sin_x))
    }
}

/// Vector `ln` and `sin`/`cos` without tables, for targets where a lookup is one lane
/// at a time: the arguments reduced exactly by integer arithmetic as in [`vector`] but
/// to wider ranges: `ln` by the series of `atanh`, `sin` and `cos` by Cephes'
/// single-precision polynomials on `[−π/4, π/4]` (Moshier 1989), each within about an
/// ulp.
mod polynomial {
    use wide::bytemuck::cast;
    use wide::{f32x16, i32x16};

    #[inline(always)]
    fn splat(x: f32) -> f32x16 {
        f32x16::splat(x)
    }

    /// `−2 ln(x·2⁻³¹)` for `x ∈ [½, 2³¹]`, as [`super::vector::minus_two_ln_scaled`]:
    /// `u₁ = 2^e·f` with `f ∈ [√½, √2)`, `ln f = 2 atanh s` with `s = (f − 1)/(f + 1)`,
    /// `|s| ≤ 0.172`, by its series to the `s⁹` term (the next is below 3·10⁻⁹ of it; a
    /// division is one operation on the targets this serves), and `ln 2` split as Cephes
    /// splits it. Exactly 0 at `u₁ = 1` and positive below: never negative.
    #[inline(always)]
    pub(super) fn minus_two_ln_scaled(x: f32x16) -> f32x16 {
        let (_, e, f) = super::vector::split_scaled(x);
        let s = (f - f32x16::ONE) / (f + f32x16::ONE);
        let w = s * s;
        // −2 ln f = −4s·(1 + w/3 + w²/5 + w³/7 + w⁴/9).
        let q = w
            .mul_add(splat(1.0 / 9.0), splat(1.0 / 7.0))
            .mul_add(w, splat(1.0 / 5.0))
            .mul_add(w, splat(1.0 / 3.0))
            .mul_add(w, f32x16::ONE);
        let y = e.mul_add(splat(-2.0 * -2.121_944_4e-4), (s * splat(-4.0)) * q);
        e.mul_add(splat(-2.0 * 0.693_359_4), y)
    }

    /// `(r cos φ, r sin φ)` for `φ = 2π·a/2²⁴`, `a ∈ [0, 2²⁴)`: the quarter turn `k`
    /// and residual `x ∈ [−π/4, π/4)` of the scalar twin's reduction, Cephes' `sinf`
    /// and `cosf` polynomials on `x`, and the rotation by `k` as selects and sign flips.
    #[inline(always)]
    pub(super) fn polar(r: f32x16, a: i32x16) -> (f32x16, f32x16) {
        let k = (a + i32x16::splat(1 << 21)) >> 22u32;
        let x = f32x16::from_i32x16(a - (k << 22u32)) * splat(super::TWO_PI_OVER_2_24);
        let z = x * x;
        let sin_x = (x * z).mul_add(
            z.mul_add(
                z.mul_add(splat(-1.951_529_6e-4), splat(8.332_161e-3)),
                splat(-1.666_665_5e-1),
            ),
            x,
        );
        let cos_p = z.mul_add(
            z.mul_add(splat(2.443_315_7e-5), splat(-1.388_731_6e-3)),
            splat(4.166_664_6e-2),
        );
        let cos_x = (z * z).mul_add(cos_p, z.mul_add(splat(-0.5), f32x16::ONE));
        // (cos φ, sin φ) is (c, s), (−s, c), (−c, −s), (s, −c) for k = 0, 1, 2, 3 (mod 4):
        // odd k swaps, k ∈ {1, 2} negates the cosine, k ∈ {2, 3} the sine.
        let swap: f32x16 = cast(i32x16::ZERO - (k & i32x16::ONE));
        let (c, s) = (swap.bitselect(sin_x, cos_x), swap.bitselect(cos_x, sin_x));
        let flip_c: f32x16 = cast(((k + i32x16::ONE) & i32x16::splat(2)) << 30u32);
        let flip_s: f32x16 = cast((k & i32x16::splat(2)) << 30u32);
        ((r ^ flip_c) * c, (r ^ flip_s) * s)
    }
}

/// [`vector`]'s arithmetic on one pair: the same operations in the same order, each
/// `mul_add` as a multiply and an add.
mod lanes {
    use super::vector::{COS_32, LN_RECIP, SIN_32, SQRT_HALF, TWO_LN_RECIP};
    use super::{TWO_PI_OVER_2_24, WORDS};

    /// Pair `j` of a block from its 32 little-endian halves (see the module docs): the
    /// radius from half `j`, the angle from half `16 + j`.
    #[inline(always)]
    pub(super) fn pair(halves: &[[u8; 4]], j: usize) -> (f32, f32) {
        let half = |i: usize| halves.get(i).map_or(0, |h| u32::from_le_bytes(*h));
        let rb = (half(j) >> 1) as i32;
        let ab = (half(WORDS + j) >> 8) as i32;
        let u = rb as f32 + 0.5;
        let y = minus_two_ln_scaled(u);
        // `max(y, 0)` (y is never NaN here).
        let r = crate::math::sqrt(if y > 0.0 { y } else { 0.0 });
        polar(r, ab)
    }

    /// The first `out.len()` (at most 32) normals of a block in the pairwise order of a
    /// partial block: `[c₀, s₀, c₁, s₁, …]`.
    pub(super) fn write_pairwise(halves: &[[u8; 4]], out: &mut [f32]) {
        for (j, p) in out.chunks_mut(2).enumerate() {
            let (c, s) = pair(halves, j);
            p[0] = c;
            if let Some(x) = p.get_mut(1) {
                *x = s;
            }
        }
    }

    /// [`super::vector::minus_two_ln_scaled`] on one value.
    #[inline(always)]
    fn minus_two_ln_scaled(x: f32) -> f32 {
        const SQRT_HALF_BITS: i32 = SQRT_HALF.to_bits() as i32;
        let k = (x.to_bits() as i32).wrapping_sub(SQRT_HALF_BITS + (31 << 23));
        let e = (k >> 23) as f32;
        let f = f32::from_bits(((k & 0x007f_ffff) + SQRT_HALF_BITS) as u32);
        let j = ((k >> 19) & 15) as usize;
        let t = f * LN_RECIP[j] - 1.0;
        let q = ((t * -0.4 + 0.5) * t + -2.0 / 3.0) * t + 1.0;
        let y = (t * t) * q - (t + t);
        let y = e * (-2.0 * -2.121_944_4e-4) + y + TWO_LN_RECIP[j];
        e * (-2.0 * 0.693_359_4) + y
    }

    /// [`super::vector::polar`] on one pair.
    #[inline(always)]
    fn polar(r: f32, a: i32) -> (f32, f32) {
        let s = (a + (1 << 18)) >> 19;
        let x = (a - (s << 19)) as f32 * TWO_PI_OVER_2_24;
        let z = x * x;
        let sin_x = (x * z) * (z * (1.0 / 120.0) + -1.0 / 6.0) + x;
        let cos_x = z * (z * (1.0 / 24.0) + -0.5) + 1.0;
        let sector = (s & 31) as usize;
        let (rs, rc) = (r * SIN_32[sector], r * COS_32[sector]);
        (rc * cos_x - rs * sin_x, rs * cos_x + rc * sin_x)
    }
}

/// Scalar twins of the noise kernels.
pub mod reference {
    use super::*;

    /// One Box–Muller pair `(r cos φ, r sin φ)` from its radius half and its angle half
    /// (see the module docs), with libm.
    #[inline]
    pub fn pair(radius: u32, angle: u32) -> (f32, f32) {
        let u1 = (radius_bits(radius) as f32 + 0.5) * TWO_POW_M31;
        let r = libm::sqrtf((-2.0 * libm::logf(u1)).max(0.0));
        let (k, x) = quadrant(angle_bits(angle));
        let (s, c) = libm::sincosf(x as f32 * TWO_PI_OVER_2_24);
        let (s, c) = rotate(k, s, c);
        (r * c, r * s)
    }

    /// Pair `j` of a block's sixteen words.
    fn block_pair(w: &[u64; WORDS], j: usize) -> (f32, f32) {
        pair(half(w, j), half(w, WORDS + j))
    }

    /// The scalar twin of [`super::fill_normal`]: same words, same layout, libm math.
    pub fn fill_normal<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32]) {
        let mut blocks = out.chunks_exact_mut(2 * WORDS);
        for block in &mut blocks {
            let w = words(rng);
            let (cos_half, sin_half) = block.split_at_mut(WORDS);
            for (j, (c, s)) in cos_half.iter_mut().zip(sin_half.iter_mut()).enumerate() {
                (*c, *s) = block_pair(&w, j);
            }
        }
        let rest = blocks.into_remainder();
        if !rest.is_empty() {
            let w = words(rng);
            for (j, p) in rest.chunks_mut(2).enumerate() {
                let (c, s) = block_pair(&w, j);
                p[0] = c;
                if let Some(x) = p.get_mut(1) {
                    *x = s;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Bits = heapless::Vec<u32, { 2 * WORDS }>;

    /// The tables are what their docs say, recomputed in f64 and rounded once.
    #[test]
    fn tables_are_their_definitions() {
        let sqrt_half_bits = vector::SQRT_HALF.to_bits();
        assert_eq!(vector::SQRT_HALF, core::f32::consts::FRAC_1_SQRT_2);
        for j in 0..16u32 {
            let lo = f32::from_bits(sqrt_half_bits + (j << 19)) as f64;
            let hi = f32::from_bits(sqrt_half_bits + ((j + 1) << 19)) as f64;
            let r = if lo <= 1.0 && 1.0 < hi {
                1.0
            } else {
                (2.0 / (lo + hi)) as f32
            };
            assert_eq!(vector::LN_RECIP[j as usize], r, "r_{j}");
            let two_ln = (2.0 * libm::log(r as f64)) as f32;
            assert_eq!(vector::TWO_LN_RECIP[j as usize], two_ln, "2 ln r_{j}");
            // Every f of the bin gives |f·r − 1| ≤ 0.04.
            assert!((lo * r as f64 - 1.0).abs() < 0.04 && (hi * r as f64 - 1.0).abs() < 0.04);
        }
        for s in 0..32 {
            let phi = core::f64::consts::TAU * s as f64 / 32.0;
            let near =
                |got: f32, want: f64| (got as f64 - want).abs() <= 1e-15 || got == want as f32;
            assert!(near(vector::SIN_32[s], libm::sin(phi)), "sin, sector {s}");
            assert!(near(vector::COS_32[s], libm::cos(phi)), "cos, sector {s}");
        }
    }

    /// The table-free `−2 ln u₁` is never negative (its √ needs no clamp) and within 3
    /// ulps of the exact value of its f32 input, over the whole range of radius bits:
    /// both ends and a sweep through every binade.
    #[test]
    fn polynomial_ln_is_accurate_and_never_negative() {
        let check = |rb: u32| {
            let u = radius_bits(rb << 1) as f32 + 0.5;
            let y = polynomial::minus_two_ln_scaled(f32x16::splat(u)).to_array()[0];
            let exact = -2.0 * libm::log(u as f64 * TWO_POW_M31 as f64);
            assert!(y >= 0.0 && y.is_sign_positive(), "rb {rb}: {y}");
            let ulp = f32::EPSILON as f64 * exact.max(f32::MIN_POSITIVE as f64);
            assert!(
                (y as f64 - exact).abs() <= 3.0 * ulp,
                "rb {rb}: {y} vs {exact}"
            );
        };
        for rb in (0..4096).chain((1 << 31) - 4096..1 << 31) {
            check(rb);
        }
        let mut rb = 1u32;
        while rb < 1 << 31 {
            check(rb);
            rb += rb / 4099 + 1;
        }
    }

    /// A pool block's every prefix is what `fill_normal` draws for its length, bit for
    /// bit, and (Box–Muller's fixed sixteen words a block) the generator ends where that
    /// fill leaves it, so a chain drawing from the pool gets the same normals as one
    /// drawing each step's directly.
    #[test]
    fn pairwise_block_prefixes_are_short_fills() {
        for seed in 0..8 {
            let mut pool = [0.0f32; 2 * WORDS];
            let mut a = default_rng(seed);
            fill_block_pairwise(&mut a, &mut pool);
            for len in 1..2 * WORDS {
                let mut b = default_rng(seed);
                let mut z = [0.0f32; 2 * WORDS];
                fill_normal(&mut b, &mut z[..len]);
                let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Bits>();
                assert_eq!(bits(&pool[..len]), bits(&z[..len]), "seed {seed}, {len}");
                // The ziggurat takes a word an attempt, so the generator's position
                // after a pool block and after a short fill differ there.
                if !cfg!(sgld_soft_float) {
                    assert_eq!(a.clone().next_u64(), b.next_u64(), "seed {seed}, {len}");
                }
            }
        }
    }
}
