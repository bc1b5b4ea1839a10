//! Posteriors written as users write them, handed to `sample_model` with the defaults:
//! where the estimator is the whole data set the run is Metropolis-adjusted (exact), so
//! every mean must sit within its Monte Carlo error of the truth with no allowance for
//! a step's bias, and every sd within the Monte Carlo error of an sd.
//!
//! The truths: closed forms where there are (a Poisson rate with few counts, whose log
//! is skewed; a regression with condition number above 10⁴), and otherwise a long
//! random-walk Metropolis run written here, independent of the library's samplers (the
//! non-centred eight schools; a latent Gaussian process with Poisson counts, fewer rows
//! than parameters), whose own Monte Carlo error (batch means) enters the tolerance.
//!
//! Tolerance: `Z·√(sd²/ESS + mcse_ref²)` for a mean, `Z·√(1/(2·ESS))` relative (plus the
//! reference's) for an sd, `Z = 4.5`.

use std::path::Path;

use sgld::models::Model;
use sgld::noise::{default_rng, fill_normal};
use sgld_harness::sample::{ModelKind, Outcome, SampleConfig, Target, sample_model};

const Z: f64 = 4.5;

/// Samples `model` with the defaults of `sgld sample`.
fn sample<M: Model + Sync>(model: &M, names: &[&str], out: &Path) -> Outcome {
    let names = names.iter().map(|s| s.to_string()).collect();
    let target = Target::new(model, "user", names);
    let cfg = SampleConfig::new(ModelKind::Linreg, "unused".into(), out.to_path_buf());
    sample_model(&target, &cfg).unwrap()
}

/// Checks every parameter against `(mean, sd, mcse of the mean)` and the run's record:
/// exact (MALA), no warning, acceptance reported.
fn check(o: &Outcome, truth: &[(f64, f64, f64)]) {
    check_sampler(o, truth, "mala");
}

/// [`check`] for a run of `sampler`.
fn check_sampler(o: &Outcome, truth: &[(f64, f64, f64)], sampler: &str) {
    let s = &o.summary;
    eprintln!(
        "{:?}, acceptance {:?}, steps {}",
        s.warmup, s.acceptance, s.steps
    );
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.sampler, sampler);
    assert!(s.warmup.full_batch && s.warmup.converged);
    let acc = s.acceptance.expect("acceptance");
    assert!((0.3..0.95).contains(&acc), "acceptance {acc}");
    assert!(s.divergent.is_some());
    for (p, &(m, sd, mcse)) in s.params.iter().zip(truth) {
        eprintln!(
            "{}: mean off by {:+.3} sd, sd ratio {:.3}, ess {:.0}",
            p.name,
            (p.mean - m) / sd,
            p.sd / sd,
            p.ess_bulk
        );
        let ess = p.ess_bulk.min(p.ess_tail);
        assert!(ess >= 400.0 && p.rhat <= 1.01, "{p:?}");
        let tol = Z * (sd * sd / p.ess_bulk + mcse * mcse).sqrt();
        assert!(
            (p.mean - m).abs() <= tol,
            "{}: mean {} vs {m} (tolerance {tol}, sd {sd})",
            p.name,
            p.mean
        );
        let rel = Z * (1.0 / (2.0 * ess)).sqrt() + Z * mcse / sd;
        assert!(
            (p.sd / sd - 1.0).abs() <= rel,
            "{}: sd {} vs {sd} (relative tolerance {rel})",
            p.name,
            p.sd
        );
    }
}

