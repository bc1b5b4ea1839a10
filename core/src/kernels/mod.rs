//! Pure numeric kernels on caller slices: dot, axpy, sparse-binary gather and scatter
//! (rows as index lists or as bitmaps), and the fused Langevin update (eq. 4, and eq. 9
//! with a diagonal preconditioner).
//!
//! The functions at this level check lengths (and sparse indices) once and return
//! [`Error`] on a mismatch; they then call the SIMD implementation in [`simd`], or its
//! scalar twin in [`reference`](mod@reference) when the crate is built with `--cfg sgld_force_scalar`
//! or for a target where `wide` has no SIMD backend (a Cortex-M, RISC-V, 32-bit ARM).
//!
//! # Numerical contract
//!
//! With `u = 2⁻²⁴` (f32 unit roundoff) and `n` the length:
//!
//! * **dot**, **sparse_dot**, **bitmap_dots** sum in a different order from the twin
//!   (several accumulators, fused multiply-add where the target has FMA). Both satisfy the standard bound
//!   `|ŝ − s| ≤ γₙ · Σ|aᵢbᵢ|` with `γₙ = n·u / (1 − n·u)`, so they differ from each other
//!   by at most `2γₙ · Σ|aᵢbᵢ|`.
//! * **axpy** and the **Langevin updates** are element-wise; with FMA each element is
//!   rounded once or twice instead of two or three times, so an element differs from the
//!   twin by at most `2u · (Σ |terms|)`.
//! * **sparse_axpy**, **bitmap_axpys** add to each element in the twin's order: they
//!   agree with it bit for bit.
//! * **NaN policy**: IEEE propagation, no checks inside the kernels: a NaN input gives
//!   NaN in every output it reaches; `∞ − ∞` gives NaN. The sampler checks finiteness
//!   around the kernels, not the kernels themselves.

pub mod reference;
pub mod simd;

use crate::error::{Error, check_len};

// The scalar twins also serve targets where `wide` has no SIMD backend (see build.rs):
// there they are plain loops, where the SIMD kernels would be `wide`'s lane-by-lane
// emulation.
#[cfg(not(any(sgld_force_scalar, sgld_scalar_target)))]
pub(crate) use simd as imp;

#[cfg(any(sgld_force_scalar, sgld_scalar_target))]
pub(crate) use reference as imp;

pub use simd::LANES;

/// What [`simd::langevin_step_checked`] (and its twin) report of the step it took: the
/// sums a sampler reports as norms, and the check it makes before keeping the step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepCheck {
    /// `Σ ηᵢ²` of the noise read.
    pub noise_sq: f32,
    /// `Σ gᵢ²` of the gradient read.
    pub grad_sq: f32,
    /// Whether every new `θᵢ` is finite.
    pub finite: bool,
}

/// A sparse feature index: `u8` (up to 256 features), `u16` (up to 65,536) or `u32`.
///
/// Sparse rows are gathered at random, so their size in cache is their cost: a data set
/// stored with the narrowest type that holds its features moves fewer bytes per row (a9a's
/// 124 features fit `u8`, a quarter of the `u32` rows).
pub trait SparseIndex: Copy + core::fmt::Debug + sealed::Sealed {
    /// The index as a `usize`.
    fn index(self) -> usize;
    /// Index 0.
    const ZERO: Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
}

macro_rules! sparse_index {
    ($($t:ty),*) => {$(
        impl SparseIndex for $t {
            #[inline(always)]
            fn index(self) -> usize {
                self as usize
            }
            const ZERO: Self = 0;
        }
    )*};
}
sparse_index!(u8, u16, u32);

/// True when the crate dispatches to the scalar twins (`--cfg sgld_force_scalar`, or a
/// target without a SIMD backend).
pub const FORCE_SCALAR: bool = cfg!(any(sgld_force_scalar, sgld_scalar_target));

/// Dot product `Σ aᵢ·bᵢ`.
///
/// ```
/// let s = sgld::kernels::dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0])?;
/// assert_eq!(s, 32.0);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn dot(a: &[f32], b: &[f32]) -> Result<f32, Error> {
    check_len("b", a.len(), b.len())?;
    Ok(imp::dot(a, b))
}

