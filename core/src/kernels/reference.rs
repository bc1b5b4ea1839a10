//! Scalar twins of the SIMD kernels: the plain loops that define what each kernel means.
//!
//! One accumulator, left-to-right order, separate multiply and add (two roundings).
//! Same conventions as [`super::simd`]: the common prefix of unequal slices, skipped
//! out-of-range sparse indices, no panics. Build with `--cfg sgld_force_scalar` to make
//! the checked kernels of [`crate::kernels`] dispatch here.

use super::{SparseIndex, StepCheck};

/// `a·b + c` as the SIMD kernels' `mul_add` rounds it: once where the target fuses
/// multiply-adds (x86 with FMA, aarch64), twice otherwise — so the twins whose contract
/// is bit-identity keep it on every target.
#[inline(always)]
fn mul_add(a: f32, b: f32, c: f32) -> f32 {
    const FUSED: bool = cfg!(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "sse2",
        target_feature = "fma"
    )) || cfg!(all(target_arch = "aarch64", target_feature = "neon"));
    if FUSED {
        libm::fmaf(a, b, c)
    } else {
        a * b + c
    }
}

/// `Σ aᵢ·bᵢ`, left to right.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for (x, y) in a.iter().zip(b) {
        s += x * y;
    }
    s
}

/// `y ← y + α·x`.
pub fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    for (xi, yi) in x.iter().zip(y) {
        *yi += alpha * xi;
    }
}

/// `Σ_{j ∈ idx} w[j]`, left to right.
pub fn sparse_dot<I: SparseIndex>(idx: &[I], w: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for &j in idx {
        if let Some(v) = w.get(j.index()) {
            s += v;
        }
    }
    s
}

/// [`sparse_dot`] for indices known to be in range, without a bounds check per index.
///
/// # Safety
///
/// Every index of `idx` is below `w.len()`.
// Called where the crate dispatches to the scalar twins, and by the tests.
#[cfg_attr(not(any(sgld_force_scalar, sgld_scalar_target)), allow(dead_code))]
#[allow(unsafe_code)]
pub(crate) unsafe fn sparse_dot_in_bounds<I: SparseIndex>(idx: &[I], w: &[f32]) -> f32 {
    debug_assert!(idx.iter().all(|j| j.index() < w.len()));
    let mut s = 0.0f32;
    for &j in idx {
        // SAFETY: the caller guarantees every index is below `w.len()`.
        s += unsafe { *w.get_unchecked(j.index()) };
    }
    s
}

/// [`sparse_axpy`] for indices known to be in range.
///
/// # Safety
///
/// Every index of `idx` is below `y.len()`.
// Called where the crate dispatches to the scalar twins, and by the tests.
#[cfg_attr(not(any(sgld_force_scalar, sgld_scalar_target)), allow(dead_code))]
#[allow(unsafe_code)]
pub(crate) unsafe fn sparse_axpy_in_bounds<I: SparseIndex>(alpha: f32, idx: &[I], y: &mut [f32]) {
    debug_assert!(idx.iter().all(|j| j.index() < y.len()));
    for &j in idx {
        // SAFETY: the caller guarantees every index is below `y.len()`.
        unsafe { *y.get_unchecked_mut(j.index()) += alpha };
    }
}

/// `y[j] ← y[j] + α` for every `j ∈ idx`.
pub fn sparse_axpy<I: SparseIndex>(alpha: f32, idx: &[I], y: &mut [f32]) {
    for &j in idx {
        if let Some(v) = y.get_mut(j.index()) {
            *v += alpha;
        }
    }
}

/// The bits set in a bitmap row below `len`, in increasing order (bit `j % 16` of word
/// `j / 16`).
fn set_bits(row: &[u16], len: usize) -> impl Iterator<Item = usize> + '_ {
    row.iter()
        .enumerate()
        .flat_map(|(i, &w)| {
            (0..16)
                .filter(move |l| w >> l & 1 == 1)
                .map(move |l| 16 * i + l)
        })
        .take_while(move |&j| j < len)
}

/// Row `i` of a table of `stride`-word rows, empty when the table does not hold it.
fn table_row(table: &[u16], stride: usize, i: usize) -> &[u16] {
    i.checked_mul(stride)
        .and_then(|a| table.get(a..a.checked_add(stride)?))
        .unwrap_or(&[])
}

