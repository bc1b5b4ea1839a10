//! Your own model through the library: a Poisson regression with a log link, written
//! here as a user writes one (it implements the core's `Model`; the crate's own
//! `Glm` is not used), sampled by `Target::sample` with the defaults of `sgld sample`: the warm-up, four chains, R̂ and ESS, the warnings and the files.
//!
//! ```text
//! cargo run --release -p sgld-harness --example poisson [OUT_DIR]
//! ```
//!
//! The data are 2,000 counts from five features drawn here (a fixed seed), with
//! `log λᵢ = βᵀxᵢ`, β = (0.6, −0.4, 0.25, 0, 0.1) and an intercept of 0.3; the prior is
//! N(0, 10) on every coefficient. The test at the bottom checks the posterior against a
//! long exact-gradient MALA run on the same model.

use std::path::PathBuf;

use rand_core::Rng;
use sgld::models::Model;
use sgld::noise::{default_rng, fill_normal};
use sgld_harness::error::Error;
use sgld_harness::sample::{Outcome, SampleOptions, Target};

/// Poisson regression `yᵢ ~ Poisson(exp(βᵀxᵢ))` with a N(0, v) prior on each coefficient:
/// `x` is `n × d` row-major (a column of ones for the intercept), `y` the counts.
struct PoissonRegression {
    x: Vec<f32>,
    y: Vec<f32>,
    d: usize,
    prior_var: f32,
}

impl PoissonRegression {
    fn eta(&self, theta: &[f32], i: usize) -> f32 {
        let row = &self.x[i * self.d..(i + 1) * self.d];
        row.iter().zip(theta).map(|(a, b)| a * b).sum()
    }
}

impl Model for PoissonRegression {
    fn dim(&self) -> usize {
        self.d
    }
    fn len(&self) -> usize {
        self.y.len()
    }
    /// `∇ log N(θ; 0, vI) = −θ/v`.
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        for (g, t) in grad.iter_mut().zip(theta) {
            *g -= t / self.prior_var;
        }
    }
    /// `∇ log p(yᵢ|θ) = (yᵢ − exp(ηᵢ)) xᵢ`. Batch indices are the sampler's own, always
    /// in range; a model must still not panic on others, so it skips them.
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        for &i in batch.iter().filter(|&&i| i < self.y.len()) {
            let c = self.y[i] - self.eta(theta, i).exp();
            let row = &self.x[i * self.d..(i + 1) * self.d];
            for (g, a) in grad.iter_mut().zip(row) {
                *g += c * a;
            }
        }
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        -theta.iter().map(|&t| (t as f64).powi(2)).sum::<f64>() / (2.0 * self.prior_var as f64)
    }
    /// `Σ yᵢηᵢ − exp(ηᵢ)` (the `− ln yᵢ!` is a constant).
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        batch
            .iter()
            .filter(|&&i| i < self.y.len())
            .map(|&i| {
                let eta = self.eta(theta, i) as f64;
                self.y[i] as f64 * eta - eta.exp()
            })
            .sum()
    }
}