/// A random-walk Metropolis reference: `steps` steps from `start` with proposal sds
/// `scale`, after `steps/10` discarded; each coordinate's mean, sd and the mean's
/// Monte Carlo error by batch means (100 batches).
fn reference(
    log_post: impl Fn(&[f64]) -> f64,
    start: &[f64],
    scale: &[f64],
    steps: usize,
    seed: u64,
) -> Vec<(f64, f64, f64)> {
    let d = start.len();
    let mut rng = default_rng(seed);
    let mut x = start.to_vec();
    let mut lp = log_post(&x);
    let burn = steps / 10;
    let batches = 100;
    let per = steps / batches;
    let mut batch_means = vec![vec![0.0f64; d]; batches];
    let (mut s1, mut s2) = (vec![0.0f64; d], vec![0.0f64; d]);
    let mut z = vec![0.0f32; d + 1];
    let mut u = [0.0f32; 2];
    for t in 0..burn + per * batches {
        fill_normal(&mut rng, &mut z);
        let prop: Vec<f64> = (0..d).map(|j| x[j] + scale[j] * z[j] as f64).collect();
        let lq = log_post(&prop);
        fill_normal(&mut rng, &mut u);
        // A uniform from a normal's CDF would need erf; a normal pair's angle is uniform.
        let unif = (u[1] as f64).atan2(u[0] as f64) / std::f64::consts::TAU + 0.5;
        if lq.is_finite() && unif.ln() < lq - lp {
            x = prop;
            lp = lq;
        }
        if t >= burn {
            let b = (t - burn) / per;
            for j in 0..d {
                s1[j] += x[j];
                s2[j] += x[j] * x[j];
                batch_means[b][j] += x[j] / per as f64;
            }
        }
    }
    let n = (per * batches) as f64;
    (0..d)
        .map(|j| {
            let mean = s1[j] / n;
            let sd = (s2[j] / n - mean * mean).max(0.0).sqrt();
            let bm: Vec<f64> = batch_means.iter().map(|b| b[j]).collect();
            let var_b = bm.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (batches - 1) as f64;
            (mean, sd, (var_b / batches as f64).sqrt())
        })
        .collect()
}

/// The non-centred eight schools: θ = (μ, log τ, θ̃₁…θ̃₈), μ ~ N(0, 5²), τ ~ half-Cauchy(0,
/// 5), θ̃ⱼ ~ N(0, 1), yⱼ ~ N(μ + τθ̃ⱼ, σⱼ²); one row a school.
struct EightSchools;

const Y: [f64; 8] = [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0];
const SIGMA: [f64; 8] = [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0];

impl EightSchools {
    fn log_post(theta: &[f64]) -> f64 {
        let (mu, lt) = (theta[0], theta[1]);
        let tau = lt.exp();
        let mut lp = -mu * mu / 50.0 - (1.0 + tau * tau / 25.0).ln() + lt;
        for j in 0..8 {
            let t = theta[2 + j];
            let r = Y[j] - mu - tau * t;
            lp += -t * t / 2.0 - r * r / (2.0 * SIGMA[j] * SIGMA[j]);
        }
        lp
    }
}

impl Model for EightSchools {
    fn dim(&self) -> usize {
        10
    }
    fn len(&self) -> usize {
        8
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        let tau2 = (2.0 * theta[1]).exp();
        grad[0] -= theta[0] / 25.0;
        grad[1] += 1.0 - 2.0 * tau2 / 25.0 / (1.0 + tau2 / 25.0);
        for j in 0..8 {
            grad[2 + j] -= theta[2 + j];
        }
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        let tau = theta[1].exp();
        for &j in batch.iter().filter(|&&j| j < 8) {
            let r = (Y[j] as f32 - theta[0] - tau * theta[2 + j]) / (SIGMA[j] * SIGMA[j]) as f32;
            grad[0] += r;
            grad[1] += r * tau * theta[2 + j];
            grad[2 + j] += r * tau;
        }
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        let (mu, lt) = (theta[0] as f64, theta[1] as f64);
        let tau = lt.exp();
        -mu * mu / 50.0 - (1.0 + tau * tau / 25.0).ln() + lt
            - theta[2..].iter().map(|&t| (t as f64).powi(2)).sum::<f64>() / 2.0
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        let tau = (theta[1] as f64).exp();
        batch
            .iter()
            .filter(|&&j| j < 8)
            .map(|&j| {
                let r = Y[j] - theta[0] as f64 - tau * theta[2 + j] as f64;
                -r * r / (2.0 * SIGMA[j] * SIGMA[j])
            })
            .sum()
    }
}

