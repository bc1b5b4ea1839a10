//! Sparse binary dot and scatter-add: the checked API refuses out-of-range indices, the
//! twins agree (scatter-add bit for bit), and `u8` indices give what the same indices as
//! `u32` give.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sgld::kernels::{self, reference, simd};

fuzz_target!(|input: (Vec<u32>, Vec<f32>, f32)| {
    let (idx, w, alpha) = input;
    let valid = idx.iter().all(|&j| (j as usize) < w.len());
    assert_eq!(kernels::sparse_dot(&idx, &w).is_ok(), valid);
    let abs: f64 = idx
        .iter()
        .filter_map(|&j| w.get(j as usize))
        .map(|v| (*v as f64).abs())
        .sum();
    let (s, r) = (simd::sparse_dot(&idx, &w), reference::sparse_dot(&idx, &w));
    assert!(
        common::close(s, r, abs, 2.0 * (idx.len() as f64 + 1.0))
            || (idx.len() + 1) as f64 * common::U >= 1.0
    );
    let (mut ys, mut yr, mut yc) = (w.clone(), w.clone(), w.clone());
    simd::sparse_axpy(alpha, &idx, &mut ys);
    reference::sparse_axpy(alpha, &idx, &mut yr);
    assert!(
        ys.iter()
            .zip(&yr)
            .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()))
    );
    assert_eq!(kernels::sparse_axpy(alpha, &idx, &mut yc).is_ok(), valid);
    if !valid {
        assert_eq!(
            yc.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            w.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    let narrow: Vec<u8> = idx.iter().map(|&j| j as u8).collect();
    let widened: Vec<u32> = narrow.iter().map(|&j| j as u32).collect();
    let bits = |v: f32| if v.is_nan() { u32::MAX } else { v.to_bits() };
    assert_eq!(
        bits(simd::sparse_dot(&narrow, &w)),
        bits(simd::sparse_dot(&widened, &w))
    );
    let (mut y8, mut y32) = (w.clone(), w.clone());
    simd::sparse_axpy(alpha, &narrow, &mut y8);
    simd::sparse_axpy(alpha, &widened, &mut y32);
    assert_eq!(
        y8.iter().map(|&v| bits(v)).collect::<Vec<_>>(),
        y32.iter().map(|&v| bits(v)).collect::<Vec<_>>()
    );
});
