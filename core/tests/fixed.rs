//! The fixed-point learner (`online::FixedSgld`) against posteriors known exactly and
//! against the f32 learner it stands in for (release mode).
//!
//! Tolerances: Monte Carlo standard errors from 50 batch means of one long chain (each
//! batch spans hundreds of autocorrelation times), `z = 4.5` a check. Where both
//! learners run, the check is on their difference, with the two errors combined.
//!
//! - **Gaussian prior alone** (examples with no active feature, so the likelihood
//!   carries no information): the chain is linear, `θ' = (1 − h/σ²)θ + √ε·η`, and its
//!   stationary variance `ε / (1 − (1 − h/σ²)²)` is exact for the discrete chain. What
//!   fixed point adds is rounding at 2⁻²⁴, far below the Monte Carlo error.
//! - **Laplace prior alone**: the same chain on `|θ|/b`, against the f32 learner on the
//!   same prior and step (both carry the same O(ε) discretisation bias), and `E|θ|` near
//!   `b`.
//! - **Logistic regression** on a sparse binary stream: the posterior means of the two
//!   learners over eight seeds each agree within the seed-to-seed error.

use sgld::estimate::WeightedMomentsF32;
use sgld::models::Laplace;
use sgld::noise::default_rng;
use sgld::online::fixed::{FixedPrior, FixedSgld, from_fixed};
use sgld::online::{Examples, OnlineSgld, SparseBinaryExample};
use sgld::schedule::{Constant, PolynomialF32};
use sgld::{Sgld, StepInfo};

const Z: f64 = 4.5;

/// A moment's name and its function of θ.
type Moment = (&'static str, fn(f64) -> f64);
const D: usize = 64;
type Ex = SparseBinaryExample<8, u8>;

/// The mean of `x` and its Monte Carlo standard error from 50 batch means.
fn mean_and_mcse(x: &[f64]) -> (f64, f64) {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n as f64;
    let b = n / 50;
    let batch: Vec<f64> = x
        .chunks_exact(b)
        .map(|c| c.iter().sum::<f64>() / b as f64)
        .collect();
    let var = batch.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (batch.len() - 1) as f64;
    (mean, (var / batch.len() as f64).sqrt())
}

/// Per step, the average over the D coordinates of `f(θⱼ)`, after `burn` steps, from the
/// fixed-point learner on examples without features.
fn fixed_chain(
    prior: FixedPrior,
    eps: f32,
    steps: usize,
    burn: usize,
    f: fn(f64) -> f64,
) -> Vec<f64> {
    let mut window = Examples::<Ex, 16>::new();
    let (mut theta, mut mean) = ([0i32; D], [0i32; D]);
    let mut learner = FixedSgld::<8, u8, _, 16, 4>::new(
        &mut window,
        &mut theta,
        &mut mean,
        prior,
        Constant::new(eps).unwrap(),
        0,
    )
    .unwrap();
    let mut rng = default_rng(2011);
    let mut out = Vec::with_capacity(steps - burn);
    for t in 0..steps {
        let info: StepInfo = learner
            .push(Ex::narrow(&[], 1.0).unwrap(), &mut rng)
            .unwrap();
        assert!(!info.clipped);
        if t >= burn {
            let s: f64 = learner
                .theta()
                .iter()
                .map(|&q| f(from_fixed(q) as f64))
                .sum();
            out.push(s / D as f64);
        }
    }
    out
}

/// The same from the f32 learner with a Laplace prior of scale `b`.
fn float_laplace_chain(b: f32, eps: f32, steps: usize, burn: usize, f: fn(f64) -> f64) -> Vec<f64> {
    let mut window = Examples::<Ex, 16>::new();
    let (mut theta, mut scratch) = ([0.0f32; D], [0.0f32; Sgld::scratch_len(D)]);
    let mut store = [0.0f32; WeightedMomentsF32::storage_len(D)];
    let mut batch = [0usize; 4];
    let mut learner = OnlineSgld::new(
        &mut window,
        &mut theta,
        &mut scratch,
        WeightedMomentsF32::new(&mut store, D).unwrap(),
        &mut batch,
        Laplace::new(b).unwrap(),
        Constant::new(eps).unwrap(),
        Sgld::new(),
        0,
    )
    .unwrap();
    let mut rng = default_rng(99);
    let mut out = Vec::with_capacity(steps - burn);
    for t in 0..steps {
        learner
            .push(Ex::narrow(&[], 1.0).unwrap(), &mut rng)
            .unwrap();
        if t >= burn {
            let s: f64 = learner.theta().iter().map(|&x| f(x as f64)).sum();
            out.push(s / D as f64);
        }
    }
    out
}

#[test]
fn a_gaussian_prior_alone_has_the_discrete_chains_exact_variance() {
    let (sd, eps) = (1.0f32, 0.4f32);
    let h = 0.5 * eps as f64 / (sd as f64 * sd as f64);
    let exact = eps as f64 / (1.0 - (1.0 - h) * (1.0 - h));
    let prior = FixedPrior::gaussian(sd).unwrap();
    let (m, se_m) = mean_and_mcse(&fixed_chain(prior, eps, 200_000, 2_000, |x| x));
    let (v, se_v) = mean_and_mcse(&fixed_chain(prior, eps, 200_000, 2_000, |x| x * x));
    assert!(m.abs() <= Z * se_m, "mean {m} ± {se_m}");
    assert!(
        (v - exact).abs() <= Z * se_v,
        "E θ² {v} ± {se_v}, exact {exact}"
    );
    // The check can tell the discrete chain from the posterior it approximates.
    assert!((exact - (sd * sd) as f64).abs() > 3.0 * Z * se_v);
}

#[test]
fn a_laplace_prior_alone_is_sampled_as_the_f32_learner_samples_it() {
    let (b, eps) = (1.0f32, 0.02f32);
    let prior = FixedPrior::laplace(b).unwrap();
    let moments: [Moment; 3] = [("E θ", |x| x), ("E|θ|", f64::abs), ("E θ²", |x| x * x)];
    for (name, f) in moments {
        let (fx, se_fx) = mean_and_mcse(&fixed_chain(prior, eps, 400_000, 4_000, f));
        let (fl, se_fl) = mean_and_mcse(&float_laplace_chain(b, eps, 400_000, 4_000, f));
        let se = (se_fx * se_fx + se_fl * se_fl).sqrt();
        assert!(
            (fx - fl).abs() <= Z * se,
            "{name}: fixed {fx}, f32 {fl} ± {se}"
        );
    }
    // And both near the posterior's E|θ| = b (within the O(ε) bias and the error).
    let (fx, se) = mean_and_mcse(&fixed_chain(prior, eps, 400_000, 4_000, f64::abs));
    assert!((fx - b as f64).abs() <= Z * se + 0.05, "E|θ| {fx}");
}

/// A sparse binary stream: 3 of 20 features active plus the bias (index 20), labels
/// from a fixed coefficient vector.
fn stream(seed: u64, n: usize) -> Vec<Ex> {
    let beta = |j: u8| [1.2f32, -0.8, 0.0, 0.5, -1.5][j as usize % 5];
    let mut s = seed;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) as u32
    };
    (0..n)
        .map(|_| {
            let mut idx = [0u8; 4];
            let mut k = 0;
            while k < 3 {
                let j = (next() % 20) as u8;
                if !idx[..k].contains(&j) {
                    idx[k] = j;
                    k += 1;
                }
            }
            idx[3] = 20;
            let z: f32 = idx[..3].iter().map(|&j| beta(j)).sum::<f32>() + 0.3;
            let p = 1.0 / (1.0 + (-z).exp());
            let y = if (next() as f32 / 4294967296.0) < p {
                1.0
            } else {
                -1.0
            };
            Ex::narrow(&idx, y).unwrap()
        })
        .collect()
}

