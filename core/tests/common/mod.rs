//! Shared machinery of the posterior tests: running a chain with batch-wise weighted
//! moments, Monte Carlo standard errors by batch means, and the exact stationary
//! covariance of the discretised Langevin chain on a Gaussian target.
#![allow(dead_code)]

use nalgebra::DMatrix;
use sgld::estimate::WeightedMoments;
use sgld::gradient::{GradientEstimator, sample_batch};
use sgld::schedule::Schedule;
use sgld::{Sgld, noise::default_rng};

/// Weighted (eq. 11) moments of a chain, overall and per batch of consecutive draws.
pub struct ChainSummary {
    pub mean: Vec<f64>,
    pub var: Vec<f64>,
    /// Weighted second moments `E[θⱼθₖ]`, row-major `d × d`.
    pub second: Vec<f64>,
    pub batch_mean: Vec<Vec<f64>>,
    pub batch_var: Vec<Vec<f64>>,
    pub batch_weight: Vec<f64>,
    pub max_eps: f64,
    pub refused: u64,
}

impl ChainSummary {
    /// Monte Carlo standard error of the weighted mean of component `j` by weighted batch
    /// means: `√(Σ W_b² (m_b − m)²) / Σ W_b` scaled by `√(B/(B−1))`.
    pub fn mcse_mean(&self, j: usize) -> f64 {
        mcse(
            &self.batch_weight,
            self.batch_mean.iter().map(|m| m[j]),
            self.mean[j],
        )
    }
    /// Monte Carlo standard error of the weighted variance of component `j`, from the
    /// spread of the batch variances.
    pub fn mcse_var(&self, j: usize) -> f64 {
        let avg = weighted_avg(&self.batch_weight, self.batch_var.iter().map(|v| v[j]));
        mcse(&self.batch_weight, self.batch_var.iter().map(|v| v[j]), avg)
    }
    pub fn cov(&self, j: usize, k: usize) -> f64 {
        let d = self.mean.len();
        self.second[j * d + k] - self.mean[j] * self.mean[k]
    }
}

fn weighted_avg(w: &[f64], x: impl Iterator<Item = f64>) -> f64 {
    let total: f64 = w.iter().sum();
    w.iter().zip(x).map(|(w, x)| w * x).sum::<f64>() / total
}

fn mcse(w: &[f64], x: impl Iterator<Item = f64>, centre: f64) -> f64 {
    let b = w.len() as f64;
    let total: f64 = w.iter().sum();
    let s: f64 = w
        .iter()
        .zip(x)
        .map(|(w, x)| w * w * (x - centre) * (x - centre))
        .sum();
    (s * b / (b - 1.0)).sqrt() / total
}

