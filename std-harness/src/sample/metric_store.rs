//! The warm-up's metric: a preconditioner `M ≈ P⁻¹` owned beside the chains (dense by
//! its Cholesky factor, or diagonal), and its construction from a precision `P`.

use sgld::sampler::{Mala, Metric};

use super::problem::ModelSync;

/// A preconditioner `M ≈ P⁻¹`, owned, with the Laplace approximation's sds.
#[derive(Debug, Clone)]
pub enum MetricStore {
    /// The Cholesky factor of `M` (row-major lower triangle).
    Cholesky(Vec<f32>),
    /// `diag(M)`.
    Diagonal(Vec<f32>),
}

impl MetricStore {
    /// The metric the samplers borrow.
    pub fn metric(&self) -> Metric<'_> {
        match self {
            MetricStore::Cholesky(l) => Metric::Cholesky(l),
            MetricStore::Diagonal(m) => Metric::Diagonal(m),
        }
    }

    /// MALA on `model`'s full data with this metric (`M` itself, by its Cholesky factor
    /// when dense).
    pub fn mala<'m>(
        &'m self,
        model: &'m dyn ModelSync,
    ) -> Result<Mala<'m, &'m dyn ModelSync>, sgld::Error> {
        let m = Mala::new(model);
        match self {
            MetricStore::Cholesky(l) => m.with_covariance_factor(l),
            MetricStore::Diagonal(v) => m.with_metric(v),
        }
    }

    /// `"dense"` or `"diagonal"`.
    pub fn kind(&self) -> &'static str {
        match self {
            MetricStore::Cholesky(_) => "dense",
            MetricStore::Diagonal(_) => "diagonal",
        }
    }

    /// `out = M^½ z` with `M^½ = L` (dense) or `√m` (diagonal).
    pub fn sqrt_times(&self, z: &[f64]) -> Vec<f64> {
        match self {
            MetricStore::Cholesky(l) => {
                let d = z.len();
                (0..d)
                    .map(|i| (0..=i).map(|k| l[i * d + k] as f64 * z[k]).sum())
                    .collect()
            }
            MetricStore::Diagonal(m) => m
                .iter()
                .zip(z)
                .map(|(a, b)| (*a as f64).sqrt() * b)
                .collect(),
        }
    }

    /// `out = (M^½)ᵀ g`: a gradient in the whitened coordinates `z = M^{-½}θ`.
    pub fn whiten_grad(&self, g: &[f32], out: &mut [f32]) {
        match self {
            MetricStore::Cholesky(l) => {
                let d = g.len();
                out.fill(0.0);
                for (i, &gi) in g.iter().enumerate() {
                    for (o, &lik) in out[..=i].iter_mut().zip(&l[i * d..i * d + i + 1]) {
                        *o += lik * gi;
                    }
                }
            }
            MetricStore::Diagonal(m) => {
                for ((o, &mi), &gi) in out.iter_mut().zip(m).zip(g) {
                    *o = mi.sqrt() * gi;
                }
            }
        }
    }

    /// The sds of `M` (`√Mⱼⱼ`).
    pub fn sds(&self) -> Vec<f64> {
        match self {
            MetricStore::Cholesky(l) => {
                let d = l.len().isqrt();
                (0..d)
                    .map(|i| {
                        l[i * d..i * d + i + 1]
                            .iter()
                            .map(|&v| v as f64 * v as f64)
                            .sum::<f64>()
                            .sqrt()
                    })
                    .collect()
            }
            MetricStore::Diagonal(m) => m.iter().map(|&v| (v as f64).sqrt()).collect(),
        }
    }

    /// The same metric scaled by `s` (`M·s`).
    pub fn scaled(&self, s: f64) -> MetricStore {
        let r = s.sqrt();
        match self {
            MetricStore::Cholesky(l) => {
                MetricStore::Cholesky(l.iter().map(|&v| (v as f64 * r) as f32).collect())
            }
            MetricStore::Diagonal(m) => {
                MetricStore::Diagonal(m.iter().map(|&v| (v as f64 * s) as f32).collect())
            }
        }
    }
}