#[test]
fn the_non_centred_eight_schools_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let o = sample(
        &EightSchools,
        &[
            "mu", "log_tau", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8",
        ],
        dir.path(),
    );
    let mut start = vec![0.0; 10];
    start[1] = 1.0;
    let mut scale = vec![0.45; 10];
    scale[0] = 1.6;
    let truth = reference(EightSchools::log_post, &start, &scale, 8_000_000, 7);
    eprintln!("eight schools reference: {truth:?}");
    // The funnel's scale: the posterior mean of log τ is near 0.8, the mode far above.
    assert!((0.5..1.2).contains(&truth[1].0), "{:?}", truth[1]);
    check(&o, &truth);
}

/// A latent Gaussian process with Poisson counts at 11 points: θ = (b, log α, f̃₁…f̃₁₁),
/// `f = b + chol(α²K + 10⁻¹⁰I)·f̃` (K squared-exponential, length scale 0.3, on
/// 0, 0.1, …, 1), yᵢ ~ Poisson(exp fᵢ), b ~ N(0, 2²), log α ~ N(0, 1), f̃ ~ N(0, I):
/// 13 parameters and 11 rows.
struct LatentGp {
    /// chol(K + 10⁻¹⁰I), row-major 11 × 11.
    l: Vec<f64>,
}

const COUNTS: [f64; 11] = [0.0, 1.0, 3.0, 2.0, 5.0, 8.0, 6.0, 4.0, 2.0, 1.0, 0.0];

impl LatentGp {
    fn new() -> Self {
        let n = 11;
        let mut k = vec![0.0f64; n * n];
        for i in 0..n {
            for j in 0..n {
                let dx = (i as f64 - j as f64) * 0.1;
                k[i * n + j] = (-dx * dx / (2.0 * 0.09)).exp() + if i == j { 1e-10 } else { 0.0 };
            }
        }
        sgld::linalg::cholesky(&mut k, n).unwrap();
        Self { l: k }
    }
    /// f (as f64) at θ.
    fn f(&self, theta: &[f64]) -> Vec<f64> {
        let alpha = theta[1].exp();
        (0..11)
            .map(|i| {
                theta[0]
                    + alpha
                        * (0..=i)
                            .map(|k| self.l[i * 11 + k] * theta[2 + k])
                            .sum::<f64>()
            })
            .collect()
    }
    fn log_post(&self, theta: &[f64]) -> f64 {
        let f = self.f(theta);
        let mut lp = -theta[0] * theta[0] / 8.0 - theta[1] * theta[1] / 2.0;
        lp -= theta[2..].iter().map(|t| t * t).sum::<f64>() / 2.0;
        lp + (0..11).map(|i| COUNTS[i] * f[i] - f[i].exp()).sum::<f64>()
    }
}

fn wide(theta: &[f32]) -> Vec<f64> {
    theta.iter().map(|&v| v as f64).collect()
}

impl Model for LatentGp {
    fn dim(&self) -> usize {
        13
    }
    fn len(&self) -> usize {
        11
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        grad[0] -= theta[0] / 4.0;
        grad[1] -= theta[1];
        for k in 2..13 {
            grad[k] -= theta[k];
        }
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        let t = wide(theta);
        let f = self.f(&t);
        let alpha = t[1].exp();
        for &i in batch.iter().filter(|&&i| i < 11) {
            let c = COUNTS[i] - f[i].exp();
            grad[0] += c as f32;
            grad[1] += (c * (f[i] - t[0])) as f32;
            for k in 0..=i {
                grad[2 + k] += (c * alpha * self.l[i * 11 + k]) as f32;
            }
        }
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        let t = wide(theta);
        -t[0] * t[0] / 8.0 - t[1] * t[1] / 2.0 - t[2..].iter().map(|v| v * v).sum::<f64>() / 2.0
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        let f = self.f(&wide(theta));
        batch
            .iter()
            .filter(|&&i| i < 11)
            .map(|&i| COUNTS[i] * f[i] - f[i].exp())
            .sum()
    }
}