/// Runs SGLD from `theta0`: `burn_in` steps discarded, then `steps` steps whose draws are
/// kept with weight εₜ, in `n_batches` consecutive batches. Batches of `n` indices are
/// drawn uniformly with replacement.
#[allow(clippy::too_many_arguments)]
pub fn run_chain<E: GradientEstimator>(
    est: &E,
    theta0: &[f32],
    schedule: &impl Schedule,
    burn_in: u64,
    steps: u64,
    n: usize,
    seed: u64,
    n_batches: usize,
) -> ChainSummary {
    let d = theta0.len();
    let mut theta = theta0.to_vec();
    let mut scratch = vec![0.0f32; Sgld::scratch_len(d)];
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    let mut rng = default_rng(seed);
    let mut batch = vec![0usize; n];
    let sampler = Sgld::new();
    let mut t = 0u64;
    for _ in 0..burn_in {
        sample_batch(&mut rng, est.n_data(), &mut batch).unwrap();
        sampler
            .step(&mut state, est, &batch, schedule.step_size(t), &mut rng)
            .unwrap();
        t += 1;
    }
    let mut global_store = vec![0.0; WeightedMoments::storage_len(d)];
    let mut global = WeightedMoments::new(&mut global_store, d).unwrap();
    let mut second = vec![0.0f64; d * d];
    let mut total_w = 0.0f64;
    let per = steps / n_batches as u64;
    let mut out = ChainSummary {
        mean: vec![],
        var: vec![],
        second: vec![],
        batch_mean: vec![],
        batch_var: vec![],
        batch_weight: vec![],
        max_eps: 0.0,
        refused: 0,
    };
    for _ in 0..n_batches {
        let mut store = vec![0.0; WeightedMoments::storage_len(d)];
        let mut bm = WeightedMoments::new(&mut store, d).unwrap();
        for _ in 0..per {
            sample_batch(&mut rng, est.n_data(), &mut batch).unwrap();
            let eps = schedule.step_size(t);
            t += 1;
            let info = sampler
                .step(&mut state, est, &batch, eps, &mut rng)
                .unwrap();
            assert!(!info.non_finite, "seed {seed}: non-finite step at t = {t}");
            let w = eps as f64;
            out.max_eps = out.max_eps.max(w);
            global.push(w, state.theta()).unwrap();
            bm.push(w, state.theta()).unwrap();
            if d <= 10 {
                let th = state.theta();
                for j in 0..d {
                    for k in 0..d {
                        second[j * d + k] += w * th[j] as f64 * th[k] as f64;
                    }
                }
                total_w += w;
            }
        }
        out.batch_mean.push((0..d).map(|j| bm.mean(j)).collect());
        out.batch_var.push((0..d).map(|j| bm.variance(j)).collect());
        out.batch_weight.push(bm.total_weight());
    }
    out.mean = (0..d).map(|j| global.mean(j)).collect();
    out.var = (0..d).map(|j| global.variance(j)).collect();
    out.second = second.iter().map(|s| s / total_w).collect();
    out.refused = state.refused();
    out
}

/// The stationary covariance `Σ = BΣBᵀ + Q` of the linear chain
/// `θ' = Bθ + noise(Q)`, by the doubling iteration `Σ ← Σ + BΣBᵀ`, `B ← B²`.
pub fn stationary_covariance(b: &DMatrix<f64>, q: &DMatrix<f64>) -> DMatrix<f64> {
    let mut s = q.clone();
    let mut bk = b.clone();
    for _ in 0..64 {
        s = &s + &bk * &s * bk.transpose();
        bk = &bk * &bk;
        if bk.norm() < 1e-30 {
            break;
        }
    }
    s
}

/// The stationary covariance of SGLD with constant step `ε` on a Gaussian posterior of
/// precision `A` whose stochastic-gradient noise has covariance `V`:
/// `θ' = (I − εA/2)θ + (ε/2)ξ + √ε η` gives `Q = (ε²/4)V + εI`.
pub fn sgld_stationary_covariance(a: &DMatrix<f64>, v: &DMatrix<f64>, eps: f64) -> DMatrix<f64> {
    let d = a.nrows();
    let b = DMatrix::identity(d, d) - a * (eps / 2.0);
    let q = v * (eps * eps / 4.0) + DMatrix::identity(d, d) * eps;
    stationary_covariance(&b, &q)
}

/// Digamma ψ(x) for x ≥ 6 by its asymptotic series (error < 1e-14 there); smaller x
/// by the recurrence ψ(x) = ψ(x+1) − 1/x.
pub fn digamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 6.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + x.ln()
        - 0.5 / x
        - x2 * (1.0 / 12.0 - x2 * (1.0 / 120.0 - x2 * (1.0 / 252.0 - x2 / 240.0)))
}

/// Trigamma ψ₁(x), likewise.
pub fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 6.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + 1.0 / x
        + 0.5 * x2
        + x2 / x * (1.0 / 6.0 - x2 * (1.0 / 30.0 - x2 * (1.0 / 42.0 - x2 / 30.0)))
}

/// Standard normals as f32 from a seed.
pub fn normals(n: usize, seed: u64) -> Vec<f32> {
    let mut v = vec![0.0; n];
    sgld::noise::fill_normal(&mut default_rng(seed), &mut v);
    v
}
