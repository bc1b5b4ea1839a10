//! `kernels::axpy`: never panics, refuses unequal lengths, SIMD within two roundings of
//! the scalar twin per element.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sgld::kernels::{self, reference, simd};

fuzz_target!(|input: (f32, Vec<f32>, Vec<f32>)| {
    let (alpha, x, y) = input;
    let mut y1 = y.clone();
    assert_eq!(
        kernels::axpy(alpha, &x, &mut y1).is_ok(),
        x.len() == y.len()
    );
    let n = x.len().min(y.len());
    let (mut ys, mut yr) = (y[..n].to_vec(), y[..n].to_vec());
    simd::axpy(alpha, &x[..n], &mut ys);
    reference::axpy(alpha, &x[..n], &mut yr);
    for i in 0..n {
        let mag = (alpha as f64 * x[i] as f64).abs() + (y[i] as f64).abs();
        assert!(
            common::close(ys[i], yr[i], mag, 4.0),
            "i {i}: {} vs {}",
            ys[i],
            yr[i]
        );
    }
});