/// The covariance `M = P⁻¹` from a precision `P` (the lower triangle of a `d × d` matrix,
/// row-major, or its diagonal): by Cholesky factors when
/// dense (falling back to `1/Pⱼⱼ` on the diagonal when `P` is not positive definite),
/// `1/Pⱼⱼ` when diagonal. Also returns the Cholesky factor of `P` when dense (MALA's
/// precision factor).
pub fn covariance(p: &[f64], d: usize) -> (MetricStore, Option<Vec<f32>>) {
    // A diagonal entry that is not positive (no information on the parameter) is
    // replaced by 10⁻⁶ of the largest, not left to give an infinite variance; a small
    // positive one is the precision of a feature of small scale, and stays.
    let diagonal = |p: &[f64], stride: usize| {
        let top = (0..d).map(|j| p[j * stride]).fold(0.0f64, f64::max);
        let floor = (1e-6 * top).max(f64::MIN_POSITIVE);
        let variance = |v: f64| (1.0 / if v > 0.0 { v } else { floor }).min(f32::MAX as f64);
        MetricStore::Diagonal((0..d).map(|j| variance(p[j * stride]) as f32).collect())
    };
    if p.len() != d * d {
        return (diagonal(p, 1), None);
    }
    let mut r = p.to_vec();
    if sgld::linalg::cholesky(&mut r, d).is_err() {
        return (diagonal(p, d + 1), None);
    }
    // Σ = R⁻ᵀR⁻¹: invert the lower-triangular R column by column, then Σ = R⁻ᵀ R⁻¹.
    let mut inv = vec![0.0f64; d * d];
    for c in 0..d {
        for i in c..d {
            let mut s = if i == c { 1.0 } else { 0.0 };
            for k in c..i {
                s -= r[i * d + k] * inv[k * d + c];
            }
            inv[i * d + c] = s / r[i * d + i];
        }
    }
    let mut sigma = vec![0.0f64; d * d];
    for i in 0..d {
        for j in 0..=i {
            // (R⁻ᵀR⁻¹)ᵢⱼ = Σₖ inv[k][i]·inv[k][j], k ≥ max(i, j) = i.
            let v: f64 = (i..d).map(|k| inv[k * d + i] * inv[k * d + j]).sum();
            sigma[i * d + j] = v;
            sigma[j * d + i] = v;
        }
    }
    let factor = Some(r.iter().map(|&v| v as f32).collect());
    match sgld::linalg::cholesky(&mut sigma, d) {
        // The factor's strict upper triangle is zero.
        Ok(()) => (
            MetricStore::Cholesky(sigma.iter().map(|&v| v as f32).collect()),
            factor,
        ),
        Err(_) => (diagonal(p, d + 1), factor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The covariance of a 2×2 precision is its inverse, factored.
    #[test]
    fn covariance_inverts_the_precision() {
        let p = [4.0, 0.0, 1.0, 2.0]; // lower triangle of [[4, 1], [1, 2]]
        let (m, r) = covariance(&p, 2);
        let MetricStore::Cholesky(l) = m else {
            panic!("dense expected")
        };
        // Σ = [[2, −1], [−1, 4]] / 7
        let s00 = (l[0] * l[0]) as f64;
        let s10 = (l[2] * l[0]) as f64;
        let s11 = (l[2] * l[2] + l[3] * l[3]) as f64;
        assert!((s00 - 2.0 / 7.0).abs() < 1e-6);
        assert!((s10 + 1.0 / 7.0).abs() < 1e-6);
        assert!((s11 - 4.0 / 7.0).abs() < 1e-6);
        assert_eq!(l[1], 0.0);
        assert!(r.is_some());
        // A feature of small scale keeps its small precision (a large variance); one
        // nothing informs gets 10⁻⁶ of the largest.
        let (m, _) = covariance(&[1e8, 1e-6, 0.0], 3);
        let sds = m.sds();
        assert!(
            (sds[0] - 1e-4).abs() < 1e-9 && (sds[1] - 1e3).abs() < 1e-2,
            "{sds:?}"
        );
        assert!((sds[2] - 1e-1).abs() < 1e-6, "{sds:?}");
        let d = MetricStore::Diagonal(vec![4.0, 9.0]);
        assert_eq!(d.sds(), vec![2.0, 3.0]);
        assert_eq!(d.sqrt_times(&[1.0, 1.0]), vec![2.0, 3.0]);
    }
}
