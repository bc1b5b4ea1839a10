//! `kernels::dot`: never panics, refuses unequal lengths, SIMD within γₙ·Σ|ab| of the
//! scalar twin (both within that of the exact sum).
#![no_main]
#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sgld::kernels::{self, reference, simd};

fuzz_target!(|input: (Vec<f32>, Vec<f32>)| {
    let (a, b) = input;
    assert_eq!(kernels::dot(&a, &b).is_ok(), a.len() == b.len());
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let abs: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 * *y as f64).abs())
        .sum();
    let exact: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let (s, r) = (simd::dot(a, b), reference::dot(a, b));
    if abs.is_finite() && abs < f32::MAX as f64 / 4.0 {
        let tol = (n as f64 + 2.0) * common::U * abs + 1e-43 * (n as f64 + 1.0);
        assert!((s as f64 - exact).abs() <= tol, "simd {s} exact {exact}");
        assert!((r as f64 - exact).abs() <= tol, "scalar {r} exact {exact}");
    }
    assert_eq!(
        kernels::dot(a, b).unwrap().to_bits(),
        kernels::dot(a, b).unwrap().to_bits()
    );
});
