//! The SIMD kernels, written with `wide::f32x16`.
//!
//! Each function here has a scalar twin of the same name in [`super::reference`]; tests
//! and fuzz targets compare the two. Like the twins, these functions trust their
//! input: where slices differ in length they work on the common prefix, and out-of-range
//! sparse indices are skipped, so they never panic. The checked entry points are in
//! [`crate::kernels`].
//!
//! Layout of the dense kernels: a body of four independent vectors per iteration
//! (64 floats), then single vectors, then a scalar tail; the reductions (`dot`,
//! `all_finite`) instead take their tail as one more vector, the last sixteen elements
//! with the lanes already counted masked off, so a short tail is not a chain of
//! dependent scalar adds.
//!
//! By family: `dense` (dot, axpy, sigmoid, f64 dot and axpy), `sparse` (rows as index
//! lists and as bitmaps), `langevin` (the update of eq. 4 and eq. 9), `rows` (the ICA
//! step's matrix products and dots of rows), `project` (projections held in registers,
//! `tanh(y/2)`), `batch` (batch indices); this file holds what they share: loads,
//! stores, the finiteness check and the tail pieces. All are re-exported here, so every
//! kernel's path is `kernels::simd::NAME`.

use super::{SparseIndex, StepCheck};
use wide::bytemuck::cast;
use wide::{f32x4, f32x16, i32x16};

mod batch;
mod dense;
mod langevin;
mod project;
mod rows;
mod sparse;

pub use batch::*;
pub use dense::*;
pub use langevin::*;
pub use project::*;
pub use rows::*;
pub use sparse::*;

/// Floats per SIMD vector.
pub const LANES: usize = 16;
const BLOCK: usize = 4 * LANES;

#[inline(always)]
fn load(chunk: &[f32]) -> f32x16 {
    // `From<&[f32]>` zero-fills short slices and asserts `len <= 16`; every caller
    // passes a chunk of exactly `LANES` floats, so it never fails.
    f32x16::from(chunk)
}

#[inline(always)]
fn store(v: f32x16, out: &mut [f32]) {
    // One 512-bit store where there are sixteen floats: the compiler's own copy of a
    // vector's sixteen floats is two 256-bit halves, the upper one extracted on the
    // shuffle port.
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    ))]
    if let Some(o) = out.first_chunk_mut::<16>() {
        safe_arch::store_m512(o, cast(v));
        return;
    }
    for (o, x) in out.iter_mut().zip(v.to_array()) {
        *o = x;
    }
}

/// An input and an output cut to their common length: the element-wise kernels
/// step through both in whole vectors, and each one's remainder must start where
/// the other's does.
#[inline(always)]
fn common2<'a, 'b, T, U>(x: &'a [T], y: &'b mut [U]) -> (&'a [T], &'b mut [U]) {
    let n = x.len().min(y.len());
    (&x[..n], &mut y[..n])
}

/// True when every value is finite (no NaN, no ±∞).
///
/// Branch-free past the first vector: `x·0` is `±0` for finite `x` and NaN otherwise,
/// so the sum of those products is `0` exactly when all values are finite.
pub fn all_finite(xs: &[f32]) -> bool {
    if xs.len() < LANES {
        return xs.iter().all(|x| x.is_finite());
    }
    let mut acc = f32x16::ZERO;
    for x in xs.chunks_exact(LANES) {
        acc += load(x) * f32x16::ZERO;
    }
    if !xs.len().is_multiple_of(LANES) {
        // The last sixteen values (some checked twice, which changes nothing).
        acc += load(&xs[xs.len() - LANES..]) * f32x16::ZERO;
    }
    acc.reduce_add() == 0.0
}

/// `v` into `xs`: one 512-bit store when `xs` holds sixteen floats or more (the first
/// sixteen), lanes `0..xs.len()` in the pieces of [`tail`] when it holds fewer.
#[cfg(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx512f"
))]
#[inline(always)]
pub(crate) fn store_or_tail(v: f32x16, xs: &mut [f32]) {
    if xs.len() >= LANES {
        store(v, xs);
    } else if !xs.is_empty() {
        tail::store(v, xs);
    }
}

/// The last `rem < 16` floats of a slice as one vector, moved in fixed pieces: with
/// AVX-512, floats `0..8` as one 256-bit access when `rem ≥ 8`, each further whole
/// group of four as one 128-bit access, and the floats of a last partial group one at
/// a time; lanes from `rem` on are zero. A kernel that stores a tail with `store` and
/// one that loads it with `load` move the same pieces, so every load reads from
/// exactly one store: a load that spans two stores (the last sixteen floats read after
/// the loop's last vector and an overlapping tail were stored) cannot take its value
/// from them and waits until both reach the cache. Other targets copy through a
/// padded array.
#[cfg(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx512f"
))]
mod tail {
    use super::*;
    use safe_arch::{m128, m256};