#[test]
fn a_latent_gp_with_fewer_rows_than_parameters_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let gp = LatentGp::new();
    let names: Vec<String> = ["b", "log_alpha"]
        .into_iter()
        .map(String::from)
        .chain((1..=11).map(|k| format!("z{k}")))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let o = sample(&gp, &names, dir.path());
    let mut scale = vec![0.3; 13];
    scale[0] = 0.25;
    let truth = reference(|t| gp.log_post(t), &[0.0; 13], &scale, 12_000_000, 11);
    eprintln!("latent GP reference: {truth:?}");
    check(&o, &truth);
}

/// `y = Xβ + e`, e ~ N(0, 0.5²) known, β ~ N(0, 10² I), with two nearly collinear
/// columns (XᵀX has condition number above 10⁴): a Gaussian posterior in closed form.
struct Collinear {
    x: Vec<f64>,
    y: Vec<f64>,
}

const NOISE_VAR: f64 = 0.25;
const PRIOR_VAR: f64 = 100.0;

impl Collinear {
    fn new(n: usize) -> Self {
        let mut z = vec![0.0f32; 3 * n];
        fill_normal(&mut default_rng(5), &mut z);
        let mut x = Vec::with_capacity(3 * n);
        let mut y = Vec::with_capacity(n);
        for i in 0..n {
            let a = z[3 * i] as f64;
            let b = a + 0.01 * z[3 * i + 1] as f64;
            x.extend([1.0, a, b]);
            y.push(0.5 + a + b + 0.5 * z[3 * i + 2] as f64);
        }
        Self { x, y }
    }
    fn row(&self, i: usize) -> &[f64] {
        &self.x[3 * i..3 * i + 3]
    }
    /// The posterior's mean and covariance.
    fn exact(&self) -> (nalgebra::Vector3<f64>, nalgebra::Matrix3<f64>) {
        let mut p = nalgebra::Matrix3::<f64>::identity() / PRIOR_VAR;
        let mut b = nalgebra::Vector3::<f64>::zeros();
        for (i, &yi) in self.y.iter().enumerate() {
            let r = nalgebra::Vector3::from_row_slice(self.row(i));
            p += r * r.transpose() / NOISE_VAR;
            b += r * yi / NOISE_VAR;
        }
        let cov = p.try_inverse().unwrap();
        (cov * b, cov)
    }
}

impl Model for Collinear {
    fn dim(&self) -> usize {
        3
    }
    fn len(&self) -> usize {
        self.y.len()
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        for (g, t) in grad.iter_mut().zip(theta) {
            *g -= t / PRIOR_VAR as f32;
        }
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        let t = wide(theta);
        for &i in batch.iter().filter(|&&i| i < self.y.len()) {
            let row = self.row(i);
            let r = (self.y[i] - row.iter().zip(&t).map(|(a, b)| a * b).sum::<f64>()) / NOISE_VAR;
            for (g, a) in grad.iter_mut().zip(row) {
                *g += (r * a) as f32;
            }
        }
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        -wide(theta).iter().map(|t| t * t).sum::<f64>() / (2.0 * PRIOR_VAR)
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        let t = wide(theta);
        batch
            .iter()
            .filter(|&&i| i < self.y.len())
            .map(|&i| {
                let r = self.y[i] - self.row(i).iter().zip(&t).map(|(a, b)| a * b).sum::<f64>();
                -r * r / (2.0 * NOISE_VAR)
            })
            .sum()
    }
}