/// `out[k] = Σ w[j]` over the bits `j` set in row `rows[k]` of `table`, left to right.
pub fn bitmap_dots(table: &[u16], stride: usize, rows: &[usize], w: &[f32], out: &mut [f32]) {
    for (&i, o) in rows.iter().zip(out.iter_mut()) {
        let mut s = 0.0f32;
        for j in set_bits(table_row(table, stride, i), w.len()) {
            s += w.get(j).copied().unwrap_or(0.0);
        }
        *o = s;
    }
}

/// [`bitmap_dots`] of the first sixteen rows as one array, zeros past `rows.len()`.
pub fn bitmap_dots16(table: &[u16], stride: usize, rows: &[usize], w: &[f32]) -> [f32; 16] {
    let mut out = [0.0; 16];
    bitmap_dots(table, stride, rows, w, &mut out);
    out
}

/// `y[j] ← y[j] + alphas[k]` for every bit `j` set in row `rows[k]` of `table`, row by
/// row.
pub fn bitmap_axpys(alphas: &[f32], table: &[u16], stride: usize, rows: &[usize], y: &mut [f32]) {
    for (&a, &i) in alphas.iter().zip(rows) {
        for j in set_bits(table_row(table, stride, i), y.len()) {
            if let Some(v) = y.get_mut(j) {
                *v += a;
            }
        }
    }
}

/// `θ ← θ + h·g + s·η` (eq. 4 with `h = ε/2`, `s = √ε`).
pub fn langevin_update(theta: &mut [f32], grad: &[f32], noise: &[f32], h: f32, s: f32) {
    for ((t, g), e) in theta.iter_mut().zip(grad).zip(noise) {
        *t += h * g + s * e;
    }
}

/// `η ← θ + h·g + s·η`: the proposal written over the noise.
pub fn langevin_propose(theta: &[f32], grad: &[f32], noise: &mut [f32], h: f32, s: f32) {
    for ((e, t), g) in noise.iter_mut().zip(theta).zip(grad) {
        *e = t + h * g + s * *e;
    }
}

/// `θ ← θ + h·g + s·η` in place, the old `θ` left in `noise`, returning `Σ η²`, `Σ g²`
/// and whether every new `θᵢ` is finite.
pub fn langevin_step_checked(
    theta: &mut [f32],
    grad: &[f32],
    noise: &mut [f32],
    h: f32,
    s: f32,
) -> StepCheck {
    let mut check = StepCheck {
        noise_sq: 0.0,
        grad_sq: 0.0,
        finite: true,
    };
    for ((t, &g), e) in theta.iter_mut().zip(grad).zip(noise.iter_mut()) {
        check.noise_sq += *e * *e;
        check.grad_sq += g * g;
        let old = *t;
        *t = old + h * g + s * *e;
        *e = old;
        check.finite &= t.is_finite();
    }
    check
}

/// [`langevin_step_checked`] without its sums: `θᵢ ← θᵢ + h·gᵢ + s·ηᵢ`, the old `θᵢ`
/// into `ηᵢ`; returns whether every new `θᵢ` is finite, tested on its bits (an exponent
/// below all ones), which costs integer work where f32 compares are library calls.
pub fn langevin_step_finite(
    theta: &mut [f32],
    grad: &[f32],
    noise: &mut [f32],
    h: f32,
    s: f32,
) -> bool {
    let mut finite = true;
    for ((t, &g), e) in theta.iter_mut().zip(grad).zip(noise.iter_mut()) {
        let old = *t;
        *t = old + h * g + s * *e;
        *e = old;
        finite &= (t.to_bits() & 0x7fff_ffff) < 0x7f80_0000;
    }
    finite
}

/// `θ ← θ + h·M·g + s·M^½·η` with diagonal `M` (eq. 9).
pub fn langevin_update_precond(
    theta: &mut [f32],
    grad: &[f32],
    noise: &[f32],
    m: &[f32],
    h: f32,
    s: f32,
) {
    for (((t, g), e), mm) in theta.iter_mut().zip(grad).zip(noise).zip(m) {
        *t += h * mm * g + s * libm::sqrtf(*mm) * e;
    }
}