    /// `$body` with the const `$r` set to `$len` for lengths 1 to 15, so each length
    /// gets its own fixed pieces; `$other` for any other length.
    macro_rules! by_len {
        ($len:expr, $r:ident => $body:expr, _ => $other:expr) => {
            by_len!(@arms $len, $r, $body, $other, 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
        };
        (@arms $len:expr, $r:ident, $body:expr, $other:expr, $($n:literal)*) => {
            match $len {
                $($n => {
                    const $r: usize = $n;
                    $body
                })*
                _ => $other,
            }
        };
    }

    /// `xs` (fewer than sixteen floats) in lanes `0..xs.len()`, zeros above.
    #[inline(always)]
    pub(super) fn load(xs: &[f32]) -> f32x16 {
        by_len!(xs.len(), R => xs.first_chunk::<R>().map_or(f32x16::ZERO, load_n::<R>),
            _ => f32x16::new(padded16(xs)))
    }

    /// Stores lanes `0..xs.len()` of `v` into `xs` (fewer than sixteen floats).
    #[inline(always)]
    pub(super) fn store(v: f32x16, xs: &mut [f32]) {
        by_len!(xs.len(), R => if let Some(o) = xs.first_chunk_mut::<R>() {
            store_n::<R>(v, o)
        }, _ => crate::kernels::copy(xs, &v.to_array()))
    }

    /// Group `q` (floats `4q..4q + 4`) of `xs`: one 128-bit load when whole, the floats
    /// one at a time when partial, zeros past the end.
    #[inline(always)]
    fn load_quad<const R: usize>(xs: &[f32; R], q: usize) -> m128 {
        use safe_arch::{load_unaligned_m128, set_m128, zeroed_m128};
        match xs.get(4 * q..).unwrap_or(&[]) {
            [a, b, c, d, ..] => load_unaligned_m128(&[*a, *b, *c, *d]),
            [a, b, c] => set_m128(0.0, *c, *b, *a),
            [a, b] => set_m128(0.0, 0.0, *b, *a),
            [a] => set_m128(0.0, 0.0, 0.0, *a),
            [] => zeroed_m128(),
        }
    }

    #[inline(always)]
    fn load_n<const R: usize>(xs: &[f32; R]) -> f32x16 {
        use safe_arch::{load_unaligned_m256, set_m128_m256};
        let lo: m256 = match xs.first_chunk::<8>() {
            Some(eight) => load_unaligned_m256(eight),
            None => set_m128_m256(load_quad(xs, 1), load_quad(xs, 0)),
        };
        let hi = set_m128_m256(load_quad(xs, 3), load_quad(xs, 2));
        join(cast(lo), cast(hi))
    }

    /// Stores group `q` of `v`'s lanes into `xs` as [`load_quad`] reads it.
    #[inline(always)]
    fn store_quad<const R: usize>(quad: m128, xs: &mut [f32; R], q: usize) {
        use safe_arch::store_unaligned_m128;
        let part = xs.get_mut(4 * q..).unwrap_or(&mut []);
        if let Some(whole) = part.first_chunk_mut::<4>() {
            store_unaligned_m128(whole, quad);
        } else {
            for (o, x) in part.iter_mut().zip(quad.to_array()) {
                *o = x;
            }
        }
    }

    #[inline(always)]
    fn store_n<const R: usize>(v: f32x16, xs: &mut [f32; R]) {
        use safe_arch::{
            cast_to_m128_from_m256, extract_m128_from_m256, extract_m256_from_m512, m512,
            store_unaligned_m256,
        };
        let m: m512 = cast(v);
        let (lo, hi) = (
            extract_m256_from_m512::<0>(m),
            extract_m256_from_m512::<1>(m),
        );
        match xs.first_chunk_mut::<8>() {
            Some(eight) => store_unaligned_m256(eight, lo),
            None => {
                store_quad(cast_to_m128_from_m256(lo), xs, 0);
                store_quad(extract_m128_from_m256::<1>(lo), xs, 1);
            }
        }
        store_quad(cast_to_m128_from_m256(hi), xs, 2);
        store_quad(extract_m128_from_m256::<1>(hi), xs, 3);
    }
}

/// [`tail`] where there are no 512-bit registers: no pieces to match, a padded copy.
#[cfg(not(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx512f"
)))]
mod tail {
    use super::*;

    /// `xs` (fewer than sixteen floats) in lanes `0..xs.len()`, zeros above.
    #[inline(always)]
    pub(super) fn load(xs: &[f32]) -> f32x16 {
        f32x16::new(padded16(xs))
    }

    /// Stores lanes `0..xs.len()` of `v` into `xs` (fewer than sixteen floats).
    #[inline(always)]
    pub(super) fn store(v: f32x16, xs: &mut [f32]) {
        crate::kernels::copy(xs, &v.to_array())
    }
}