/// `y ← y + α·x`.
pub fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) -> Result<(), Error> {
    check_len("y", x.len(), y.len())?;
    imp::axpy(alpha, x, y);
    Ok(())
}

/// Checks that every sparse index is below `len`.
pub fn check_indices<I: SparseIndex>(idx: &[I], len: usize) -> Result<(), Error> {
    match idx.iter().find(|&&j| j.index() >= len) {
        Some(&j) => Err(Error::IndexOutOfRange {
            index: j.index(),
            len,
        }),
        None => Ok(()),
    }
}

/// Dot product of a sparse binary row (its non-zero feature indices, 0-based) with `w`:
/// `Σ_{j ∈ idx} w[j]`. This is `βᵀx` for a LIBSVM row whose values are all 1 (a9a).
///
/// ```
/// let w = [0.5, -1.0, 2.0, 4.0];
/// assert_eq!(sgld::kernels::sparse_dot(&[0, 2], &w)?, 2.5);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn sparse_dot(idx: &[u32], w: &[f32]) -> Result<f32, Error> {
    check_indices(idx, w.len())?;
    Ok(imp::sparse_dot(idx, w))
}

/// Scatter-add of a scaled sparse binary row: `y[j] ← y[j] + α` for `j ∈ idx`
/// (a repeated index is added once per occurrence).
pub fn sparse_axpy(alpha: f32, idx: &[u32], y: &mut [f32]) -> Result<(), Error> {
    check_indices(idx, y.len())?;
    imp::sparse_axpy(alpha, idx, y);
    Ok(())
}

/// Checks that a bitmap row (bit `j % 16` of word `j / 16` is feature `j`) sets no bit
/// at or past `len`.
pub fn check_bitmap(row: &[u16], len: usize) -> Result<(), Error> {
    for (i, &w) in row.iter().enumerate() {
        let first = 16 * i;
        // The bits of this word that name features `≥ len`.
        let outside = match len.saturating_sub(first) {
            0 => w,
            k if k < 16 => w >> k << k,
            _ => 0,
        };
        if outside != 0 {
            return Err(Error::IndexOutOfRange {
                index: first + outside.trailing_zeros() as usize,
                len,
            });
        }
    }
    Ok(())
}

/// Checks a table of bitmap rows (`stride ≥ 1` words each, a whole number of them) and
/// the rows `rows` of it: each held by the table, and none setting a bit at or past
/// `len`.
fn check_bitmap_rows(
    table: &[u16],
    stride: usize,
    rows: &[usize],
    len: usize,
) -> Result<(), Error> {
    if stride == 0 {
        return Err(Error::Empty {
            what: "bitmap row stride",
        });
    }
    if !table.len().is_multiple_of(stride) {
        return Err(Error::InvalidParameter {
            what: "bitmap table: its length must be a multiple of the stride",
        });
    }
    let n = table.len() / stride;
    for &i in rows {
        match table
            .get(i.saturating_mul(stride)..)
            .and_then(|r| r.get(..stride))
        {
            Some(row) if i < n => check_bitmap(row, len)?,
            _ => return Err(Error::IndexOutOfRange { index: i, len: n }),
        }
    }
    Ok(())
}

/// Dot products of binary rows stored as bitmaps with `w`: `out[k] = Σ w[j]` over the
/// bits `j` set in row `rows[k]` of `table`, whose rows are `stride` words each and
/// whose feature `j` is bit `j % 16` of a row's word `j / 16`. This is `βᵀxₖ` for the
/// rows of a batch whose values are all 0 or 1.
///
/// ```
/// let w = [0.5, -1.0, 2.0, 4.0];
/// let table = [0b0101u16, 0b1010]; // two rows of one word: features {0, 2} and {1, 3}
/// let mut out = [0.0; 3];
/// sgld::kernels::bitmap_dots(&table, 1, &[1, 0, 1], &w, &mut out)?;
/// assert_eq!(out, [3.0, 2.5, 3.0]);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn bitmap_dots(
    table: &[u16],
    stride: usize,
    rows: &[usize],
    w: &[f32],
    out: &mut [f32],
) -> Result<(), Error> {
    check_len("out", rows.len(), out.len())?;
    check_bitmap_rows(table, stride, rows, w.len())?;
    imp::bitmap_dots(table, stride, rows, w, out);
    Ok(())
}