#[test]
fn a_regression_with_condition_number_above_1e4_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let model = Collinear::new(300);
    let (mean, cov) = model.exact();
    let eig = cov.symmetric_eigenvalues();
    let cond = eig.max() / eig.min();
    assert!(cond > 1e4, "condition number {cond}");
    let o = sample(&model, &["bias", "a", "b"], dir.path());
    let truth: Vec<(f64, f64, f64)> = (0..3).map(|j| (mean[j], cov[(j, j)].sqrt(), 0.0)).collect();
    check(&o, &truth);
}

/// A Poisson rate with five small counts, λ ~ Gamma(1, 1), sampled as log λ: the
/// posterior of λ is Gamma(1 + Σy, 1 + n), so log λ has mean ψ(a) − ln b and variance
/// ψ′(a) (a skewed, log-gamma posterior).
struct FewCounts;

const FEW: [f64; 5] = [0.0, 1.0, 0.0, 2.0, 0.0];

impl Model for FewCounts {
    fn dim(&self) -> usize {
        1
    }
    fn len(&self) -> usize {
        5
    }
    /// Gamma(1, 1) on λ with the Jacobian of log λ: `log p = log λ − λ`.
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        grad[0] += 1.0 - theta[0].exp();
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        for &i in batch.iter().filter(|&&i| i < 5) {
            grad[0] += FEW[i] as f32 - theta[0].exp();
        }
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        theta[0] as f64 - (theta[0] as f64).exp()
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        let l = theta[0] as f64;
        batch
            .iter()
            .filter(|&&i| i < 5)
            .map(|&i| FEW[i] * l - l.exp())
            .sum()
    }
}

#[test]
fn a_skewed_poisson_rate_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let o = sample(&FewCounts, &["log_rate"], dir.path());
    // a = 4, b = 6: ψ(4) = 1 + 1/2 + 1/3 − γ, ψ′(4) = π²/6 − 1 − 1/4 − 1/9.
    let psi = 1.0 + 0.5 + 1.0 / 3.0 - 0.577_215_664_901_532_9;
    let trigamma = std::f64::consts::PI.powi(2) / 6.0 - 1.0 - 0.25 - 1.0 / 9.0;
    check(&o, &[(psi - 6f64.ln(), trigamma.sqrt(), 0.0)]);
}

/// Neal's funnel, `v ~ N(0, 3²)`, `xₖ ~ N(0, eᵛ)` (k = 1…9), written with one row whose
/// likelihood is flat: its mode (v = −40.5, x = 0) is nowhere near its mass, and its
/// neck is narrower than any one step. The run must not pass silently: it is either
/// right (v's mean 0 and sd 3 within its Monte Carlo error) or warns.
struct Funnel;

impl Model for Funnel {
    fn dim(&self) -> usize {
        10
    }
    fn len(&self) -> usize {
        1
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        let v = theta[0];
        let s: f32 = theta[1..].iter().map(|x| x * x).sum();
        grad[0] += -v / 9.0 + 0.5 * s * (-v).exp() - 4.5;
        for k in 1..10 {
            grad[k] -= theta[k] * (-v).exp();
        }
    }
    fn add_log_lik_grad(&self, _: &[f32], _: &[usize], _: &mut [f32]) {}
    fn log_prior(&self, theta: &[f32]) -> f64 {
        let v = theta[0] as f64;
        let s: f64 = theta[1..].iter().map(|&x| (x as f64).powi(2)).sum();
        -v * v / 18.0 - 0.5 * s * (-v).exp() - 4.5 * v
    }
    fn log_lik(&self, _: &[f32], _: &[usize]) -> f64 {
        0.0
    }
}