/// The batch indices of one line of sixteen 32-bit halves (little-endian, in order)
/// for `n` rows: `out[j] = ⌊h_j·n/2³²⌋`, Lemire's multiply-shift, when no product's low
/// half is below `n` (when one is, the half may have to be redrawn, which the caller
/// does); returns false, with `out` untouched, in that case.
pub fn line_indices_u32(line: &[u8; 64], n: u32, out: &mut [usize; 16]) -> bool {
    let halves = line.as_chunks::<4>().0;
    let m: [u64; 16] =
        core::array::from_fn(|j| u64::from(u32::from_le_bytes(halves[j])) * u64::from(n));
    if m.iter().any(|&p| (p as u32) < n) {
        return false;
    }
    for (o, p) in out.iter_mut().zip(m) {
        *o = (p >> 32) as usize;
    }
    true
}

/// True when every value is finite.
pub fn all_finite(xs: &[f32]) -> bool {
    xs.iter().all(|x| x.is_finite())
}

/// `out[i] ← σ(z[i]) = 1/(1 + e^{−z[i]})` with libm's `expf`.
pub fn sigmoid(z: &[f32], out: &mut [f32]) {
    for (o, &x) in out.iter_mut().zip(z) {
        *o = 1.0 / (1.0 + libm::expf(-x));
    }
}

/// `ls[i] ← ln σ(u[i])` and `s[i] ← σ(−u[i])` with the crate's scalar
/// [`log_sigmoid`](crate::math::log_sigmoid) and [`sigmoid`](crate::math::sigmoid), on
/// the common prefix.
pub fn log_sigmoid_pair(u: &[f32], ls: &mut [f32], s: &mut [f32]) {
    for ((&x, l), w) in u.iter().zip(ls.iter_mut()).zip(s.iter_mut()) {
        *l = crate::math::log_sigmoid(x);
        *w = crate::math::sigmoid(-x);
    }
}

/// `out[i] ← tanh(y[i]/2)` with libm's `tanh` (f64).
pub fn tanh_half(y: &[f64], out: &mut [f64]) {
    for (o, &v) in out.iter_mut().zip(y) {
        *o = libm::tanh(0.5 * v);
    }
}

/// `out[i] ← tanh(y[i]/2)` with libm's `tanhf`.
pub fn tanh_half_f32(y: &[f32], out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(y) {
        *o = libm::tanhf(0.5 * v);
    }
}

/// `Σ aᵢ·bᵢ` in f64, left to right.
pub fn dot_f64(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0f64;
    for (x, y) in a.iter().zip(b) {
        s += x * y;
    }
    s
}

/// `y ← y + α·x` in f64.
pub fn axpy_f64(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (xi, yi) in x.iter().zip(y) {
        *yi += alpha * xi;
    }
}

/// How many rows of length `len`, `stride` apart, fit in `rows.len()` floats (all of
/// them when `stride` is 0 and one fits).
pub fn rows_that_fit(rows: usize, stride: usize, len: usize) -> usize {
    match (rows.checked_sub(len), stride) {
        (None, _) => 0,
        (Some(_), 0) => usize::MAX,
        (Some(room), s) => room / s + 1,
    }
}

/// `out[j] = Σₘ a[m]·rows[j·stride + m]` for every `j < out.len()`: the dot products
/// of `a` with the rows of a row-major matrix. Rows that do not fit in `rows` give 0.
pub fn dots_f64(a: &[f64], rows: &[f64], stride: usize, out: &mut [f64]) {
    let fit = rows_that_fit(rows.len(), stride, a.len());
    for (j, o) in out.iter_mut().enumerate() {
        *o = if j < fit {
            dot_f64(a, &rows[j * stride..j * stride + a.len()])
        } else {
            0.0
        };
    }
}

/// `out[i·cols + k] = Σ_{m < len} a[i·stride + m]·b[k·stride + m]`: every dot product
/// of a row of `a` with a row of `b` (`A·Bᵀ` for row-major matrices whose rows are
/// `stride` apart), for `i < out.len() / cols` and `k < cols`. Products with a row
/// that does not fit give 0.
pub fn dots_rows_f64(
    a: &[f64],
    b: &[f64],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
) {
    dots_rows(a, b, stride, len, out, cols);
}

