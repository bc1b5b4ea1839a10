//! Dense kernels: dot products, axpy, the sigmoid and log-sigmoid, f64 dots and axpy.

use super::*;

/// `Σ aᵢ·bᵢ` with four vector accumulators and fused multiply-add where the target has it.
#[inline]
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
pub(super) fn tail_mask(tail: usize) -> f32x16 {
    const LANE: i32x16 = i32x16::new([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    cast(LANE.simd_gt(i32x16::splat((LANES - tail) as i32 - 1)))
}

/// [`tail_mask`] for eight f64 lanes (`0 < tail < 8`).
#[inline(always)]
pub(super) fn tail_mask_f64(tail: usize) -> wide::f64x8 {
    use wide::i64x8;
    const LANE: i64x8 = i64x8::new([0, 1, 2, 3, 4, 5, 6, 7]);
    cast(LANE.simd_gt(i64x8::splat(7 - tail as i64)))
}

/// `y ← y + α·x`.
pub fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    let (x, y) = common2(x, y);
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

/// `out[i] ← σ(z[i]) = 1/(1 + e^{−z[i]})`, sixteen at a time with the crate's
/// branch-free `exp` (within 2 ulps of libm's `expf`); `σ(−∞) = 0`, `σ(+∞) = 1`, NaN
/// stays NaN.
#[inline]
pub fn sigmoid(z: &[f32], out: &mut [f32]) {
    let (z, out) = common2(z, out);
    let mut zc = z.chunks_exact(LANES);
    let mut oc = out.chunks_exact_mut(LANES);
    for (zs, os) in (&mut zc).zip(&mut oc) {
        store(sigmoid16(load(zs)), os);
    }
    let (zr, or) = (zc.remainder(), oc.into_remainder());
    if !zr.is_empty() {
        let v = sigmoid16(f32x16::from(padded16(zr)));
        crate::kernels::copy(or, &v.to_array());
    }
}

/// `ls[i] ← ln σ(u[i])` and `s[i] ← σ(−u[i])`, a logistic model's log-likelihood and
/// gradient weight from its signed margin `u = y·βᵀx`, sixteen at a time from one
/// `t = e^{−|u|}`: `ln σ(u) = min(u, 0) − ln(1 + t)`, with `ln(1 + t) = 2 atanh(t/(2 + t))`
/// by [`crate::math::softplus`]'s series, and `σ(−u) = t/(1 + t)` for `u > 0`, else
/// `1/(1 + t)`. Within 4 ulps of the twin (`math::log_sigmoid`, `math::sigmoid`); at
/// `u = ±∞` the limits (`ln σ(−∞) = −∞`); a NaN lane gives NaN in both. On the common
/// prefix of the three slices.
#[inline]
pub fn log_sigmoid_pair(u: &[f32], ls: &mut [f32], s: &mut [f32]) {
    let n = u.len().min(ls.len()).min(s.len());
    let (u, ls, s) = (&u[..n], &mut ls[..n], &mut s[..n]);
    let mut uc = u.chunks_exact(LANES);
    let mut lc = ls.chunks_exact_mut(LANES);
    let mut sc = s.chunks_exact_mut(LANES);
    for ((us, lo), so) in (&mut uc).zip(&mut lc).zip(&mut sc) {
        let (l, w) = log_sigmoid_pair16(load(us));
        store(l, lo);
        store(w, so);
    }
    let ur = uc.remainder();
    if !ur.is_empty() {
        let (l, w) = log_sigmoid_pair16(f32x16::from(padded16(ur)));
        crate::kernels::copy(lc.into_remainder(), &l.to_array());
        crate::kernels::copy(sc.into_remainder(), &w.to_array());
    }
}

/// [`log_sigmoid_pair`] of sixteen lanes: `(ln σ(u), σ(−u))`.
#[inline(always)]
pub(crate) fn log_sigmoid_pair16(u: f32x16) -> (f32x16, f32x16) {
    use crate::math::ATANH_SERIES as SERIES;
    let one = f32x16::ONE;
    let t = exp16(-u.abs());
    let h = t / (f32x16::splat(2.0) + t);
    let z = h * h;
    let p = SERIES[1..]
        .iter()
        .fold(f32x16::splat(SERIES[0]), |acc, &c| {
            acc.mul_add(z, f32x16::splat(c))
        });
    let ln1p = (h + h) * p;
    let ls = u.min(f32x16::ZERO) - ln1p;
    let w = u.simd_gt(f32x16::ZERO).select(t, one) / (one + t);
    // exp16 clamps its argument, which would turn a NaN into a number.
    let nan = u.is_nan();
    (nan.select(u, ls), nan.select(u, w))
}

/// `σ(z) = 1/(1 + e^{−z})` of sixteen lanes; a NaN lane stays NaN.
#[inline(always)]
pub(super) fn sigmoid16(z: f32x16) -> f32x16 {
    let one = f32x16::ONE;
    let s = one / (one + exp16(-z));
    // exp16 clamps its argument, which would turn a NaN into a number.
    z.is_nan().select(z, s)
}

/// `eˣ` of sixteen lanes, [`crate::math::exp`]'s algorithm with fused multiply-adds
/// (within 2 ulps; a short chain of dependent operations and no branch, where `wide`'s
/// `exp` tests its range and handles special values on the way): `x` clamped to
/// `[−104, 89]` (beyond which `eˣ` rounds to 0 or overflows anyway), `x = k ln 2 + r`
/// with `|r| ≤ ½ ln 2`, a degree-6 polynomial for `eʳ`, and `2ᵏ` as two normal factors.
/// A NaN becomes a number: callers that must keep it test for it.
#[inline(always)]
pub(super) fn exp16(x: f32x16) -> f32x16 {
    use crate::math::exp_consts::*;
    let c = f32x16::splat;
    let x = x.max(c(LO)).min(c(HI));
    let s = x.mul_add(c(core::f32::consts::LOG2_E), c(SHIFTER));
    let k = s - c(SHIFTER);
    let r = k.mul_neg_add(c(LN2_LO), k.mul_neg_add(c(LN2_HI), x));
    let z = r * r;
    let p5 = c(P[5]).mul_add(r, c(P[4]));
    let p3 = c(P[3]).mul_add(r, c(P[2]));
    let p1 = c(P[1]).mul_add(r, c(P[0]));
    let y = p5.mul_add(z, p3).mul_add(z, p1).mul_add(z, r) + f32x16::ONE;
    // k ∈ [−150, 128] sits in the low bits of s; 2ᵏ = 2^⌊k/2⌋ · 2^⌈k/2⌉, both normal.
    let k: i32x16 = cast::<f32x16, i32x16>(s) - i32x16::splat(SHIFTER.to_bits() as i32);
    let k1 = k >> 1u32;
    let two = |e: i32x16| -> f32x16 { cast((e + i32x16::splat(127)) << 23u32) };
    y * two(k1) * two(k - k1)
}

#[inline(always)]
pub(super) fn load_f64(chunk: &[f64]) -> wide::f64x8 {
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

/// `y ← y + α·x` in f64.
pub fn axpy_f64(alpha: f64, x: &[f64], y: &mut [f64]) {
    let (x, y) = common2(x, y);
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