#[test]
fn a_funnel_is_right_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["v", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9"];
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let target = Target::new(&Funnel, "funnel", names);
    let cfg = SampleConfig::new(ModelKind::Linreg, "unused".into(), dir.path().to_path_buf());
    let s = match sample_model(&target, &cfg) {
        Ok(o) => o.summary,
        // An error that names the cause is an answer too.
        Err(e) => {
            eprintln!("funnel: {e}");
            assert!(!e.is_empty());
            return;
        }
    };
    let v = &s.params[0];
    let right = (v.mean - 0.0).abs() <= Z * 3.0 / v.ess_bulk.sqrt()
        && (v.sd / 3.0 - 1.0).abs() <= Z / (2.0 * v.ess_bulk).sqrt();
    eprintln!(
        "funnel: v mean {} sd {} ess {}; warnings {:?}",
        v.mean, v.sd, v.ess_bulk, s.warnings
    );
    assert!(right || !s.warnings.is_empty(), "v: {v:?}");
}

/// A model from its log prior and one row's log likelihood, in f64, with gradients by
/// central differences: the quickest way to write a posterior down (the sampler only
/// needs a gradient that matches the density it is given).
struct Numeric<P, L> {
    d: usize,
    n: usize,
    prior: P,
    row: L,
}

impl<P: Fn(&[f64]) -> f64, L: Fn(&[f64], usize) -> f64> Numeric<P, L> {
    fn log_post(&self, t: &[f64]) -> f64 {
        (self.prior)(t) + (0..self.n).map(|i| (self.row)(t, i)).sum::<f64>()
    }
    fn grad(&self, theta: &[f32], f: impl Fn(&[f64]) -> f64, grad: &mut [f32]) {
        let mut t = wide(theta);
        for k in 0..self.d {
            let h = 1e-5 * t[k].abs().max(1.0);
            let x = t[k];
            t[k] = x + h;
            let up = f(&t);
            t[k] = x - h;
            let down = f(&t);
            t[k] = x;
            grad[k] += ((up - down) / (2.0 * h)) as f32;
        }
    }
}

impl<P, L> Model for Numeric<P, L>
where
    P: Fn(&[f64]) -> f64,
    L: Fn(&[f64], usize) -> f64,
{
    fn dim(&self) -> usize {
        self.d
    }
    fn len(&self) -> usize {
        self.n
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        self.grad(theta, |t| (self.prior)(t), grad);
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        let rows: Vec<usize> = batch.iter().copied().filter(|&i| i < self.n).collect();
        self.grad(
            theta,
            |t| rows.iter().map(|&i| (self.row)(t, i)).sum(),
            grad,
        );
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        (self.prior)(&wide(theta))
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        let t = wide(theta);
        batch
            .iter()
            .filter(|&&i| i < self.n)
            .map(|&i| (self.row)(&t, i))
            .sum()
    }
}

/// `n` standard normals from `seed`, as f64.
fn normals(n: usize, seed: u64) -> Vec<f64> {
    let mut z = vec![0.0f32; n];
    fill_normal(&mut default_rng(seed), &mut z);
    z.into_iter().map(f64::from).collect()
}

/// Half-Cauchy(0, s) on σ, sampled as log σ (the Jacobian included).
fn half_cauchy_log(log_sigma: f64, s: f64) -> f64 {
    let sigma = log_sigma.exp();
    -(1.0 + (sigma / s).powi(2)).ln() + log_sigma
}

#[test]
fn an_autoregression_with_a_flat_prior_is_exact() {
    // y_t = 0.7 y_{t−1} + 0.5 e_t, 120 steps; φ flat, σ ~ half-Cauchy(0, 2); row t ≥ 1.
    let e = normals(121, 31);
    let mut y = vec![0.0f64; 121];
    for t in 1..121 {
        y[t] = 0.7 * y[t - 1] + 0.5 * e[t];
    }
    let m = Numeric {
        d: 2,
        n: 120,
        prior: |t: &[f64]| half_cauchy_log(t[1], 2.0),
        row: |t: &[f64], i: usize| {
            let r = y[i + 1] - t[0] * y[i];
            -t[1] - r * r / (2.0 * (2.0 * t[1]).exp())
        },
    };
    let dir = tempfile::tempdir().unwrap();
    let o = sample(&m, &["phi", "log_sigma"], dir.path());
    let truth = reference(|t| m.log_post(t), &[0.5, -0.5], &[0.08, 0.08], 4_000_000, 3);
    check(&o, &truth);
}

