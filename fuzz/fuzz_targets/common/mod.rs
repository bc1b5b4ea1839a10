//! Shared tolerance helpers of the fuzz targets (see the numerical contract in
//! `sgld::kernels`).
#![allow(dead_code)]

/// f32 unit roundoff.
pub const U: f64 = f32::EPSILON as f64 / 2.0;

/// `x` and `y` agree within `rounds` roundings of magnitude `mag` (plus subnormal
/// slack), or both are NaN. Inputs whose magnitude is near overflow only need no panic.
pub fn close(x: f32, y: f32, mag: f64, rounds: f64) -> bool {
    // Equal results (including the same infinity from an overflowing intermediate, which
    // both twins compute in the same order) agree; a magnitude that is NaN or near
    // overflow asks for nothing but the absence of a panic.
    let near_overflow =
        mag.partial_cmp(&(f32::MAX as f64 / 4.0)) != Some(core::cmp::Ordering::Less);
    if x == y || near_overflow {
        return true;
    }
    if x.is_nan() || y.is_nan() {
        return x.is_nan() && y.is_nan();
    }
    (x as f64 - y as f64).abs() <= rounds * U * mag + 1e-43
}

/// Bitwise equality of two slices (a NaN equal only to the same NaN).
pub fn identical(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Makes arbitrary floats moderate: non-finite values become 0 and magnitudes are
/// capped, for targets that check finiteness of outputs.
pub fn moderate(v: &[f32], cap: f32) -> Vec<f32> {
    v.iter()
        .map(|x| {
            if x.is_finite() {
                x.clamp(-cap, cap)
            } else {
                0.0
            }
        })
        .collect()
}

/// Batch indices from fuzz input, modulo a data-set size when `wrap` (else as given).
pub fn batch(raw: &[u16], n: usize, wrap: bool) -> Vec<usize> {
    raw.iter()
        .take(64)
        .map(|&i| {
            if wrap && n > 0 {
                i as usize % n
            } else {
                i as usize
            }
        })
        .collect()
}

/// The checked gradient must succeed exactly when the inputs are valid; with moderate
/// inputs it must be finite and within `tol(j)` of the f64 reference `want`.
pub fn check_gradient(
    got: Result<(), sgld::Error>,
    valid: bool,
    grad: &[f32],
    want: Option<&[f64]>,
    tol: impl Fn(usize) -> f64,
) {
    assert_eq!(got.is_ok(), valid, "{got:?}");
    if let (true, Some(want)) = (valid, want) {
        for (j, (g, w)) in grad.iter().zip(want).enumerate() {
            assert!(g.is_finite(), "grad[{j}] = {g}");
            assert!(
                (*g as f64 - w).abs() <= tol(j),
                "grad[{j}] = {g}, f64 reference {w}, tolerance {}",
                tol(j)
            );
        }
    }
}

/// A data set read from a file is consistent: one finite response a row, finite dense
/// values, sparse rows strictly increasing within the dimension.
pub fn consistent(d: &sgld_harness::data::Dataset) {
    use sgld_harness::data::Features;
    assert!(!d.y.is_empty() && d.y.iter().all(|y| y.is_finite()));
    match &d.features {
        Features::SparseBinary {
            offsets,
            indices,
            d: dim,
        } => rows_increase(offsets, indices, *dim, d.y.len()),
        Features::SparseValued {
            offsets,
            indices,
            values,
            d: dim,
        } => {
            rows_increase(offsets, indices, *dim, d.y.len());
            assert!(values.len() == indices.len() && values.iter().all(|v| v.is_finite()));
        }
        Features::Dense { x, d: dim } => {
            assert_eq!(x.len(), d.y.len() * dim);
            assert!(x.iter().all(|v| v.is_finite()));
        }
        Features::Mapped(m) => {
            assert_eq!(m.len(), d.y.len());
            assert!((0..m.len()).all(|i| m.features(i).iter().all(|v| v.is_finite())));
            assert!(m.rows().is_ok());
        }
    }
}

/// `n` sparse rows, each's indices strictly increasing and below `dim`.
fn rows_increase(offsets: &[usize], indices: &[u32], dim: usize, n: usize) {
    assert_eq!(offsets.len(), n + 1);
    for w in offsets.windows(2) {
        let row = &indices[w[0]..w[1]];
        assert!(row.windows(2).all(|p| p[0] < p[1]) && row.iter().all(|&j| (j as usize) < dim));
    }
}
