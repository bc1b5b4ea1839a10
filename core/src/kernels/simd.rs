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

use wide::bytemuck::cast;
use wide::{f32x16, i32x16};

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
    for (o, x) in out.iter_mut().zip(v.to_array()) {
        *o = x;
    }
}

/// `Σ aᵢ·bᵢ` with four vector accumulators and fused multiply-add where the target has it.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    if n < LANES {
        // What the vector path computes for a short input (its sum starts at 0 and
        // takes the tail in order), without its setup and reduction.
        return a.iter().zip(b).fold(0.0, |s, (x, y)| s + x * y);
    }
    let mut acc = [f32x16::ZERO; 4];
    let mut ab = a.chunks_exact(BLOCK);
    let mut bb = b.chunks_exact(BLOCK);
    for (x, y) in (&mut ab).zip(&mut bb) {
        for (k, acc_k) in acc.iter_mut().enumerate() {
            let r = k * LANES..(k + 1) * LANES;
            *acc_k = load(&x[r.clone()]).mul_add(load(&y[r]), *acc_k);
        }
    }
    let mut av = ab.remainder().chunks_exact(LANES);
    let mut bv = bb.remainder().chunks_exact(LANES);
    for (x, y) in (&mut av).zip(&mut bv) {
        acc[0] = load(x).mul_add(load(y), acc[0]);
    }
    let tail = n % LANES;
    if tail > 0 {
        // The last sixteen elements, with the lanes already summed above masked off:
        // one vector instead of a chain of up to fifteen dependent scalar adds. The
        // product is masked (not an operand), so an ∞ in a masked lane cannot make NaN.
        let w = n - LANES..n;
        acc[1] += (load(&a[w.clone()]) * load(&b[w])) & tail_mask(tail);
    }
    let total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    total.reduce_add()
}