#[test]
fn a_regression_with_student_t_and_half_cauchy_priors_is_exact() {
    // 40 rows, y = 1 + 2a − b + 0.8e; β ~ Student-t(3, 0, 2.5), σ ~ half-Cauchy(0, 1).
    let z = normals(120, 41);
    let rows: Vec<[f64; 3]> = (0..40)
        .map(|i| {
            let (a, b) = (z[3 * i], z[3 * i + 1]);
            [a, b, 1.0 + 2.0 * a - b + 0.8 * z[3 * i + 2]]
        })
        .collect();
    let t3 = |b: f64| -2.0 * (1.0 + (b / 2.5).powi(2) / 3.0).ln();
    let m = Numeric {
        d: 4,
        n: 40,
        prior: |t: &[f64]| t3(t[0]) + t3(t[1]) + t3(t[2]) + half_cauchy_log(t[3], 1.0),
        row: |t: &[f64], i: usize| {
            let r = rows[i][2] - t[0] - t[1] * rows[i][0] - t[2] * rows[i][1];
            -t[3] - r * r / (2.0 * (2.0 * t[3]).exp())
        },
    };
    let dir = tempfile::tempdir().unwrap();
    let o = sample(&m, &["bias", "a", "b", "log_sigma"], dir.path());
    let truth = reference(
        |t| m.log_post(t),
        &[1.0, 2.0, -1.0, -0.2],
        &[0.12, 0.12, 0.12, 0.1],
        4_000_000,
        5,
    );
    check(&o, &truth);
}

#[test]
fn a_logistic_regression_with_a_laplace_prior_is_exact() {
    // 80 rows, P(y = 1) = σ(0.5 + 1.5a), two features (b, c) that do not matter, so
    // their posteriors sit on the prior's kink at 0; β ~ Laplace(1) on all four. The
    // gradient by central differences, the Hessian at the mode too (across the kinks
    // of the coefficients the L1 mode puts at 0): a poor metric the warm-up must mend.
    let z = normals(320, 61);
    let rows: Vec<[f64; 4]> = (0..80)
        .map(|i| {
            let (a, b, c) = (z[4 * i], z[4 * i + 1], z[4 * i + 2]);
            let p = 1.0 / (1.0 + (-(0.5 + 1.5 * a)).exp());
            let u = 0.5 + z[4 * i + 3].atan() / std::f64::consts::PI;
            [a, b, c, if u < p { 1.0 } else { -1.0 }]
        })
        .collect();
    let m = Numeric {
        d: 4,
        n: 80,
        prior: |t: &[f64]| -t.iter().map(|x| x.abs()).sum::<f64>(),
        row: |t: &[f64], i: usize| {
            let [a, b, c, y] = rows[i];
            let margin = y * (t[0] + t[1] * a + t[2] * b + t[3] * c);
            -(1.0 + (-margin).exp()).ln()
        },
    };
    let dir = tempfile::tempdir().unwrap();
    let names = ["bias", "a", "b", "c"].map(String::from).to_vec();
    let target = Target::new(&m, "user", names).with_laplace_prior(1.0);
    let cfg = SampleConfig::new(
        ModelKind::Logistic,
        "unused".into(),
        dir.path().to_path_buf(),
    );
    let o = sample_model(&target, &cfg).unwrap();
    let truth = reference(
        |t| m.log_post(t),
        &[0.5, 1.5, 0.0, 0.0],
        &[0.25, 0.3, 0.25, 0.25],
        4_000_000,
        7,
    );
    check_sampler(&o, &truth, "hmc");
}

/// The mean of 50 observations with unit noise, whose spread is in fact 500 times
/// smaller: the empirical Fisher information (the squared scores) is then 500 times
/// below the curvature, and a step sized by it overflows. Marked kinked, the run takes
/// the unadjusted path, whose warm-up must restart at smaller steps rather than end in
/// a table of NaN, and then take its metric from the draws: the answer is right.
struct Misspecified {
    y: Vec<f32>,
}

