//! The largest eigenvalue of a covariance of `m` scores in `d` dimensions without forming
//! the `d × d` (or `m × m`) matrix: Lanczos on the product `v ↦ Cᵀ(Cv)/m`, `C` the
//! centred scores, `O(md)` a step. The eigendecomposition of the formed matrix costs
//! `O(k³)` with `k = min(m, d)`: minutes at a thousand parameters, where this takes a
//! fraction of a second.

use rayon::prelude::*;

/// Lanczos steps at most.
const MAX_STEPS: usize = 80;

/// Relative change of the largest Ritz value below which Lanczos stops.
const TOLERANCE: f64 = 1e-9;

/// `λ_max` of `CᵀC/m`, `C` the `m × d` row-major `scores` with their column means
/// removed. Lanczos with full reorthogonalisation from a fixed start: the largest Ritz
/// value rises to `λ_max` from below, converging fast where the top of the spectrum
/// stands apart, and exactly in `min(m, d)` steps.
pub fn covariance_lambda_max(scores: &[f32], m: usize, d: usize) -> f64 {
    if m == 0 || d == 0 {
        return 0.0;
    }
    let mut mean = vec![0.0f64; d];
    for row in scores.chunks_exact(d) {
        for (a, &s) in mean.iter_mut().zip(row) {
            *a += s as f64;
        }
    }
    mean.iter_mut().for_each(|a| *a /= m as f64);
    // w = Cᵀc/m with c = Cv (cᵢ = sᵢ·v − μ·v), rows in parallel.
    let times = |v: &[f64]| -> Vec<f64> {
        let shift: f64 = mean.iter().zip(v).map(|(a, b)| a * b).sum();
        let parts: Vec<Vec<f64>> = scores
            .par_chunks(d * 256)
            .map(|rows| {
                let mut w = vec![0.0f64; d];
                for row in rows.chunks_exact(d) {
                    let cv = row.iter().zip(v).map(|(&a, b)| a as f64 * b).sum::<f64>() - shift;
                    for (wj, &a) in w.iter_mut().zip(row) {
                        *wj += a as f64 * cv;
                    }
                }
                w
            })
            .collect();
        // Σᵢ sᵢcᵢ = Σᵢ(sᵢ − μ)cᵢ, as Σᵢcᵢ = 0 by centring.
        let mut w = vec![0.0f64; d];
        for p in &parts {
            for (a, b) in w.iter_mut().zip(p) {
                *a += b / m as f64;
            }
        }
        w
    };
    let steps = MAX_STEPS.min(m.min(d));
    // A fixed start with weight on every coordinate.
    let mut q: Vec<f64> = (0..d)
        .map(|j| 1.0 + ((j * 7919) % 97) as f64 / 97.0)
        .collect();
    normalise(&mut q);
    let mut basis: Vec<Vec<f64>> = Vec::with_capacity(steps);
    let (mut alphas, mut betas) = (Vec::with_capacity(steps), Vec::with_capacity(steps));
    let mut top = 0.0f64;
    for k in 0..steps {
        let mut w = times(&q);
        let alpha: f64 = w.iter().zip(&q).map(|(a, b)| a * b).sum();
        basis.push(q);
        alphas.push(alpha);
        // Full reorthogonalisation (twice is enough) keeps the Ritz values honest.
        for _ in 0..2 {
            for b in &basis {
                let c: f64 = w.iter().zip(b).map(|(a, b)| a * b).sum();
                w.iter_mut().zip(b).for_each(|(a, b)| *a -= c * b);
            }
        }
        let beta = norm(&w);
        let ritz = largest_ritz(&alphas, &betas);
        let done = (ritz - top).abs() <= TOLERANCE * ritz.abs() || beta <= 1e-12 * ritz.abs();
        top = ritz;
        if done || k + 1 == steps {
            break;
        }
        betas.push(beta);
        q = w.iter().map(|a| a / beta).collect();
    }
    top.max(0.0)
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|a| a * a).sum::<f64>().sqrt()
}

fn normalise(v: &mut [f64]) {
    let n = norm(v);
    v.iter_mut().for_each(|a| *a /= n);
}

/// The largest eigenvalue of the symmetric tridiagonal matrix with diagonal `alphas` and
/// off-diagonal `betas`.
fn largest_ritz(alphas: &[f64], betas: &[f64]) -> f64 {
    sgld::linalg::tridiagonal_max_eigenvalue(alphas, betas).unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgld::estimate::{sampling_threshold, threshold_scratch_len};

    fn scores(m: usize, d: usize, seed: u64) -> Vec<f32> {
        let mut s = vec![0.0f32; m * d];
        sgld::noise::fill_normal(&mut sgld::noise::default_rng(seed), &mut s);
        // Columns of unequal scale and a shared factor: a spectrum with structure.
        for (i, row) in s.chunks_exact_mut(d).enumerate() {
            let f = row[0];
            for (j, v) in row.iter_mut().enumerate() {
                *v = *v * (1.0 + j as f32 / d as f32) + 0.5 * f + 3.0 + (i % 3) as f32;
            }
        }
        s
    }

    /// The same λ_max as the formed matrix's eigendecomposition (the core's threshold),
    /// with more scores than dimensions and fewer.
    #[test]
    fn lanczos_finds_the_formed_matrix_s_largest_eigenvalue() {
        for (m, d) in [(300, 40), (40, 300), (120, 120), (2, 5), (5, 1)] {
            let s = scores(m, d, (m * d) as u64);
            let mut scratch = vec![0.0f64; threshold_scratch_len(m, d)];
            let exact = sampling_threshold(&s, m, d, 1.0, m, None, &mut scratch)
                .unwrap()
                .lambda_max;
            let fast = covariance_lambda_max(&s, m, d);
            assert!(
                (fast - exact).abs() <= 1e-7 * exact,
                "{m} x {d}: {fast} against {exact}"
            );
        }
        // Identical rows: no spread, λ = 0.
        assert_eq!(covariance_lambda_max(&[1.0, 2.0, 1.0, 2.0], 2, 2), 0.0);
    }
}