/// [`dots_rows_f64`] of f32 rows, each product (exact in f64) summed in f64.
pub fn dots_rows_f32(
    a: &[f32],
    b: &[f32],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
) {
    dots_rows(a, b, stride, len, out, cols);
}

/// [`dots_rows_f32`] in sixteen f32 lanes: element `m` of a product goes to lane
/// `m mod 16` by a fused multiply-add, except that when `len` is not a multiple of 16
/// the elements past the whole vectors go to the lanes of one more vector, every lane
/// taking one more multiply-add there (`0·0` for the lanes that get no element): for
/// `len ≥ 16` the vector ends at element `len` (lane `m + 16 − len`); for
/// `8 ≤ len < 16` lanes 0–7 hold elements 0–7 and lanes 8–15 the eight ending at `len`
/// (lane `m + 16 − len` for `m ≥ 8`); for `len < 8`, lane `m`. The lanes `v` are then
/// added in f32 as `(Q₀ + Q₂) + (Q₁ + Q₃)` with `Q_q = (v[4q] + v[4q+1]) + (v[4q+2] +
/// v[4q+3])`, and the sum widened to f64.
pub fn dots_rows_f32_lanes(
    a: &[f32],
    b: &[f32],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
) {
    let body = len - len % 16;
    each_row_pair(a, b, stride, len, out, cols, |ar, br| {
        let mut lanes = [0.0f32; 16];
        for m in 0..body {
            lanes[m % 16] = mul_add(ar[m], br[m], lanes[m % 16]);
        }
        if body < len {
            // The last vector: lane l holds element m when the lanes before did not
            // count it and it is in the row, else nothing (0·0).
            for (l, lane) in lanes.iter_mut().enumerate() {
                let (m, from) = if len >= 16 {
                    (len + l - 16, body)
                } else if len >= 8 && l >= 8 {
                    (len + l - 16, 8)
                } else {
                    (l, 0)
                };
                let (x, y) = if from <= m && m < len {
                    (ar[m], br[m])
                } else {
                    (0.0, 0.0)
                };
                *lane = mul_add(x, y, *lane);
            }
        }
        let q: [f32; 4] = core::array::from_fn(|q| {
            let v = &lanes[4 * q..4 * q + 4];
            (v[0] + v[1]) + (v[2] + v[3])
        });
        f64::from((q[0] + q[2]) + (q[1] + q[3]))
    });
}

/// `out[i·cols + k] = dot(row i of a, row k of b)` for the rows of length `len`, `stride`
/// apart, that fit; 0 for the others.
fn each_row_pair<T>(
    a: &[T],
    b: &[T],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
    dot: impl Fn(&[T], &[T]) -> f64,
) {
    if cols == 0 {
        return;
    }
    let fit_a = rows_that_fit(a.len(), stride, len);
    let fit_b = rows_that_fit(b.len(), stride, len);
    for (i, row) in out.chunks_exact_mut(cols).enumerate() {
        for (k, o) in row.iter_mut().enumerate() {
            *o = if i < fit_a && k < fit_b {
                dot(&a[i * stride..][..len], &b[k * stride..][..len])
            } else {
                0.0
            };
        }
    }
}

fn dots_rows<T: Copy + Into<f64>>(
    a: &[T],
    b: &[T],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
) {
    each_row_pair(a, b, stride, len, out, cols, |ar, br| {
        let mut s = 0.0f64;
        for (&x, &y) in ar.iter().zip(br) {
            s += x.into() * y.into();
        }
        s
    });
}

/// `out[k·stride + q] = rows[q][k]` as f64 for `q < 8` and `k` below the shortest row's
/// length: eight rows written as eight columns of a row-major matrix (the rows of a
/// mini-batch turned channel-major). Columns `k` whose eight slots do not fit in `out`
/// are skipped; with `stride < 8`, where columns overlap, the later column wins.
pub fn columns_f64(rows: &[&[f32]; 8], out: &mut [f64], stride: usize) {
    columns(rows, out, stride);
}