impl Model for Misspecified {
    fn dim(&self) -> usize {
        2
    }
    fn len(&self) -> usize {
        self.y.len()
    }
    fn add_log_prior_grad(&self, _: &[f32], _: &mut [f32]) {}
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        for &i in batch.iter().filter(|&&i| i < self.y.len()) {
            grad[0] += self.y[i] - theta[0];
            grad[1] += 2.0 * self.y[i] - theta[1];
        }
    }
    fn log_prior(&self, _: &[f32]) -> f64 {
        0.0
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        batch
            .iter()
            .filter(|&&i| i < self.y.len())
            .map(|&i| {
                let (a, b) = (self.y[i] - theta[0], 2.0 * self.y[i] - theta[1]);
                -0.5 * (a * a + b * b) as f64
            })
            .sum()
    }
}

#[test]
fn a_warm_up_that_overflows_restarts_at_a_smaller_step() {
    let y: Vec<f32> = normals(50, 9)
        .iter()
        .map(|z| (1.0 + z * 0.045) as f32)
        .collect();
    let model = Misspecified { y };
    let flat = |t: &[f32]| vec![0.0; t.len()];
    let names = vec!["a".to_string(), "b".to_string()];
    let target = Target::new(&model, "user", names)
        .with_prior("flat", &flat)
        .with_kinked_prior();
    let dir = tempfile::tempdir().unwrap();
    let cfg = SampleConfig::new(ModelKind::Linreg, "unused".into(), dir.path().to_path_buf());
    let o = sample_model(&target, &cfg).unwrap();
    let s = &o.summary;
    eprintln!("{:?}\n{:?}\n{:?}", s.warmup, o.notes, s.warnings);
    for p in &s.params {
        eprintln!("{}: {} {}", p.name, p.mean, p.sd);
    }
    assert!(s.warmup.restarts >= 1, "{:?}", s.warmup);
    assert!(o.failure.is_none());
    assert!(
        o.notes.iter().any(|n| n.contains("restarted")),
        "{:?}",
        o.notes
    );
    assert_eq!(s.warmup.metric, "draws");
    // The posterior: a ~ N(ȳ, 1/50), b ~ N(2ȳ, 1/50).
    let ybar = model.y.iter().map(|&v| v as f64).sum::<f64>() / 50.0;
    let sd = (1.0f64 / 50.0).sqrt();
    for (p, m) in s.params.iter().zip([ybar, 2.0 * ybar]) {
        assert!(
            (p.mean - m).abs() <= (Z / p.ess_bulk.sqrt() + 0.05) * sd,
            "{p:?}"
        );
        assert!(
            (p.sd / sd - 1.0).abs() <= Z / (2.0 * p.ess_bulk).sqrt() + 0.05,
            "{p:?}"
        );
    }
}

/// The latent GP with other seeds: a dispersed start in the far tail of log α, where the
/// f̃ are pinned down, must not leave a chain stuck there.
#[test]
fn the_latent_gp_passes_with_other_seeds() {
    let gp = LatentGp::new();
    let names: Vec<String> = (0..13).map(|k| format!("p{k}")).collect();
    for seed in [3, 7] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg =
            SampleConfig::new(ModelKind::Linreg, "unused".into(), dir.path().to_path_buf());
        cfg.seed = seed;
        let o = sample_model(&Target::new(&gp, "u", names.clone()), &cfg).unwrap();
        let s = &o.summary;
        assert!(
            s.warnings.is_empty(),
            "seed {seed}: {:?} {:?}",
            s.warnings,
            o.notes
        );
        // log α: mean 0.347, sd 0.448 (the reference run of the test above).
        let p = &s.params[1];
        assert!(
            (p.mean - 0.347).abs() <= Z * 0.448 / p.ess_bulk.sqrt() + 0.01,
            "{p:?}"
        );
    }
}