/// All ones in the top `tail` lanes (`0 < tail < 16`), zero below: the lanes of the
/// last sixteen elements of a slice that its whole vectors did not cover.
#[inline(always)]
fn tail_mask(tail: usize) -> f32x16 {
    const LANE: i32x16 = i32x16::new([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    cast(LANE.simd_gt(i32x16::splat((LANES - tail) as i32 - 1)))
}

/// [`tail_mask`] for eight f64 lanes (`0 < tail < 8`).
#[inline(always)]
fn tail_mask_f64(tail: usize) -> wide::f64x8 {
    use wide::i64x8;
    const LANE: i64x8 = i64x8::new([0, 1, 2, 3, 4, 5, 6, 7]);
    cast(LANE.simd_gt(i64x8::splat(7 - tail as i64)))
}

/// `y ← y + α·x`.
pub fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    let va = f32x16::splat(alpha);
    let mut xc = x.chunks_exact(LANES);
    let mut yc = y.chunks_exact_mut(LANES);
    for (xs, ys) in (&mut xc).zip(&mut yc) {
        store(va.mul_add(load(xs), load(ys)), ys);
    }
    for (xi, yi) in xc.remainder().iter().zip(yc.into_remainder()) {
        *yi += alpha * xi;
    }
}

/// `Σ_{j ∈ idx} w[j]`: the dot product of a sparse binary row with `w`.
///
/// Four scalar accumulators hide the latency of the gathers; out-of-range indices are
/// skipped.
pub fn sparse_dot(idx: &[u32], w: &[f32]) -> f32 {
    let mut acc = [0.0f32; 4];
    let mut chunks = idx.chunks_exact(4);
    for c in &mut chunks {
        for (a, &j) in acc.iter_mut().zip(c) {
            *a += w.get(j as usize).copied().unwrap_or(0.0);
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for &j in chunks.remainder() {
        s += w.get(j as usize).copied().unwrap_or(0.0);
    }
    s
}

/// `y[j] ← y[j] + α` for every `j ∈ idx`: scatter-add of a scaled sparse binary row.
pub fn sparse_axpy(alpha: f32, idx: &[u32], y: &mut [f32]) {
    for &j in idx {
        if let Some(v) = y.get_mut(j as usize) {
            *v += alpha;
        }
    }
}

/// The Langevin update in place, eq. 4: `θ ← θ + (ε/2)·g + √ε·η`, given `h = ε/2`
/// and `s = √ε`.
pub fn langevin_update(theta: &mut [f32], grad: &[f32], noise: &[f32], h: f32, s: f32) {
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    let mut tc = theta.chunks_exact_mut(LANES);
    let mut gc = grad.chunks_exact(LANES);
    let mut nc = noise.chunks_exact(LANES);
    for ((t, g), e) in (&mut tc).zip(&mut gc).zip(&mut nc) {
        let v = vs.mul_add(load(e), vh.mul_add(load(g), load(t)));
        store(v, t);
    }
    let tail = tc.into_remainder().iter_mut();
    for ((t, g), e) in tail.zip(gc.remainder()).zip(nc.remainder()) {
        *t += h * g + s * e;
    }
}

/// The Langevin proposal out of place: `η ← θ + (ε/2)·g + √ε·η` (the noise buffer is
/// overwritten by the proposed position), given `h = ε/2` and `s = √ε`: the proposal of
/// [`langevin_propose_checked`], whose norm and check are not needed here.
pub fn langevin_propose(theta: &[f32], grad: &[f32], noise: &mut [f32], h: f32, s: f32) {
    langevin_propose_checked(theta, grad, noise, h, s);
}

/// [`langevin_propose`] with its checks in the same pass: writes `η ← θ + h·g + s·η`
/// and returns `Σ η²` over the noise it read and whether every proposed value is
/// finite (what a sampler reports and checks before accepting the proposal).
pub fn langevin_propose_checked(
    theta: &[f32],
    grad: &[f32],
    noise: &mut [f32],
    h: f32,
    s: f32,
) -> (f32, bool) {
    let n = theta.len().min(grad.len()).min(noise.len());
    let (theta, grad, noise) = (&theta[..n], &grad[..n], &mut noise[..n]);
    if n < LANES {
        // What the tail below computes, without the vector setup and reductions.
        return propose_tail(theta, grad, noise, h, s);
    }
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    let (mut sq, mut bad) = (f32x16::ZERO, f32x16::ZERO);
    let mut tc = theta.chunks_exact(LANES);
    let mut gc = grad.chunks_exact(LANES);
    let mut nc = noise.chunks_exact_mut(LANES);
    for ((t, g), e) in (&mut tc).zip(&mut gc).zip(&mut nc) {
        let ev = load(e);
        sq = ev.mul_add(ev, sq);
        let v = vs.mul_add(ev, vh.mul_add(load(g), load(t)));
        bad += v * f32x16::ZERO;
        store(v, e);
    }
    let (tail_sq, finite) = propose_tail(tc.remainder(), gc.remainder(), nc.into_remainder(), h, s);
    (sq.reduce_add() + tail_sq, finite && bad.reduce_add() == 0.0)
}

/// The scalar form of [`langevin_propose_checked`] for fewer than sixteen elements
/// (lengths trusted equal): four partial sums, so the norm is not a chain of dependent
/// adds.
#[inline(always)]
fn propose_tail(theta: &[f32], grad: &[f32], noise: &mut [f32], h: f32, s: f32) -> (f32, bool) {
    let (mut sq4, mut finite) = ([0.0f32; 4], true);
    for (k, ((e, t), g)) in noise.iter_mut().zip(theta).zip(grad).enumerate() {
        sq4[k % 4] += *e * *e;
        *e = t + h * g + s * *e;
        finite &= e.is_finite();
    }
    ((sq4[0] + sq4[1]) + (sq4[2] + sq4[3]), finite)
}

/// The preconditioned Langevin update in place, eq. 9 with a diagonal `M`:
/// `θ ← θ + (ε/2)·M·g + √ε·M^½·η`, given `h = ε/2` and `s = √ε`.
pub fn langevin_update_precond(
    theta: &mut [f32],
    grad: &[f32],
    noise: &[f32],
    m: &[f32],
    h: f32,
    s: f32,
) {
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    let mut tc = theta.chunks_exact_mut(LANES);
    let mut gc = grad.chunks_exact(LANES);
    let mut nc = noise.chunks_exact(LANES);
    let mut mc = m.chunks_exact(LANES);
    for (((t, g), e), mm) in (&mut tc).zip(&mut gc).zip(&mut nc).zip(&mut mc) {
        let mv = load(mm);
        let drift = (vh * mv).mul_add(load(g), load(t));
        let v = (vs * mv.sqrt()).mul_add(load(e), drift);
        store(v, t);
    }
    let tail = tc.into_remainder().iter_mut();
    let rest = gc
        .remainder()
        .iter()
        .zip(nc.remainder())
        .zip(mc.remainder());
    for (t, ((g, e), mm)) in tail.zip(rest) {
        *t += h * mm * g + s * libm::sqrtf(*mm) * e;
    }
}

/// `out[i] ← σ(z[i]) = 1/(1 + e^{−z[i]})`, sixteen at a time with `wide`'s `exp`
/// (within 2 ulps of libm's); `σ(−∞) = 0`, `σ(+∞) = 1`, NaN stays NaN.
pub fn sigmoid(z: &[f32], out: &mut [f32]) {
    let one = f32x16::splat(1.0);
    let mut zc = z.chunks_exact(LANES);
    let mut oc = out.chunks_exact_mut(LANES);
    for (zs, os) in (&mut zc).zip(&mut oc) {
        store(one / (one + (-load(zs)).exp()), os);
    }
    let (zr, or) = (zc.remainder(), oc.into_remainder());
    if !zr.is_empty() {
        let mut buf = [0.0f32; LANES];
        let n = zr.len().min(or.len());
        buf[..n].copy_from_slice(&zr[..n]);
        let v = (one / (one + (-f32x16::from(buf)).exp())).to_array();
        or[..n].copy_from_slice(&v[..n]);
    }
}

#[inline(always)]
fn load_f64(chunk: &[f64]) -> wide::f64x8 {
    let mut a = [0.0f64; 8];
    a.copy_from_slice(chunk);
    wide::f64x8::from(a)
}

/// `Σ aᵢ·bᵢ` in f64: two vector accumulators of eight lanes, fused multiply-add.
pub fn dot_f64(a: &[f64], b: &[f64]) -> f64 {
    use wide::f64x8;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [f64x8::ZERO; 2];
    let mut ac = a.chunks_exact(16);
    let mut bc = b.chunks_exact(16);
    for (x, y) in (&mut ac).zip(&mut bc) {
        acc[0] = load_f64(&x[..8]).mul_add(load_f64(&y[..8]), acc[0]);
        acc[1] = load_f64(&x[8..]).mul_add(load_f64(&y[8..]), acc[1]);
    }
    let mut s = (acc[0] + acc[1]).reduce_add();
    for (x, y) in ac.remainder().iter().zip(bc.remainder()) {
        s += x * y;
    }
    s
}

/// `out = a · b` for row-major `a` (`rows × inner`), `b` (`inner × cols`) and `out`
/// (`rows × cols`); products whose operands do not fit in `a`, `b` or `out` are skipped
/// (the whole row or column is then left alone).
///
/// Blocked for registers: four rows of `out` by sixteen columns at a time, so each
/// vector of `b` loaded serves four fused multiply-adds and each element of `a` eight
/// lanes (a plain row-times-matrix loop is bound by its loads instead). Ragged edges:
/// one block of the last one to three rows, eight-column blocks, and a last block of the
/// final eight columns (recomputing a few outputs by the same chain of operations, so
/// they do not change).
pub fn gemm_f64(a: &[f64], b: &[f64], out: &mut [f64], rows: usize, inner: usize, cols: usize) {
    let rows = super::reference::gemm_rows(a.len(), b.len(), out.len(), rows, inner, cols);
    if rows == 0 {
        return;
    }
    let b = &b[..inner * cols];
    let mut i = 0;
    while i < rows {
        // Four rows at a time, the last one to three as one block of their own size
        // (a block size known at compile time: no per-row branch in the inner loop).
        let rb = (rows - i).min(4);
        match rb {
            4 => gemm_block::<4>(a, b, out, i, inner, cols),
            3 => gemm_block::<3>(a, b, out, i, inner, cols),
            2 => gemm_block::<2>(a, b, out, i, inner, cols),
            _ => gemm_block::<1>(a, b, out, i, inner, cols),
        }
        i += rb;
    }
}

/// Rows `i..i + RB` of [`gemm_f64`]'s product (all of which fit: the caller checked).
#[inline(always)]
fn gemm_block<const RB: usize>(
    a: &[f64],
    b: &[f64],
    out: &mut [f64],
    i: usize,
    inner: usize,
    cols: usize,
) {
    use wide::f64x8;
    // Column blocks: (first column, width 16 or 8); the last may overlap its neighbour.
    let block_at = |c: usize| -> Option<(usize, usize)> {
        if c + 16 <= cols {
            Some((c, 16))
        } else if c + 8 <= cols {
            Some((c, 8))
        } else if c < cols && cols >= 8 {
            Some((cols - 8, 8))
        } else {
            None
        }
    };
    let ar: [&[f64]; RB] = core::array::from_fn(|r| &a[(i + r) * inner..][..inner]);
    let mut c = 0;
    while let Some((c0, width)) = block_at(c) {
        let mut acc = [[f64x8::ZERO; 2]; RB];
        if width == 16 {
            for (k, bk) in b.chunks_exact(cols).enumerate() {
                let (lo, hi) = (load_f64(&bk[c0..c0 + 8]), load_f64(&bk[c0 + 8..c0 + 16]));
                for (acc, ar) in acc.iter_mut().zip(&ar) {
                    let v = f64x8::splat(ar[k]);
                    acc[0] = v.mul_add(lo, acc[0]);
                    acc[1] = v.mul_add(hi, acc[1]);
                }
            }
        } else {
            for (k, bk) in b.chunks_exact(cols).enumerate() {
                let lo = load_f64(&bk[c0..c0 + 8]);
                for (acc, ar) in acc.iter_mut().zip(&ar) {
                    acc[0] = f64x8::splat(ar[k]).mul_add(lo, acc[0]);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            let o = &mut out[(i + r) * cols + c0..][..width];
            o[..8].copy_from_slice(&acc[0].to_array());
            if width == 16 {
                o[8..].copy_from_slice(&acc[1].to_array());
            }
        }
        c = c0 + width;
    }
    if cols < 8 {
        for (r, ar) in ar.iter().enumerate() {
            for j in 0..cols {
                let mut s = 0.0f64;
                for (k, &x) in ar.iter().enumerate() {
                    s += x * b[k * cols + j];
                }
                out[(i + r) * cols + j] = s;
            }
        }
    }
}

/// `out[j] = Σₘ a[m]·rows[j·stride + m]` for every `j < out.len()`: the dot products
/// of `a` with the rows of a row-major matrix, which is [`dots_rows_f64`] with `a` as
/// its one row (eight rows of the matrix at a time, then four, two, one, each summed the
/// same way). Rows that do not fit in `rows` give 0.
pub fn dots_f64(a: &[f64], rows: &[f64], stride: usize, out: &mut [f64]) {
    let cols = out.len();
    dots_rows_f64(a, rows, stride, a.len(), out, cols);
}

/// `out[i·cols + k] = Σ_{m < len} a[i·stride + m]·b[k·stride + m]`: every dot product
/// of a row of `a` with a row of `b` (`A·Bᵀ`), for `i < out.len() / cols` and
/// `k < cols`; products with a row that does not fit give 0.
///
/// Blocks of two rows of `a` by eight (then four, two, one) rows of `b`: each step
/// loads ten vectors for sixteen multiply-adds, so the multiply-add pipes, not the
/// loads, set the pace. Every product is summed as [`dots_f64`] sums it.
pub fn dots_rows_f64(
    a: &[f64],
    b: &[f64],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
) {
    if cols == 0 {
        return;
    }
    let rows = out.len() / cols;
    let fit_a = super::reference::rows_that_fit(a.len(), stride, len).min(rows);
    let fit_b = super::reference::rows_that_fit(b.len(), stride, len).min(cols);
    for (i, row) in out.chunks_exact_mut(cols).enumerate() {
        row[if i < fit_a { fit_b } else { 0 }..].fill(0.0);
    }
    let mut i0 = 0;
    while i0 + 2 <= fit_a {
        dots_rows_block::<2>(a, b, stride, len, out, cols, i0, fit_b);
        i0 += 2;
    }
    if i0 < fit_a {
        dots_rows_block::<1>(a, b, stride, len, out, cols, i0, fit_b);
    }
}

/// [`dots_rows_f64`] for the `P` rows of `a` from `i0` against the first `nb` rows of
/// `b` (all of which fit: the caller checked).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn dots_rows_block<const P: usize>(
    a: &[f64],
    b: &[f64],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
    i0: usize,
    nb: usize,
) {
    let ar: [&[f64]; P] = core::array::from_fn(|p| &a[(i0 + p) * stride..][..len]);
    let mut k0 = 0;
    while k0 + 8 <= nb {
        dots_rows_group::<P, 8>(&ar, b, stride, out, cols, i0, k0);
        k0 += 8;
    }
    if k0 + 4 <= nb {
        dots_rows_group::<P, 4>(&ar, b, stride, out, cols, i0, k0);
        k0 += 4;
    }
    if k0 + 2 <= nb {
        dots_rows_group::<P, 2>(&ar, b, stride, out, cols, i0, k0);
        k0 += 2;
    }
    if k0 < nb {
        dots_rows_group::<P, 1>(&ar, b, stride, out, cols, i0, k0);
    }
}

/// The `P × R` products (`P` is 1 or 2) of rows `ar` with the `R` rows of `b` from
/// `k0`, into `out`.
#[inline(always)]
fn dots_rows_group<const P: usize, const R: usize>(
    ar: &[&[f64]; P],
    b: &[f64],
    stride: usize,
    out: &mut [f64],
    cols: usize,
    i0: usize,
    k0: usize,
) {
    use wide::f64x8;
    let n = ar.first().map_or(0, |r| r.len());
    // The first row twice when P = 1 (its second set of sums is never written).
    let (a0, a1) = (&ar[0][..n], &ar[P - 1][..n]);
    let body = n - n % 8;
    // With n ≥ 8, a ragged tail is one more vector: the last eight elements, with the
    // lanes the body already counted masked off (the product is masked, so an ∞ there
    // cannot make NaN).
    let tail = (!n.is_multiple_of(8) && n >= 8).then(|| (n - 8, tail_mask_f64(n % 8)));
    let br: [&[f64]; R] = core::array::from_fn(|q| &b[(k0 + q) * stride..][..n]);
    // One flat array per row of `a`: LLVM keeps flat arrays of vectors in registers
    // through the loop, but stores a nested one to memory on every step.
    let mut acc0 = [f64x8::ZERO; R];
    let mut acc1 = [f64x8::ZERO; R];
    for m in (0..body / 8).map(|v| 8 * v) {
        let bv: [f64x8; R] = core::array::from_fn(|q| load_f64(&br[q][m..m + 8]));
        let av = load_f64(&a0[m..m + 8]);
        for (acc, bv) in acc0.iter_mut().zip(&bv) {
            *acc = av.mul_add(*bv, *acc);
        }
        if P == 2 {
            let av = load_f64(&a1[m..m + 8]);
            for (acc, bv) in acc1.iter_mut().zip(&bv) {
                *acc = av.mul_add(*bv, *acc);
            }
        }
    }
    if let Some((w, mask)) = tail {
        let (av0, av1) = (load_f64(&a0[w..]), load_f64(&a1[w..]));
        for ((acc0, acc1), b) in acc0.iter_mut().zip(acc1.iter_mut()).zip(&br) {
            let bv = load_f64(&b[w..]);
            *acc0 += (av0 * bv) & mask;
            if P == 2 {
                *acc1 += (av1 * bv) & mask;
            }
        }
    }
    for (p, (acc, a)) in [(acc0, a0), (acc1, a1)].iter().take(P).enumerate() {
        let row = &mut out[(i0 + p) * cols + k0..][..R];
        for ((o, acc), r) in row.iter_mut().zip(acc).zip(&br) {
            let mut s = acc.reduce_add();
            if tail.is_none() {
                for m in body..n {
                    s += a[m] * r[m];
                }
            }
            *o = s;
        }
    }
}

/// `out[k·stride + q] = rows[q][k]` as f64 for `q < 8` and `k` below the shortest row's
/// length; columns whose eight slots do not fit in `out` are skipped (and with
/// `stride < 8`, where columns overlap, the later column wins). Eight columns at
/// a time: eight loads, an 8 × 8 transpose in registers, and eight contiguous stores of
/// eight f64, instead of sixty-four scattered scalar stores.
pub fn columns_f64(rows: &[&[f32]; 8], out: &mut [f64], stride: usize) {
    use wide::{f32x8, f64x8};
    let d = super::reference::columns_that_fit(rows, out.len(), stride);
    let mut k0 = 0;
    while k0 + 8 <= d {
        let cols = f32x8::transpose(core::array::from_fn(|q| f32x8::from(&rows[q][k0..k0 + 8])));
        for (c, col) in cols.iter().enumerate() {
            let v = f64x8::from(col.to_array().map(f64::from));
            let at = (k0 + c) * stride;
            out[at..at + 8].copy_from_slice(&v.to_array());
        }
        k0 += 8;
    }
    for k in k0..d {
        for (q, row) in rows.iter().enumerate() {
            out[k * stride + q] = row[k] as f64;
        }
    }
}

/// `y ← y + α·x` in f64.
pub fn axpy_f64(alpha: f64, x: &[f64], y: &mut [f64]) {
    let va = wide::f64x8::splat(alpha);
    let mut xc = x.chunks_exact(8);
    let mut yc = y.chunks_exact_mut(8);
    for (xs, ys) in (&mut xc).zip(&mut yc) {
        ys.copy_from_slice(&va.mul_add(load_f64(xs), load_f64(ys)).to_array());
    }
    for (xi, yi) in xc.remainder().iter().zip(yc.into_remainder()) {
        *yi += alpha * xi;
    }
}

/// `out[i] ← tanh(y[i]/2)` in f64, eight at a time: `sign(y)·(1 − t)/(1 + t)` with
/// `t = e^{−|y|}`, within `4·f64::EPSILON` of the exact value in absolute terms;
/// `±∞ → ±1`, NaN stays NaN.
///
/// `e^{−|y|}` is specialised to its range: `|y|` is capped at 40 (beyond it
/// `tanh(|y|/2)` rounds to 1), so `e^x` for `x ∈ [−40, 0]` needs no overflow, underflow
/// or special-value paths. `x = (16m + j)·ln2/16 + r` with `16m + j` rounded by the
/// `1.5·2⁵²` shifter; `e^x = 2^m · 2^{j/16} · e^r`, with `2^{j/16}` from a sixteen-entry
/// table (one two-register permute), `e^r` by its Taylor polynomial of degree 6 on
/// `|r| ≤ ln2/32` (relative truncation below `4.5·10⁻¹⁶`, about 2 ulp of `t`, which
/// moves `tanh` by at most 1 ulp), and `2^m` added to the exponent bits. Ten multiplies
/// per vector where a polynomial on the whole `|r| ≤ ln2/2` needs seventeen.
pub fn tanh_half(y: &[f64], out: &mut [f64]) {
    let mut yc = y.chunks_exact(8);
    let mut oc = out.chunks_exact_mut(8);
    for (ys, os) in (&mut yc).zip(&mut oc) {
        os.copy_from_slice(&tanh_half_x8(load_f64(ys)).to_array());
    }
    let (yr, or) = (yc.remainder(), oc.into_remainder());
    if !yr.is_empty() {
        let mut a = [0.0f64; 8];
        let n = yr.len().min(or.len());
        a[..n].copy_from_slice(&yr[..n]);
        or[..n].copy_from_slice(&tanh_half_x8(wide::f64x8::from(a)).to_array()[..n]);
    }
}

/// `2^{j/16}` for `j = 0, …, 15`, correctly rounded, as two vectors for a permute.
const EXP2_SIXTEENTHS: [[f64; 8]; 2] = [
    [
        1.0,
        1.044_273_782_427_413_8,
        1.090_507_732_665_257_7,
        1.138_788_634_756_691_6,
        1.189_207_115_002_721,
        1.241_857_812_073_484,
        1.296_839_554_651_009_6,
        1.354_255_546_936_892_7,
    ],
    [
        core::f64::consts::SQRT_2,
        1.476_826_145_939_499_3,
        1.542_210_825_407_940_7,
        1.610_490_331_949_254_3,
        1.681_792_830_507_429,
        1.756_252_160_373_299_5,
        1.834_008_086_409_342_4,
        1.915_206_561_397_147_4,
    ],
];

#[inline(always)]
fn tanh_half_x8(v: wide::f64x8) -> wide::f64x8 {
    use wide::{ShuffleExt, f64x8, u64x8};
    const SHIFTER: f64 = 6_755_399_441_055_744.0; // 1.5·2⁵²
    // ln2/16 in two parts; the high part has 17 significant bits, so k times it is
    // exact for |k| ≤ 16·40/ln2.
    const LN2_16_HI: f64 = 0.693_145_751_953_125 / 16.0;
    const LN2_16_LO: f64 = 1.428_606_820_309_417_2e-6 / 16.0;
    let c = f64x8::splat;
    let x = -v.abs().fast_min(c(40.0));
    // s = k + 1.5·2⁵² exactly, k = round(16x/ln2); its low bits hold 2⁵¹ + k.
    let s = x.mul_add(c(16.0 * core::f64::consts::LOG2_E), c(SHIFTER));
    let k = s - c(SHIFTER);
    let r = k.mul_neg_add(c(LN2_16_HI), x);
    let r = k.mul_neg_add(c(LN2_16_LO), r);
    let mut p = c(1.0 / 720.0);
    for d in [120.0, 24.0, 6.0, 2.0, 1.0, 1.0] {
        p = p.mul_add(r, c(1.0 / d));
    }
    // j = k mod 16 is the low four bits (2⁵¹ is a multiple of 16); m = ⌊k/16⌋ is the
    // rest, shifted into the exponent field (the 2⁴⁷ left of it falls off the top).
    let bits: u64x8 = cast(s);
    let table: [f64x8; 2] = [
        f64x8::new(EXP2_SIXTEENTHS[0]),
        f64x8::new(EXP2_SIXTEENTHS[1]),
    ];
    let scaled = p * table.shuffle_wrapping(bits & u64x8::splat(15));
    // e^x ≥ e^{−40} is a normal number: adding m to the exponent is exact.
    let t: f64x8 = cast(cast::<f64x8, u64x8>(scaled) + ((bits >> 4u32) << 52u32));
    let mag = (c(1.0) - t) / (c(1.0) + t);
    let signed = mag | (v & c(-0.0));
    v.is_nan().select(v, signed)
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
