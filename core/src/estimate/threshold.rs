//! The sampling threshold of §4.1 (eq. 10): when the injected noise dominates the
//! stochastic-gradient noise, SGLD has entered its posterior-sampling phase.
//!
//! `α = ε N² / (4n) · λ_max(M^½ V_s M^½)`, where `V_s` is the empirical covariance of the
//! `n` per-example scores `s_ti = ∇ log p(x_ti|θ) + ∇ log p(θ)/N` (eq. 9) of the current
//! mini-batch and `M` a diagonal preconditioner (identity for plain SGLD).
//!
//! With `C` the `n × d` matrix of centred, preconditioned scores, `V_s = CᵀC/n` has rank
//! at most `n − 1` and the same non-zero eigenvalues as the `n × n` Gram matrix `CCᵀ/n`:
//! the smaller of the two is formed (`k = min(n, d)`), in caller scratch, and its largest
//! eigenvalue found by Householder tridiagonalisation and bisection. Note that the prior term of `s_ti` is the same
//! for every `i` and cancels on centring.

use crate::error::{Error, check_finite, check_len, check_step_size};
use crate::linalg::sym_max_eigenvalue;
use crate::models::Model;

/// The threshold and the eigenvalue behind it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    /// `α` of eq. 10.
    pub alpha: f64,
    /// `λ_max(M^½ V_s M^½)`.
    pub lambda_max: f64,
}

impl Threshold {
    /// The step size at which `α` would equal `target`, other things equal:
    /// `ε* = 4nα / (N² λ_max)` (eq. 10 solved for ε). Infinite when `λ_max = 0`.
    pub fn step_size_for(&self, target: f64, n: usize, n_data: usize) -> f64 {
        let nd = n_data as f64;
        4.0 * n as f64 * target / (nd * nd * self.lambda_max)
    }
}

/// f64 scratch words [`sampling_threshold`] needs for `n` scores of dimension `d`.
pub const fn threshold_scratch_len(n: usize, d: usize) -> usize {
    let k = if n < d { n } else { d };
    k * k + d
}

/// Writes the per-example scores `s_i = ∇ log p(x_i|θ) + ∇ log p(θ)/N` (eq. 9) of a
/// mini-batch into `scores` (`n × d`, row `i` for `batch[i]`).
pub fn scores_into<M: Model + ?Sized>(
    model: &M,
    theta: &[f32],
    batch: &[usize],
    scores: &mut [f32],
) -> Result<(), Error> {
    let d = model.dim();
    check_len("theta", d, theta.len())?;
    crate::gradient::check_batch(batch, model.len())?;
    check_len("scores", batch.len() * d, scores.len())?;
    check_finite("theta", theta)?;
    let inv_n = 1.0 / model.len() as f32;
    for (row, &i) in scores.chunks_exact_mut(d).zip(batch) {
        row.fill(0.0);
        model.add_log_prior_grad(theta, row);
        for s in row.iter_mut() {
            *s *= inv_n;
        }
        model.add_log_lik_grad(theta, &[i], row);
    }
    Ok(())
}