/// Scatter-adds of scaled binary rows stored as bitmaps: `y[j] ← y[j] + alphas[k]` for
/// every bit `j` set in row `rows[k]` of `table` (laid out as in [`bitmap_dots`]).
///
/// ```
/// let table = [0b0101u16, 0b0110]; // features {0, 2} and {1, 2}
/// let mut y = [0.0; 3];
/// sgld::kernels::bitmap_axpys(&[1.0, 10.0], &table, 1, &[0, 1], &mut y)?;
/// assert_eq!(y, [1.0, 10.0, 11.0]);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn bitmap_axpys(
    alphas: &[f32],
    table: &[u16],
    stride: usize,
    rows: &[usize],
    y: &mut [f32],
) -> Result<(), Error> {
    check_len("alphas", rows.len(), alphas.len())?;
    check_bitmap_rows(table, stride, rows, y.len())?;
    imp::bitmap_axpys(alphas, table, stride, rows, y);
    Ok(())
}

/// The fused Langevin update of eq. 4, in place: `θ ← θ + (ε/2)·g + √ε·η`, with `η` a
/// slice of standard normals. The step size `ε` must be finite and positive.
///
/// ```
/// let mut theta = [0.0f32; 3];
/// sgld::kernels::langevin_update(&mut theta, &[1.0, 2.0, 3.0], &[0.0; 3], 0.5)?;
/// assert_eq!(theta, [0.25, 0.5, 0.75]);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn langevin_update(
    theta: &mut [f32],
    grad: &[f32],
    noise: &[f32],
    eps: f32,
) -> Result<(), Error> {
    crate::error::check_step_size(eps as f64)?;
    check_len("grad", theta.len(), grad.len())?;
    check_len("noise", theta.len(), noise.len())?;
    imp::langevin_update(theta, grad, noise, 0.5 * eps, libm::sqrtf(eps));
    Ok(())
}

/// The Langevin proposal of eq. 4 out of place: on return `noise` holds
/// `θ + (ε/2)·g + √ε·η` and `θ` is untouched, so a caller can inspect (or reject) the
/// proposal before accepting it.
pub fn langevin_propose(
    theta: &[f32],
    grad: &[f32],
    noise: &mut [f32],
    eps: f32,
) -> Result<(), Error> {
    crate::error::check_step_size(eps as f64)?;
    check_len("grad", theta.len(), grad.len())?;
    check_len("noise", theta.len(), noise.len())?;
    imp::langevin_propose(theta, grad, noise, 0.5 * eps, libm::sqrtf(eps));
    Ok(())
}

/// The preconditioned Langevin update of eq. 9 with a diagonal preconditioner `M`,
/// in place: `θ ← θ + (ε/2)·M·g + √ε·M^½·η`. Every `Mᵢᵢ` must be finite and `≥ 0`.
pub fn langevin_update_precond(
    theta: &mut [f32],
    grad: &[f32],
    noise: &[f32],
    m: &[f32],
    eps: f32,
) -> Result<(), Error> {
    crate::error::check_step_size(eps as f64)?;
    check_len("grad", theta.len(), grad.len())?;
    check_len("noise", theta.len(), noise.len())?;
    check_len("preconditioner", theta.len(), m.len())?;
    if !m.iter().all(|&x| x.is_finite() && x >= 0.0) {
        return Err(Error::InvalidParameter {
            what: "preconditioner entries must be finite and >= 0",
        });
    }
    imp::langevin_update_precond(theta, grad, noise, m, 0.5 * eps, libm::sqrtf(eps));
    Ok(())
}