/// The example's data: `n` rows of five standard-normal features and a 1, and counts.
fn data(n: usize) -> PoissonRegression {
    let (beta, intercept) = ([0.6f32, -0.4, 0.25, 0.0, 0.1], 0.3f32);
    let d = beta.len() + 1;
    let mut z = vec![0.0f32; n * beta.len()];
    fill_normal(&mut default_rng(17), &mut z);
    let mut u = default_rng(18);
    let mut x = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for row in z.chunks_exact(beta.len()) {
        x.extend_from_slice(row);
        x.push(1.0);
        let lambda = (intercept + row.iter().zip(beta).map(|(a, b)| a * b).sum::<f32>()).exp();
        // A Poisson(λ) count by inversion at a uniform in (0, 1).
        let v = ((u.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let (mut k, mut p) = (0u32, (-(lambda as f64)).exp());
        let mut cdf = p;
        while cdf < v && k < 1000 {
            k += 1;
            p *= lambda as f64 / k as f64;
            cdf += p;
        }
        y.push(k as f32);
    }
    PoissonRegression {
        x,
        y,
        d,
        prior_var: 10.0,
    }
}

/// Samples `model` with `sgld sample`'s defaults into `out`.
fn sample(model: &PoissonRegression, out: PathBuf) -> Result<Outcome, Error> {
    let names = ["x1", "x2", "x3", "x4", "x5"]
        .iter()
        .map(|n| format!("beta[{n}]"))
        .chain(["intercept".to_string()])
        .collect();
    // The warm-up's Laplace approximation adds the prior's precision, 1/v on each
    // coefficient.
    let precision = |theta: &[f32]| vec![1.0 / model.prior_var as f64; theta.len()];
    let target = Target::new(model, "poisson-example", names)
        .with_prior(&format!("gaussian:{}", model.prior_var), &precision);
    // `SampleOptions::new` holds the command's defaults.
    target.sample(&SampleOptions::new(out))
}

fn main() {
    let out = std::env::args().nth(1).map_or_else(
        || std::env::temp_dir().join("sgld-poisson-example"),
        PathBuf::from,
    );
    let model = data(2_000);
    match sample(&model, out) {
        Ok(outcome) => outcome.print(),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

/// The tests' long MALA reference run.
#[cfg(test)]
#[path = "../tests/common/reference.rs"]
mod reference;

#[cfg(test)]
mod tests {
    use super::*;

    /// The library call's posterior against a long exact-gradient MALA run on the same
    /// model: every mean within 4 Monte Carlo standard errors (the run's, from its bulk
    /// ESS, and the reference's, from batch means), every sd within the sd's Monte Carlo
    /// error plus the inflation of the run's step, `(ε/4 + α)/2` relative, with ε the
    /// warm-up's step in the preconditioned coordinates and α the sampling threshold it
    /// reached (both in summary.json).
    #[test]
    fn the_posterior_matches_a_long_mala_run() {
        let dir = tempfile::tempdir().unwrap();
        let model = data(2_000);
        let outcome = sample(&model, dir.path().to_path_buf()).unwrap();
        let s = &outcome.summary;
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.model, "poisson-example");
        assert_eq!(s.prior, "gaussian:10");
        let r = super::reference::mala_reference(&model, 300_000);
        assert!(r.acceptance > 0.3, "reference acceptance {}", r.acceptance);
        let bias = (s.warmup.step_size / 4.0 + s.warmup.alpha) / 2.0;
        for (j, p) in s.params.iter().enumerate() {
            let mean_tol = 4.0 * (p.sd * p.sd / p.ess_bulk + r.mean_se[j] * r.mean_se[j]).sqrt();
            eprintln!(
                "{}: mean {:.4} vs {:.4} (tol {mean_tol:.4}); sd {:.4} vs {:.4}",
                p.name, p.mean, r.mean[j], p.sd, r.sd[j]
            );
            assert!((p.mean - r.mean[j]).abs() <= mean_tol, "{}", p.name);
            let sd_mc = (p.sd * p.sd / (2.0 * p.ess_bulk) + r.sd_se[j] * r.sd_se[j]).sqrt();
            let sd_tol = 4.0 * sd_mc + bias * r.sd[j];
            assert!((p.sd - r.sd[j]).abs() <= sd_tol, "{}: sd", p.name);
        }
    }

    /// The library call writes what the command writes.
    #[test]
    fn the_outputs_are_the_commands() {
        let dir = tempfile::tempdir().unwrap();
        let model = data(300);
        let outcome = sample(&model, dir.path().to_path_buf()).unwrap();
        for f in ["draws.csv", "summary.json", "chain_1.csv", "chain_4.npy"] {
            assert!(outcome.files.contains(&dir.path().join(f)), "{f}");
            assert!(dir.path().join(f).exists(), "{f}");
        }
        let draws = std::fs::read_to_string(dir.path().join("draws.csv")).unwrap();
        assert!(draws.starts_with("chain,step,step_size,beta[x1],"));
        // A name per parameter, or an error that says so.
        let precision = |t: &[f32]| vec![0.1; t.len()];
        let target = Target::new(&model, "x", vec!["a".into()]).with_prior("g", &precision);
        let err = target.sample(&SampleOptions::new(dir.path().join("b")));
        let Err(Error::Target(err)) = err else {
            panic!("a target error");
        };
        assert!(err.contains("1 parameter names for a model of 6"), "{err}");
    }
}
