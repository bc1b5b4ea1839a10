//! What the kernel tests share: the unit roundoff, the lengths tried, the value
//! strategies (finite and special) and the class check of special values.

#![allow(dead_code)]

use proptest::prelude::*;
use sgld::kernels::LANES;

pub const U: f64 = f32::EPSILON as f64 / 2.0; // unit roundoff 2⁻²⁴
pub const MAX_LEN: usize = 4 * LANES + 3;

pub fn gamma(n: usize) -> f64 {
    let nu = n as f64 * U;
    nu / (1.0 - nu)
}

/// Finite values over many scales, including ±0 and subnormals.
pub fn finite() -> impl Strategy<Value = f32> + Clone {
    prop_oneof![
        6 => -1.0f32..1.0,
        2 => (-1.0f32..1.0, -20i32..18).prop_map(|(m, e)| m * 10f32.powi(e)),
        1 => Just(0.0f32),
        1 => Just(-0.0f32),
        1 => Just(f32::MIN_POSITIVE / 8.0),
        1 => Just(-1e-40f32),
    ]
}

/// Values including NaN and ±∞ (finite ones kept moderate so no partial sum overflows).
pub fn special() -> impl Strategy<Value = f32> + Clone {
    prop_oneof![
        4 => -4.0f32..4.0,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(0.0f32),
        1 => Just(-0.0f32),
        1 => Just(1e-42f32),
    ]
}

pub fn pair_of(
    s: impl Strategy<Value = f32> + Clone,
) -> impl Strategy<Value = (Vec<f32>, Vec<f32>)> {
    (0..=MAX_LEN).prop_flat_map(move |n| {
        (
            prop::collection::vec(s.clone(), n),
            prop::collection::vec(s.clone(), n),
        )
    })
}

/// Same class: both NaN, or both the same infinity, or both finite.
pub fn same_class(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || (a.is_infinite() && a == b) || (a.is_finite() && b.is_finite())
}