#[test]
fn logistic_posterior_means_agree_with_the_f32_learner() {
    const P: usize = 21;
    const N: usize = 20_000;
    let data = stream(7, N);
    let schedule = || PolynomialF32::from_range(1e-3, 1e-5, 0.55, N as u64).unwrap();
    let (mut fixed, mut float) = (Vec::new(), Vec::new());
    for seed in 0..8u64 {
        let mut window = Examples::<Ex, 128>::new();
        let (mut theta, mut mean) = ([0i32; P], [0i32; P]);
        let mut l = FixedSgld::<8, u8, _, 128, 8>::new(
            &mut window,
            &mut theta,
            &mut mean,
            FixedPrior::laplace(1.0).unwrap(),
            schedule(),
            N as u64 / 2,
        )
        .unwrap();
        let mut rng = default_rng(100 + seed);
        for ex in &data {
            assert!(!l.push(ex.clone(), &mut rng).unwrap().clipped);
        }
        let mut m = [0.0f32; P];
        l.means_into(&mut m).unwrap();
        fixed.push(m);

        let mut window = Examples::<Ex, 128>::new();
        let (mut theta, mut scratch) = ([0.0f32; P], [0.0f32; Sgld::scratch_len(P)]);
        let mut store = [0.0f32; WeightedMomentsF32::storage_len(P)];
        let mut batch = [0usize; 8];
        let mut l = OnlineSgld::new(
            &mut window,
            &mut theta,
            &mut scratch,
            WeightedMomentsF32::new(&mut store, P).unwrap(),
            &mut batch,
            Laplace::new(1.0).unwrap(),
            schedule(),
            Sgld::new(),
            N as u64 / 2,
        )
        .unwrap();
        let mut rng = default_rng(200 + seed);
        for ex in &data {
            l.push(ex.clone(), &mut rng).unwrap();
        }
        let mut m = [0.0f32; P];
        l.moments().means_into(&mut m).unwrap();
        float.push(m);
    }
    let stats = |runs: &[[f32; P]], j: usize| {
        let x: Vec<f64> = runs.iter().map(|m| m[j] as f64).collect();
        let mean = x.iter().sum::<f64>() / x.len() as f64;
        let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (x.len() - 1) as f64;
        (mean, var / x.len() as f64)
    };
    for j in 0..P {
        let ((a, va), (b, vb)) = (stats(&fixed, j), stats(&float, j));
        assert!(
            (a - b).abs() <= Z * (va + vb).sqrt() + 1e-4,
            "θ{j}: fixed {a}, f32 {b}"
        );
    }
    // The estimate learned something: the strongest coefficient's sign.
    assert!(stats(&fixed, 4).0 < -0.5, "{}", stats(&fixed, 4).0);
}