/// [`columns_f64`] into f32.
pub fn columns_f32(rows: &[&[f32]; 8], out: &mut [f32], stride: usize) {
    columns(rows, out, stride);
}

fn columns<T: From<f32>>(rows: &[&[f32]; 8], out: &mut [T], stride: usize) {
    let d = columns_that_fit(rows, out.len(), stride);
    for k in 0..d {
        for (q, row) in rows.iter().enumerate() {
            out[k * stride + q] = T::from(row[k]);
        }
    }
}

/// `out[i·stride + q] = Σ_{k<d} w[i·d + k]·rows[q][k]` for `i < d` and `q < 8`: a
/// `d × d` matrix times eight rows of `d` values, written channel-major (what
/// [`columns_f32`] and then [`gemm_f32`] compute, without the transposed copy). Each
/// sum is a chain of fused multiply-adds over `k` from 0. Writes nothing unless
/// `d ≥ 1`, `w` has `d²` values, every row `d`, `stride ≥ 8` and `out` has room for
/// the last channel's eight.
pub fn project_rows_f32(w: &[f32], d: usize, rows: &[&[f32]; 8], out: &mut [f32], stride: usize) {
    if !project_rows_fit(w.len(), d, rows, out.len(), stride) {
        return;
    }
    for i in 0..d {
        for (q, row) in rows.iter().enumerate() {
            out[i * stride + q] = (0..d).fold(0.0f32, |acc, k| mul_add(w[i * d + k], row[k], acc));
        }
    }
}

/// Whether [`project_rows_f32`] writes anything with operands of these lengths.
pub fn project_rows_fit(w: usize, d: usize, rows: &[&[f32]; 8], out: usize, stride: usize) -> bool {
    d >= 1
        && d.checked_mul(d).is_some_and(|dd| dd <= w)
        && rows.iter().all(|r| r.len() >= d)
        && stride >= 8
        && (d - 1)
            .checked_mul(stride)
            .and_then(|n| n.checked_add(8))
            .is_some_and(|n| n <= out)
}

/// `out[i·stride + j] = Σ_{k<d} w[i·d + k]·x[at[j] + k]` for `i < d` and `j < at.len()`:
/// `W` times the rows of `x` that start at the offsets `at`, written channel-major, eight
/// rows at a time (what [`project_rows_f32`] computes for each group of eight). A row
/// that does not fit in `x` counts as a row of zeros, and so do the rows that fill the
/// last group: their slots hold `W·0` (0 where `W` is finite). The slots from the last
/// group's end to `stride` are 0. Each sum is a chain of fused multiply-adds over `k`
/// from 0. Writes nothing unless `d ≥ 1`, `w` has `d²` values, `stride` is at least
/// `at.len()` rounded up to a multiple of eight, and `out` has `d·stride` slots.
pub fn project_batch_f32(
    w: &[f32],
    d: usize,
    x: &[f32],
    at: &[usize],
    out: &mut [f32],
    stride: usize,
) {
    if !project_batch_fit(w.len(), d, at.len(), out.len(), stride) {
        return;
    }
    let end = at.len().next_multiple_of(8);
    for j in 0..end {
        // Each row found once, then its d sums (a missing row's are W·0).
        let row = at.get(j).and_then(|&a| x.get(a..a.checked_add(d)?));
        for (i, wi) in w.chunks_exact(d).take(d).enumerate() {
            out[i * stride + j] = match row {
                Some(row) => wi
                    .iter()
                    .zip(row)
                    .fold(0.0f32, |acc, (&wk, &xk)| mul_add(wk, xk, acc)),
                None => wi.iter().fold(0.0f32, |acc, &wk| mul_add(wk, 0.0, acc)),
            };
        }
    }
    for i in 0..d {
        out[i * stride + end..(i + 1) * stride].fill(0.0);
    }
}

/// [`project_batch_f32`] into `y`, then `t[i] = tanh(y[i]/2)` ([`tanh_half_f32`]),
/// when `t` is as long as `y`; nothing is written otherwise, or when
/// [`project_batch_f32`] writes nothing.
pub fn project_batch_tanh_f32(
    w: &[f32],
    d: usize,
    x: &[f32],
    at: &[usize],
    y: &mut [f32],
    t: &mut [f32],
    stride: usize,
) {
    if t.len() != y.len() || !project_batch_fit(w.len(), d, at.len(), y.len(), stride) {
        return;
    }
    project_batch_f32(w, d, x, at, y, stride);
    tanh_half_f32(y, t);
}

