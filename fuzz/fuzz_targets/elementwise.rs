//! The element-wise kernels `simd::axpy`, `axpy_f64`, `sigmoid`, `tanh_half`,
//! `tanh_half_f32`, the reductions `dot`, `dot_f64` and `all_finite`, and
//! `line_indices_u32`: never panic for any values and lengths; on operands of unequal
//! lengths work on the common prefix (the same bits as the call on the operands cut to
//! it, nothing written past it); agree with their scalar twins (within the contract's
//! roundings for moderate values, the same class — NaN, ±∞ or finite — otherwise).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sgld::kernels::{reference, simd};

fuzz_target!(|input: (Vec<f32>, Vec<f32>, f32, [u8; 64], u32)| {
    let (a, b, alpha, line, n_data) = input;
    let n = a.len().min(b.len());
    let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
    let (a64, b64) = (wide(&a), wide(&b));

    // Each kernel on the whole operands against the same kernel on the prefix.
    prefix("simd::axpy", &b, n, |y, m| simd::axpy(alpha, cut(&a, m), y));
    prefix("reference::axpy", &b, n, |y, m| {
        reference::axpy(alpha, cut(&a, m), y)
    });
    prefix("simd::sigmoid", &b, n, |o, m| simd::sigmoid(cut(&a, m), o));
    prefix("reference::sigmoid", &b, n, |o, m| {
        reference::sigmoid(cut(&a, m), o)
    });
    prefix("simd::tanh_half_f32", &b, n, |o, m| {
        simd::tanh_half_f32(cut(&a, m), o)
    });
    prefix("reference::tanh_half_f32", &b, n, |o, m| {
        reference::tanh_half_f32(cut(&a, m), o)
    });
    let al = f64::from(alpha);
    prefix("simd::axpy_f64", &b64, n, |y, m| {
        simd::axpy_f64(al, cut(&a64, m), y)
    });
    prefix("reference::axpy_f64", &b64, n, |y, m| {
        reference::axpy_f64(al, cut(&a64, m), y)
    });
    prefix("simd::tanh_half", &b64, n, |o, m| {
        simd::tanh_half(cut(&a64, m), o)
    });
    prefix("reference::tanh_half", &b64, n, |o, m| {
        reference::tanh_half(cut(&a64, m), o)
    });
    assert_eq!(
        simd::dot(&a, &b).to_bits(),
        simd::dot(&a[..n], &b[..n]).to_bits()
    );
    assert!(simd::dot_f64(&a64, &b64).same(simd::dot_f64(&a64[..n], &b64[..n])));
    assert!(reference::dot_f64(&a64, &b64).same(reference::dot_f64(&a64[..n], &b64[..n])));

    // The twins on the prefix.
    let (a, b, a64, b64) = (&a[..n], &b[..n], &a64[..n], &b64[..n]);
    let (mut s, mut r) = (b.to_vec(), b.to_vec());
    simd::sigmoid(a, &mut s);
    reference::sigmoid(a, &mut r);
    for ((x, y), z) in s.iter().zip(&r).zip(a) {
        // exp within 2 ulps of libm's, then 1 + e and 1/(·): 4 ulps relative.
        assert_eq!(x.is_nan(), y.is_nan(), "sigmoid({z}): {x} vs {y}");
        if y.is_finite() {
            assert!(
                (x - y).abs() <= 4.0 * f32::EPSILON * y.abs() + 1e-44,
                "sigmoid({z}): {x} vs {y}"
            );
        }
    }
    let (mut s, mut r) = (b64.to_vec(), b64.to_vec());
    simd::tanh_half(a64, &mut s);
    reference::tanh_half(a64, &mut r);
    for ((x, y), v) in s.iter().zip(&r).zip(a64) {
        if v.is_nan() {
            assert!(x.is_nan() && y.is_nan(), "tanh_half of NaN: {x} / {y}");
        } else {
            assert!(
                (x - y).abs() <= 4.0 * f64::EPSILON,
                "tanh_half({v}): {x} vs {y}"
            );
        }
    }
    let u = f64::EPSILON / 2.0;
    let (mut s, mut r) = (b64.to_vec(), b64.to_vec());
    simd::axpy_f64(al, a64, &mut s);
    reference::axpy_f64(al, a64, &mut r);
    for ((x, y), (ai, bi)) in s.iter().zip(&r).zip(a64.iter().zip(b64)) {
        // One rounding (FMA) against two: 2u of the terms' magnitude. (Every input is
        // an f32 widened, so no term overflows f64.)
        let mag = (al * ai).abs() + bi.abs();
        if mag.is_finite() {
            assert!((x - y).abs() <= 2.0 * u * mag, "axpy_f64: {x} vs {y}");
        } else {
            assert!(x.is_nan() == y.is_nan(), "axpy_f64: {x} vs {y}");
        }
    }
    let abs: f64 = a64.iter().zip(b64).map(|(x, y)| (x * y).abs()).sum();
    let (x, y) = (simd::dot_f64(a64, b64), reference::dot_f64(a64, b64));
    if abs.is_finite() {
        let tol = 2.0 * (n + 1) as f64 * u * abs;
        assert!((x - y).abs() <= tol, "dot_f64: {x} vs {y}");
    }
    for v in [a, b] {
        let all = v.iter().all(|x| x.is_finite());
        assert_eq!(simd::all_finite(v), all);
        assert_eq!(reference::all_finite(v), all);
    }

    // Sixteen batch indices from a line of bytes: the twins agree, bit for bit.
    let n_data = n_data.max(1);
    let (mut s, mut r) = ([usize::MAX; 16], [usize::MAX; 16]);
    assert_eq!(
        simd::line_indices_u32(&line, n_data, &mut s),
        reference::line_indices_u32(&line, n_data, &mut r)
    );
    assert_eq!(s, r);
    assert!(s.iter().all(|&i| i == usize::MAX || i < n_data as usize));
});

/// `v` whole (`None`) or cut to its first `n` values (`Some(n)`, `n` at most its length).
fn cut<T>(v: &[T], n: Option<usize>) -> &[T] {
    &v[..n.unwrap_or(v.len())]
}

/// A float's bits (a NaN equal to any other NaN).
trait Bits: Copy {
    fn same(self, other: Self) -> bool;
}

impl Bits for f32 {
    fn same(self, other: Self) -> bool {
        self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
    }
}

impl Bits for f64 {
    fn same(self, other: Self) -> bool {
        self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
    }
}

/// `run(out, None)`, a kernel on its whole operands, against `run(&mut out[..n],
/// Some(n))`, the kernel on its operands cut to their common length `n`: the same
/// values on the prefix, and `out` untouched past it.
fn prefix<T: Bits + core::fmt::Debug>(
    what: &str,
    out: &[T],
    n: usize,
    run: impl Fn(&mut [T], Option<usize>),
) {
    let mut full = out.to_vec();
    run(&mut full, None);
    let mut cut = out[..n].to_vec();
    run(&mut cut, Some(n));
    for (k, (x, y)) in full.iter().zip(&cut).enumerate() {
        assert!(x.same(*y), "{what}: element {k}: {x:?} vs {y:?}");
    }
    for (k, (x, y)) in full[n..].iter().zip(&out[n..]).enumerate() {
        assert!(
            x.same(*y),
            "{what}: element {} written past the prefix",
            n + k
        );
    }
}