/// `dst ← src` over their common length. Up to thirty-two values take two overlapping
/// fixed-size moves instead of a call to the C library's `memcpy`, which costs more
/// than the copy for the few parameters of a small model's step.
#[inline(always)]
pub(crate) fn copy<T: Copy>(dst: &mut [T], src: &[T]) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    match n {
        0 => {}
        1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        4..=8 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        9..=16 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        17..=32 => {
            dst[..16].copy_from_slice(&src[..16]);
            dst[n - 16..].copy_from_slice(&src[n - 16..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// `xs ← 0`, with [`copy`]'s short path for up to sixteen floats.
#[inline(always)]
pub(crate) fn zero(xs: &mut [f32]) {
    const ZEROS: [f32; 16] = [0.0; 16];
    if xs.len() <= 16 {
        let n = xs.len();
        copy(xs, &ZEROS[..n]);
    } else {
        xs.fill(0.0);
    }
}

/// `xs ← s·xs`, two floats at a time: a two-parameter model's gradient is then one
/// 8-byte load and store, as the model's own paired code reads and writes it (two
/// 4-byte stores read back as one 8-byte load would stall store forwarding).
#[inline(always)]
pub(crate) fn scale(xs: &mut [f32], s: f32) {
    let (pairs, tail) = xs.as_chunks_mut::<2>();
    for p in pairs {
        *p = [p[0] * s, p[1] * s];
    }
    for x in tail {
        *x *= s;
    }
}

/// True when every value of `xs` is finite (no NaN, no ±∞).
pub fn all_finite(xs: &[f32]) -> bool {
    imp::all_finite(xs)
}

/// Asks the cache for every 64-byte line of `xs` (a hint: `prefetcht0` on x86 with SSE,
/// nothing elsewhere): for data read soon, such as the next mini-batch's rows. It never
/// faults, reads nothing the caller sees, and changes no value.
#[inline]
pub fn prefetch<T>(xs: &[T]) {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "sse"
    ))]
    {
        let step = (64 / core::mem::size_of::<T>().max(1)).max(1);
        for x in xs.iter().step_by(step) {
            safe_arch::prefetch_t0(x);
        }
        // The last line too, where the slice does not start on a line.
        if let Some(last) = xs.last() {
            safe_arch::prefetch_t0(last);
        }
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "sse"
    )))]
    let _ = xs;
}

#[cfg(test)]
mod tests {
    /// The unchecked sparse kernels (both twins) give the checked ones' results bit for
    /// bit on rows in range, of every length up to 21 and every start.
    #[test]
    fn in_bounds_sparse_kernels_equal_the_checked_ones() {
        use super::{reference as r, simd as s};
        let w: [f32; 40] = core::array::from_fn(|i| (i as f32 * 0.37).sin() * 10.0);
        let idx: [u8; 21] = core::array::from_fn(|i| ((i * 17 + 3) % 40) as u8);
        for start in 0..idx.len() {
            for end in start..=idx.len() {
                let row = &idx[start..end];
                // SAFETY: every index is below 40, the length of `w` and of `y`.
                #[allow(unsafe_code)]
                let (a, b) = unsafe {
                    (
                        r::sparse_dot_in_bounds(row, &w),
                        s::sparse_dot_in_bounds(row, &w),
                    )
                };
                assert_eq!(a.to_bits(), r::sparse_dot(row, &w).to_bits());
                assert_eq!(b.to_bits(), s::sparse_dot(row, &w).to_bits());
                let (mut y1, mut y2, mut y3) = (w, w, w);
                r::sparse_axpy(0.3, row, &mut y1);
                #[allow(unsafe_code)]
                // SAFETY: as above.
                unsafe {
                    r::sparse_axpy_in_bounds(0.3, row, &mut y2);
                    s::sparse_axpy_in_bounds(0.3, row, &mut y3);
                }
                assert_eq!(y1, y2);
                assert_eq!(y1, y3);
            }
        }
    }

    #[test]
    fn short_copy_and_zero_match_the_slice_methods_at_every_length() {
        let src: [f32; 40] = core::array::from_fn(|i| i as f32 + 0.5);
        for n in 0..=40 {
            let (mut a, mut b) = ([-1.0f32; 40], [-1.0f32; 40]);
            super::copy(&mut a[..n], &src[..n]);
            b[..n].copy_from_slice(&src[..n]);
            assert_eq!(a, b, "copy, n = {n}");
            // Unequal lengths copy the common prefix.
            let mut c = [-1.0f32; 40];
            super::copy(&mut c[..n], &src[..n / 2]);
            assert_eq!(&c[..n / 2], &src[..n / 2]);
            assert!(
                c[n / 2..].iter().all(|&v| v == -1.0),
                "copy past the source, n = {n}"
            );
            let mut z = src;
            super::zero(&mut z[..n]);
            assert!(
                z[..n].iter().all(|&v| v == 0.0) && z[n..] == src[n..],
                "zero, n = {n}"
            );
        }
    }
}