/// Whether [`project_batch_f32`] writes anything with operands of these lengths.
pub fn project_batch_fit(w: usize, d: usize, rows: usize, out: usize, stride: usize) -> bool {
    d >= 1
        && d.checked_mul(d).is_some_and(|dd| dd <= w)
        && rows
            .checked_next_multiple_of(8)
            .is_some_and(|r| r <= stride)
        && d.checked_mul(stride).is_some_and(|n| n <= out)
}

/// How many columns [`columns_f64`] writes: the shortest row's length, cut to the
/// columns whose eight slots fit in `out`.
pub fn columns_that_fit(rows: &[&[f32]; 8], out: usize, stride: usize) -> usize {
    let d = rows.iter().map(|r| r.len()).min().unwrap_or(0);
    d.min(rows_that_fit(out, stride, 8))
}

/// `out = a · b` for row-major `a` (`rows × inner`), `b` (`inner × cols`), `out`
/// (`rows × cols`); rows of `a` or `out` that do not fit are skipped, and nothing is
/// written when `b` is shorter than `inner × cols`.
pub fn gemm_f64(a: &[f64], b: &[f64], out: &mut [f64], rows: usize, inner: usize, cols: usize) {
    gemm(a, b, out, rows, inner, cols);
}

/// The length `n × cols` of [`mul_left_checked_f64`]'s `b` when `a` (`n × n`), `b` and
/// `tmp` (`n × cols` each) are long enough; `None` otherwise.
pub fn mul_left_fit(a: usize, b: usize, tmp: usize, n: usize, cols: usize) -> Option<usize> {
    let (nn, len) = (n.checked_mul(n)?, n.checked_mul(cols)?);
    (a >= nn && b >= len && tmp >= len).then_some(len)
}

/// `b ← a·b` for `a` of `n × n` and `b` of `n × cols` when every entry of the product
/// ([`gemm_f64`]'s, computed into `tmp`) is finite (true); otherwise, or when an
/// operand is too short, `b` is left as it was (false).
pub fn mul_left_checked_f64(
    a: &[f64],
    b: &mut [f64],
    tmp: &mut [f64],
    n: usize,
    cols: usize,
) -> bool {
    let Some(len) = mul_left_fit(a.len(), b.len(), tmp.len(), n, cols) else {
        return false;
    };
    let (b, tmp) = (&mut b[..len], &mut tmp[..len]);
    gemm_f64(a, b, tmp, n, n, cols);
    if tmp.iter().any(|v| !v.is_finite()) {
        return false;
    }
    b.copy_from_slice(tmp);
    true
}

/// [`gemm_f64`] in f32.
pub fn gemm_f32(a: &[f32], b: &[f32], out: &mut [f32], rows: usize, inner: usize, cols: usize) {
    gemm(a, b, out, rows, inner, cols);
}

fn gemm<T>(a: &[T], b: &[T], out: &mut [T], rows: usize, inner: usize, cols: usize)
where
    T: Copy + Default + core::ops::Add<Output = T> + core::ops::Mul<Output = T>,
{
    let rows = gemm_rows(a.len(), b.len(), out.len(), rows, inner, cols);
    for i in 0..rows {
        for j in 0..cols {
            let mut s = T::default();
            for k in 0..inner {
                s = s + a[i * inner + k] * b[k * cols + j];
            }
            out[i * cols + j] = s;
        }
    }
}

/// How many rows of a `rows × inner` by `inner × cols` product [`gemm_f64`] computes
/// with operands of these lengths: the rows of `a` and `out` that fit, and none when
/// `b` is shorter than `inner × cols` or `cols` is 0.
pub fn gemm_rows(a: usize, b: usize, out: usize, rows: usize, inner: usize, cols: usize) -> usize {
    if cols == 0 || inner.checked_mul(cols).is_none_or(|n| n > b) {
        return 0;
    }
    let fit_a = a.checked_div(inner).unwrap_or(usize::MAX);
    rows.min(fit_a).min(out / cols)
}