/// The sampling threshold `α` of eq. 10 from `n` scores of dimension `d` (`scores` is
/// `n × d` row-major), step size `eps`, data-set size `n_data` and an optional diagonal
/// preconditioner (`d` entries, finite, `≥ 0`). `scratch` needs
/// [`threshold_scratch_len`]`(n, d)` words. Allocation-free.
///
/// ```
/// use sgld::estimate::{sampling_threshold, threshold_scratch_len};
/// // Two scores in 1-D: variance ((1-2)² + (3-2)²)/2 = 1.
/// let mut scratch = [0.0; threshold_scratch_len(2, 1)];
/// let t = sampling_threshold(&[1.0, 3.0], 2, 1, 0.01, 100, None, &mut scratch)?;
/// assert!((t.lambda_max - 1.0).abs() < 1e-12);
/// assert!((t.alpha - 0.01 * 100.0 * 100.0 / 8.0).abs() < 1e-9);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn sampling_threshold(
    scores: &[f32],
    n: usize,
    d: usize,
    eps: f64,
    n_data: usize,
    precond: Option<&[f32]>,
    scratch: &mut [f64],
) -> Result<Threshold, Error> {
    check_step_size(eps)?;
    if eps > f32::MAX as f64 {
        return Err(Error::InvalidStepSize { value: eps });
    }
    if n < 2 {
        return Err(Error::InvalidParameter {
            what: "the sampling threshold needs at least 2 scores",
        });
    }
    if d == 0 {
        return Err(Error::Empty {
            what: "score dimension",
        });
    }
    let nd = n.checked_mul(d).ok_or(Error::InvalidParameter {
        what: "score matrix dimensions overflow usize",
    })?;
    check_len("scores", nd, scores.len())?;
    check_finite("scores", scores)?;
    if n_data < n {
        return Err(Error::InvalidParameter {
            what: "the data set must be at least as large as the batch",
        });
    }
    if let Some(m) = precond {
        check_len("preconditioner", d, m.len())?;
        if !m.iter().all(|&x| x.is_finite() && x >= 0.0) {
            return Err(Error::InvalidParameter {
                what: "preconditioner entries must be finite and >= 0",
            });
        }
    }
    let k = n.min(d);
    let need = k * k + d;
    let found = scratch.len();
    let scratch = scratch.get_mut(..need).ok_or(Error::LengthMismatch {
        what: "threshold scratch",
        expected: need,
        found,
    })?;
    let (mat, mean) = scratch.split_at_mut(k * k);

    // Column means of the scores.
    mean.fill(0.0);
    for row in scores.chunks_exact(d) {
        for (m, &s) in mean.iter_mut().zip(row) {
            *m += s as f64;
        }
    }
    for m in mean.iter_mut() {
        *m /= n as f64;
    }
    let scale = |j: usize| {
        precond
            .and_then(|m| m.get(j))
            .map_or(1.0, |&x| libm::sqrt(x as f64))
    };

    let inv_n = 1.0 / n as f64;
    mat.fill(0.0);
    if d <= n {
        // V_s = CᵀC / n  (d × d): the upper triangle summed row by row (contiguous, in
        // the order of the rows), then scaled and mirrored.
        for row in scores.chunks_exact(d) {
            for a in 0..d {
                let ca = row[a] as f64 - mean[a];
                let (acc, tail) = (&mut mat[a * d + a..a * d + d], &row[a..]);
                for ((m, &s), &mu) in acc.iter_mut().zip(tail).zip(&mean[a..]) {
                    *m += ca * (s as f64 - mu);
                }
            }
        }
        for a in 0..d {
            let sa = scale(a) * inv_n;
            for b in a..d {
                let v = mat[a * d + b] * sa * scale(b);
                mat[a * d + b] = v;
                mat[b * d + a] = v;
            }
        }
    } else {
        // Gram = CCᵀ / n  (n × n), same non-zero spectrum; the metric's entry `m_j` (the
        // square of the scale) weights coordinate `j`.
        let centred = |i: usize, j: usize| scores[i * d + j] as f64 - mean[j];
        for a in 0..n {
            for b in a..n {
                let v = match precond {
                    None => (0..d).map(|j| centred(a, j) * centred(b, j)).sum::<f64>(),
                    Some(m) => (0..d)
                        .map(|j| centred(a, j) * centred(b, j) * m[j] as f64)
                        .sum::<f64>(),
                } * inv_n;
                mat[a * n + b] = v;
                mat[b * n + a] = v;
            }
        }
    }
    let lambda_max = sym_max_eigenvalue(mat, k)?.max(0.0);
    let ndat = n_data as f64;
    Ok(Threshold {
        alpha: eps * ndat * ndat / (4.0 * n as f64) * lambda_max,
        lambda_max,
    })
}
