//! The sampler family against posteriors known in closed form (release mode).
//!
//! # How the tolerances are derived
//!
//! As in `posterior.rs`: one chain per case, a burn-in discarded, means and variances
//! from the draws (constant step, uniform weights), Monte Carlo standard errors from 50
//! batch means (each batch spans many autocorrelation times), and Bonferroni `z = 4.5`
//! over the ≤ 100 checks of a case (family error ≤ 10⁻³).
//!
//! Every sampler here is linear in θ on a Gaussian target (pSGLD and SGNHT once their
//! adaptive preconditioner / thermostat has settled), so its stationary covariance
//! `Σ_ε` at step `ε` is exact: the discrete Lyapunov equation of the chain's linear map
//! (on `(θ, v)` for the momentum methods; through the `L` leapfrog maps for SGHD). A
//! variance passes when `|estimate − τΣ| ≤ z·MCSE + |Σ_ε − τΣ|`, and each case asserts
//! that the bias term is at most half the MCSE term (the comparison is with the closed
//! form, not with a tolerance the bias inflated). For pSGLD the map uses the
//! preconditioner averaged over the run; for SGNHT, SGHMC with friction the averaged
//! thermostat `ξ̄` and noise `a` (the thermostat settles slightly above `a` because the
//! integrator heats the stiff modes, which cools the others by `O(ε·λ_max)`).
//!
//! **Gaussian mean, d = 50, condition number ≥ 100**, with the control-variate estimator:
//! for this model `∇log p(xᵢ|θ) − ∇log p(xᵢ|θ̂) = −Λ(θ − θ̂)` does not depend on `i`, so
//! the estimator is exact (no mini-batch noise) and the cases test the integrators and
//! temperature alone, at `τ = 1` and `τ = 2` (variances scale by `τ`, means do not move).
//! **Normal–inverse-gamma regression** with plain mini-batches: the mini-batch noise
//! enters `Σ_ε` through the per-example scores, at the Laplace approximation.

mod common;
mod sampler_checks;

use common::normals;
use nalgebra::{DMatrix, DVector};
use sampler_checks::*;
use sgld::gradient::{ControlVariate, GradientEstimator, MiniBatch};
use sgld::models::{GaussianMean, LinearRegression};
use sgld::noise::default_rng;
use sgld::sampler::{ChainState, Mala, Metric, PrecondSgld, Psgld, Sampler, Sghd, Sghmc, Sgnht};
use sgld::{Error, Sgld};

#[test]
fn sgld_with_control_variates_and_temperature() {
    for tau in [1.0f32, 2.0] {
        let s = Sgld::new().with_temperature(tau).unwrap();
        let eps = 5.0e-4;
        gauss_case(
            &s,
            |a| {
                stationary(
                    &Linear::Precond(&DMatrix::identity(50, 50)),
                    a,
                    &zeros(50),
                    eps as f64,
                    tau as f64,
                )
            },
            eps,
            tau as f64,
            50_000,
            5_000_000,
            &format!("SGLD-CV τ={tau}"),
            true,
            |_| {},
        );
    }
}

#[test]
fn preconditioned_sgld_dense_and_diagonal() {
    let t = gauss_target();
    // Dense: M = Σ (the posterior covariance) through its Cholesky factor.
    let mut l = t.cov.iter().copied().collect::<Vec<f64>>(); // column-major = row-major (symmetric)
    sgld::linalg::cholesky(&mut l, t.d).unwrap();
    let l32: Vec<f32> = l.iter().map(|&v| v as f32).collect();
    let lm = from_f32(&l32, t.d, t.d);
    let m = &lm * lm.transpose();
    for tau in [1.0f32, 2.0] {
        let s = PrecondSgld::new(Metric::Cholesky(&l32), t.d)
            .unwrap()
            .with_temperature(tau)
            .unwrap();
        let eps = 0.02;
        gauss_case(
            &s,
            |a| stationary(&Linear::Precond(&m), a, &zeros(50), eps as f64, tau as f64),
            eps,
            tau as f64,
            2_000,
            200_000,
            &format!("precond dense τ={tau}"),
            true,
            |_| {},
        );
    }
    // Diagonal: M = 1/diag(A).
    let diag: Vec<f32> = (0..t.d).map(|i| (1.0 / t.a[(i, i)]) as f32).collect();
    let md = DMatrix::from_diagonal(&DVector::from_iterator(t.d, diag.iter().map(|&v| v as f64)));
    let s = PrecondSgld::new(Metric::Diagonal(&diag), t.d).unwrap();
    let eps = 0.01;
    gauss_case(
        &s,
        |a| stationary(&Linear::Precond(&md), a, &zeros(50), eps as f64, 1.0),
        eps,
        1.0,
        5_000,
        1_000_000,
        "precond diagonal τ=1",
        true,
        |_| {},
    );
}

/// An exact sampler (full-data gradients) on the Gaussian target from 0: 2,000 steps
/// of burn-in, then 100,000 checked against the closed form.
fn exact_on_gauss<S: Sampler>(s: &S, t: &GaussTarget, eps: f32, seed: u64, what: &str) {
    let model = GaussianMean::new(&t.x, t.d, &t.lik, &t.mu0, &t.prior).unwrap();
    let zero = vec![0.0; t.d];
    let summary = run(
        s,
        &MiniBatch::new(&model),
        &zero,
        eps,
        2_000,
        100_000,
        1,
        seed,
        |_| {},
    );
    check(&summary, &t.mean, &t.cov, &t.cov, what, true);
}

/// The lower Cholesky factor of the target's covariance in f32, and the metric `M = LLᵀ`
/// it stands for (`Σ` up to the factor's rounding).
fn covariance_factor(t: &GaussTarget) -> (Vec<f32>, DMatrix<f64>) {
    let mut l = t.cov.iter().copied().collect::<Vec<f64>>();
    sgld::linalg::cholesky(&mut l, t.d).unwrap();
    let l32: Vec<f32> = l.iter().map(|&v| v as f32).collect();
    let lm = from_f32(&l32, t.d, t.d);
    let m = &lm * lm.transpose();
    (l32, m)
}

/// With `M = Σ` the Gaussian-exact noise makes a large step exact: at `ε = 1` the Euler
/// step's variance is 4/3 of the posterior's, this one's is the posterior's (its
/// closed form differs from `τΣ` only by the f32 rounding of the metric's factor).
#[test]
fn preconditioned_sgld_gaussian_exact_at_a_large_step() {
    let t = gauss_target();
    let (l32, m) = covariance_factor(&t);
    let eps = 1.0f32;
    let euler = stationary(&Linear::Precond(&m), &t.a, &zeros(50), eps as f64, 1.0);
    let ratio = euler[(7, 7)] / t.cov[(7, 7)];
    assert!(
        (ratio - 4.0 / 3.0).abs() < 1e-3,
        "Euler variance ratio {ratio}"
    );
    for tau in [1.0f32, 2.0] {
        let s = PrecondSgld::new(Metric::Cholesky(&l32), t.d)
            .unwrap()
            .gaussian_exact()
            .with_temperature(tau)
            .unwrap();
        assert!(s.is_gaussian_exact());
        gauss_case(
            &s,
            |a| {
                let exact = Linear::PrecondGaussianExact(&m);
                stationary(&exact, a, &zeros(50), eps as f64, tau as f64)
            },
            eps,
            tau as f64,
            200,
            20_000,
            &format!("precond Gaussian-exact τ={tau}"),
            true,
            |_| {},
        );
    }
    // A step of 4 or more has no Gaussian-exact noise: refused, the chain untouched.
    let s = PrecondSgld::new(Metric::Cholesky(&l32), t.d)
        .unwrap()
        .gaussian_exact();
    let model = GaussianMean::new(&t.x, t.d, &t.lik, &t.mu0, &t.prior).unwrap();
    let (mut theta, mut scratch) = (vec![0.5f32; t.d], vec![0.0f32; 4 * t.d]);
    let mut state = s.init(&mut theta, &mut scratch).unwrap();
    let mut rng = default_rng(3);
    let est = MiniBatch::new(&model);
    assert!(matches!(
        s.step(&mut state, &est, &[0], 4.0, &mut rng),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(state.theta().iter().all(|&v| v == 0.5));
    assert!(s.step(&mut state, &est, &[0], 3.9, &mut rng).is_ok());
}

/// MALA with the Gaussian-exact proposal: with `M = Σ` on the Gaussian target every
/// proposal is accepted at a step as large as 1.5, and with a metric that is not `Σ`
/// (the diagonal `1/diag(A)`) the chain is still exact.
#[test]
fn mala_gaussian_exact_accepts_everything_on_its_gaussian() {
    let t = gauss_target();
    let model = GaussianMean::new(&t.x, t.d, &t.lik, &t.mu0, &t.prior).unwrap();
    let mut c: Vec<f64> = t.cov.iter().copied().collect();
    sgld::linalg::cholesky(&mut c, t.d).unwrap();
    let c32: Vec<f32> = c.iter().map(|&v| v as f32).collect();
    let s = Mala::new(&model)
        .with_covariance_factor(&c32)
        .unwrap()
        .gaussian_exact();
    let (mut theta, mut scratch) = (
        vec![0.0f32; t.d],
        vec![0.0f32; Mala::<()>::scratch_len(t.d)],
    );
    let mut state = s.init(&mut theta, &mut scratch).unwrap();
    let mut rng = default_rng(5);
    let mut worst = 1.0f64;
    for _ in 0..2_000 {
        worst = worst.min(s.step(&mut state, 1.5, &mut rng).unwrap().accept_prob);
    }
    // The log ratio is a difference of f32 quadratic forms: zero up to their rounding.
    assert!(worst > 0.99, "smallest acceptance {worst}");
    // The Euler proposal at the same step is refused most of the time.
    let euler = Mala::new(&model).with_covariance_factor(&c32).unwrap();
    let (mut theta, mut scratch) = (
        vec![0.0f32; t.d],
        vec![0.0f32; Mala::<()>::scratch_len(t.d)],
    );
    let mut state = euler.init(&mut theta, &mut scratch).unwrap();
    let mean: f64 = (0..200)
        .map(|_| euler.step(&mut state, 1.5, &mut rng).unwrap().accept_prob)
        .sum::<f64>()
        / 200.0;
    assert!(mean < 0.5, "Euler acceptance {mean}");
    let m: Vec<f32> = (0..t.d).map(|i| (1.0 / t.a[(i, i)]) as f32).collect();
    let s = Mala::new(&model).with_metric(&m).unwrap().gaussian_exact();
    exact_on_gauss(&s, &t, 0.3, 31, "MALA Gaussian-exact, diagonal metric");
    // A step of 4 or more has no Gaussian-exact proposal: refused, not stepped.
    let (mut theta, mut scratch) = (
        vec![0.0f32; t.d],
        vec![0.0f32; Mala::<()>::scratch_len(t.d)],
    );
    let mut state = s.init(&mut theta, &mut scratch).unwrap();
    assert!(s.step(&mut state, 4.0, &mut rng).is_err());
    assert_eq!(state.accepted(), 0);
}

#[test]
fn psgld_on_the_gaussian_target() {
    for tau in [1.0f32, 2.0] {
        let s = Psgld::new(0.9999, 1e-5)
            .unwrap()
            .with_temperature(tau)
            .unwrap();
        // G ≈ N/|ĝ| with N = 2 observations.
        let eps = 0.0015;
        let mut g_sum = vec![0.0f64; 50];
        let mut count = 0u64;
        let t = gauss_target();
        let model = GaussianMean::new(&t.x, t.d, &t.lik, &t.mu0, &t.prior).unwrap();
        let centre = vec![0.0f32; t.d];
        let mut buf = vec![0.0f32; ControlVariate::<()>::buffer_len(t.d)];
        let cv = ControlVariate::new(&model, &centre, &mut buf).unwrap();
        // A long burn-in settles V; then the average preconditioner is recorded.
        let summary = run(&s, &cv, &centre, eps, 200_000, 3_000_000, 1, 13, |st| {
            for (g, &v) in g_sum.iter_mut().zip(st.second_moments()) {
                *g += 1.0 / (1e-5 + (v as f64).sqrt());
            }
            count += 1;
        });
        let m = DMatrix::from_diagonal(&DVector::from_iterator(
            t.d,
            g_sum.iter().map(|g| g / count as f64),
        ));
        let cov_eps = stationary(
            &Linear::Precond(&m),
            &t.a,
            &zeros(50),
            eps as f64,
            tau as f64,
        );
        check(
            &summary,
            &t.mean,
            &(&t.cov * tau as f64),
            &cov_eps,
            &format!("pSGLD τ={tau}"),
            false,
        );
    }
}

#[test]
fn sghmc_on_the_gaussian_target() {
    for tau in [1.0f32, 2.0] {
        let alpha = 0.05f32;
        let s = Sghmc::new(alpha).unwrap().with_temperature(tau).unwrap();
        let eps = 2e-4;
        gauss_case(
            &s,
            |a| {
                stationary(
                    &Linear::Momentum {
                        friction: alpha as f64,
                        c: alpha as f64,
                    },
                    a,
                    &zeros(50),
                    eps as f64,
                    tau as f64,
                )
            },
            eps,
            tau as f64,
            20_000,
            1_000_000,
            &format!("SGHMC τ={tau}"),
            true,
            |_| {},
        );
    }
}

#[test]
fn sgnht_on_the_gaussian_target() {
    for tau in [1.0f32, 2.0] {
        let a_diff = 0.05f32;
        let s = Sgnht::new(a_diff).unwrap().with_temperature(tau).unwrap();
        let eps = 7e-5;
        let t = gauss_target();
        let model = GaussianMean::new(&t.x, t.d, &t.lik, &t.mu0, &t.prior).unwrap();
        let centre = vec![0.0f32; t.d];
        let mut buf = vec![0.0f32; ControlVariate::<()>::buffer_len(t.d)];
        let cv = ControlVariate::new(&model, &centre, &mut buf).unwrap();
        let (mut xi, mut count) = (0.0f64, 0u64);
        let summary = run(&s, &cv, &centre, eps, 50_000, 1_500_000, 1, 17, |st| {
            xi += st.xi();
            count += 1;
        });
        let xi = xi / count as f64;
        eprintln!("SGNHT τ={tau}: mean thermostat {xi:.4} (diffusion {a_diff})");
        let cov_eps = stationary(
            &Linear::Momentum {
                friction: xi,
                c: a_diff as f64,
            },
            &t.a,
            &zeros(50),
            eps as f64,
            tau as f64,
        );
        check(
            &summary,
            &t.mean,
            &(&t.cov * tau as f64),
            &cov_eps,
            &format!("SGNHT τ={tau}"),
            true,
        );
    }
}

#[test]
fn sghd_with_the_posterior_covariance_as_metric() {
    let t = gauss_target();
    let (l32, m) = covariance_factor(&t);
    for tau in [1.0f32, 2.0] {
        let s = Sghd::new(Metric::Cholesky(&l32), t.d, 4)
            .unwrap()
            .with_temperature(tau)
            .unwrap();
        let eps = 0.01;
        gauss_case(
            &s,
            |a| {
                stationary(
                    &Linear::Leapfrog(&m, 4),
                    a,
                    &zeros(50),
                    eps as f64,
                    tau as f64,
                )
            },
            eps,
            tau as f64,
            1_000,
            100_000,
            &format!("SGHD τ={tau}"),
            true,
            |_| {},
        );
    }
}

#[test]
fn mala_is_exact_on_the_gaussian_target() {
    let t = gauss_target();
    let model = GaussianMean::new(&t.x, t.d, &t.lik, &t.mu0, &t.prior).unwrap();
    for tau in [1.0f32, 2.0] {
        let s = Mala::new(&model).with_temperature(tau).unwrap();
        let eps = 2e-3 * tau;
        let mut acc = 0u64;
        let mut n = 0u64;
        let summary = run(
            &s,
            &MiniBatch::new(&model),
            &vec![0.0; t.d],
            eps,
            20_000,
            500_000,
            1,
            19,
            |st| {
                acc = st.accepted();
                n += 1;
            },
        );
        eprintln!(
            "MALA τ={tau}: acceptance {:.3}",
            acc as f64 / (n + 20_000) as f64
        );
        let cov = &t.cov * tau as f64;
        check(
            &summary,
            &t.mean,
            &cov,
            &cov,
            &format!("MALA τ={tau}"),
            true,
        );
    }
    // With the diagonal metric 1/diag(A): exact as well, and far fewer steps suffice.
    let m: Vec<f32> = (0..t.d).map(|i| (1.0 / t.a[(i, i)]) as f32).collect();
    let s = Mala::new(&model).with_metric(&m).unwrap();
    exact_on_gauss(&s, &t, 0.3, 21, "MALA, diagonal metric");
    // With the metric given by the Cholesky factor of the precision A: whitened, so a
    // large step mixes every direction at once.
    let mut l: Vec<f64> = t.a.iter().copied().collect();
    sgld::linalg::cholesky(&mut l, t.d).unwrap();
    let l32: Vec<f32> = l.iter().map(|&v| v as f32).collect();
    let s = Mala::new(&model).with_precision_factor(&l32).unwrap();
    let mut acc = 0u64;
    let summary = run(
        &s,
        &MiniBatch::new(&model),
        &vec![0.0; t.d],
        1.0,
        1_000,
        50_000,
        1,
        23,
        |st| acc = st.accepted(),
    );
    eprintln!(
        "MALA, precision factor: acceptance {:.3}",
        acc as f64 / 51_000.0
    );
    check(
        &summary,
        &t.mean,
        &t.cov,
        &t.cov,
        "MALA, precision metric",
        true,
    );
    // With the metric given by its own Cholesky factor (the covariance): the same
    // whitening from the other side, as a metric estimated from draws is given.
    let mut c: Vec<f64> = t.cov.iter().copied().collect();
    sgld::linalg::cholesky(&mut c, t.d).unwrap();
    let c32: Vec<f32> = c.iter().map(|&v| v as f32).collect();
    let s = Mala::new(&model).with_covariance_factor(&c32).unwrap();
    let mut acc = 0u64;
    let summary = run(
        &s,
        &MiniBatch::new(&model),
        &vec![0.0; t.d],
        1.0,
        1_000,
        50_000,
        1,
        29,
        |st| acc = st.accepted(),
    );
    let rate = acc as f64 / 51_000.0;
    eprintln!("MALA, covariance factor: acceptance {rate:.3}");
    assert!(rate > 0.3, "acceptance {rate}");
    check(
        &summary,
        &t.mean,
        &t.cov,
        &t.cov,
        "MALA, covariance metric",
        true,
    );
    assert!(Mala::new(&model).with_covariance_factor(&c32[1..]).is_err());
    assert!(Mala::new(&model).with_precision_factor(&l32[1..]).is_err());
    assert!(Mala::new(&model).with_metric(&m[1..]).is_err());
    let mut bad = m.clone();
    bad[3] = 0.0;
    assert!(Mala::new(&model).with_metric(&bad).is_err());
}

/// SGHMC with no friction and no noise is symplectic Euler on `H = U(θ) + vᵀv/(2η)`:
/// the energy error stays bounded (no drift) and is first order in the step `h = √η`.
#[test]
fn sghmc_without_friction_or_noise_conserves_the_hamiltonian() {
    let t = gauss_target();
    let model = GaussianMean::new(&t.x, t.d, &t.lik, &t.mu0, &t.prior).unwrap();
    let all: Vec<usize> = (0..2).collect();
    let est = MiniBatch::new(&model);
    let s = Sghmc::new(0.0).unwrap().with_temperature(0.0).unwrap();
    let energy_error = |eps: f32, time: f64| -> (f64, f64) {
        let mut theta = vec![0.0f32; t.d];
        for (th, m) in theta.iter_mut().zip(t.mean.iter()) {
            *th = *m as f32;
        }
        let mut scratch = vec![0.0f32; s.scratch_len(t.d)];
        let mut st = s.init(&mut theta, &mut scratch).unwrap();
        let eta = eps as f64 / 2.0;
        // Unit momentum in every coordinate: v = √η·p.
        for v in st.momentum_mut() {
            *v = eta.sqrt() as f32;
        }
        let h = |st: &sgld::sampler::SghmcState<'_>| {
            let th = st.theta();
            let v = st.momentum();
            -(sgld::models::Model::log_prior(&model, th)
                + sgld::models::Model::log_lik(&model, th, &all))
                + v.iter().map(|&x| x as f64 * x as f64).sum::<f64>() / (2.0 * eta)
        };
        let h0 = h(&st);
        let steps = (time / eta.sqrt()) as u64;
        let mut rng = default_rng(1);
        let (mut first, mut second) = (0.0f64, 0.0f64);
        for k in 0..steps {
            s.step(&mut st, &est, &all, eps, &mut rng).unwrap();
            let e = (h(&st) - h0).abs() / h0.abs();
            if k < steps / 2 {
                first = first.max(e);
            } else {
                second = second.max(e);
            }
        }
        (first, second)
    };
    let (a1, a2) = energy_error(1e-4, 20.0);
    let (b1, b2) = energy_error(2.5e-5, 20.0);
    eprintln!("relative energy error: h {a1:.2e}/{a2:.2e}, h/2 {b1:.2e}/{b2:.2e}");
    // No drift: the second half is no worse than the first (up to 10%).
    assert!(a2 <= 1.1 * a1 && b2 <= 1.1 * b1);
    // First order: halving h (η/4) halves the error, within [1.6, 2.5].
    let ratio = a1.max(a2) / b1.max(b2);
    assert!((1.6..=2.5).contains(&ratio), "error ratio {ratio}");
}

#[test]
fn temperature_zero_is_the_optimiser() {
    let t = gauss_target();
    let model = GaussianMean::new(&t.x, t.d, &t.lik, &t.mu0, &t.prior).unwrap();
    let all = [0usize, 1];
    let est = MiniBatch::new(&model);
    let s = Sgld::new().with_temperature(0.0).unwrap();
    let mut theta = vec![0.0f32; t.d];
    let mut scratch = vec![0.0f32; Sgld::scratch_len(t.d)];
    let mut st = Sgld::init(&mut theta, &mut scratch).unwrap();
    let mut rng = default_rng(1);
    for _ in 0..20_000 {
        let info = s.step(&mut st, &est, &all, 0.005, &mut rng).unwrap();
        assert_eq!(info.noise_norm, 0.0);
    }
    for (j, &th) in st.theta().iter().enumerate() {
        assert!(
            (th as f64 - t.mean[j]).abs() < 1e-3,
            "θ[{j}] = {th}, mode {}",
            t.mean[j]
        );
    }
}

#[test]
fn invalid_parameters_are_refused() {
    assert!(Sghmc::new(1.5).is_err() && Sghmc::new(-0.1).is_err() && Sghmc::new(f32::NAN).is_err());
    assert!(Sghmc::new(0.1).unwrap().with_noise_estimate(0.0).is_err());
    assert!(Psgld::new(1.0, 1e-5).is_err() && Psgld::new(0.9, 0.0).is_err());
    assert!(Sgnht::new(0.0).is_err() && Sgnht::new(f32::INFINITY).is_err());
    assert!(Sgld::new().with_temperature(f32::NAN).is_err());
    assert!(Sgld::new().with_temperature(-1.0).is_err());
    let bad_diag = [1.0f32, 0.0];
    assert!(PrecondSgld::new(Metric::Diagonal(&bad_diag), 2).is_err());
    assert!(PrecondSgld::new(Metric::Diagonal(&[1.0, 1.0]), 3).is_err());
    let bad_l = [1.0f32, 0.0, 2.0, -1.0];
    assert!(PrecondSgld::new(Metric::Cholesky(&bad_l), 2).is_err());
    assert!(Sghd::new(Metric::Diagonal(&[1.0, 1.0]), 2, 0).is_err());
    assert!(matches!(
        sgld::linalg::cholesky(&mut [1.0, 0.0, 0.0, -1.0], 2),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(sgld::schedule::Cyclical::new(0.1, 10, 0).is_err());
    assert!(sgld::schedule::Cyclical::new(0.1, 3, 4).is_err());
    assert!(sgld::schedule::Cyclical::new(f64::NAN, 10, 2).is_err());
}

/// Bad input to `step` errs and leaves the state as it was; a NaN gradient is refused.
#[test]
fn bad_steps_leave_every_chain_untouched() {
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let lik = [1.0f32, 0.0, 0.0, 1.0];
    let prior = [1.0f32, 0.0, 0.0, 1.0];
    let mu0 = [0.0f32, 0.0];
    let model = GaussianMean::new(&x, 2, &lik, &mu0, &prior).unwrap();
    let est = MiniBatch::new(&model);
    fn probe<S: Sampler>(s: &S, est: &impl GradientEstimator) {
        let mut theta = [0.5f32, -0.5];
        let mut scratch = vec![0.0f32; s.scratch_floats(2)];
        let mut st = s.start(&mut theta, &mut scratch).unwrap();
        let mut rng = default_rng(3);
        for (batch, eps) in [
            (&[][..], 0.1f32),
            (&[5][..], 0.1),
            (&[0][..], 0.0),
            (&[0][..], f32::NAN),
        ] {
            assert!(s.advance(&mut st, est, batch, eps, &mut rng).is_err());
            assert_eq!(st.theta(), &[0.5, -0.5]);
            assert_eq!(st.steps(), 0);
        }
        assert!(s.advance(&mut st, est, &[0, 1], 1e-3, &mut rng).is_ok());
        // Too little scratch.
        let mut th = [0.0f32; 2];
        let mut short = vec![0.0f32; s.scratch_floats(2) - 1];
        assert!(s.start(&mut th, &mut short).is_err());
        let mut nan = [f32::NAN, 0.0];
        let mut sc = vec![0.0f32; s.scratch_floats(2)];
        assert!(s.start(&mut nan, &mut sc).is_err());
    }
    let diag = [1.0f32, 2.0];
    probe(&Sgld::new(), &est);
    probe(&PrecondSgld::new(Metric::Diagonal(&diag), 2).unwrap(), &est);
    probe(
        &Psgld::new(0.99, 1e-5).unwrap().with_gamma_correction(true),
        &est,
    );
    probe(
        &Sghmc::new(0.1).unwrap().with_noise_estimate(0.1).unwrap(),
        &est,
    );
    probe(&Sghd::new(Metric::Diagonal(&diag), 2, 3).unwrap(), &est);
    probe(&Sgnht::new(0.1).unwrap(), &est);

    // An estimator that returns NaN: every sampler refuses and keeps θ.
    struct NanGrad;
    impl GradientEstimator for NanGrad {
        fn dim(&self) -> usize {
            2
        }
        fn n_data(&self) -> usize {
            4
        }
        fn estimate(&self, _: &[f32], _: &[usize], g: &mut [f32]) {
            g.fill(f32::NAN);
        }
    }
    fn refuses<S: Sampler>(s: &S) {
        let mut theta = [0.5f32, -0.5];
        let mut scratch = vec![0.0f32; s.scratch_floats(2)];
        let mut st = s.start(&mut theta, &mut scratch).unwrap();
        let info = s
            .advance(&mut st, &NanGrad, &[0], 1e-3, &mut default_rng(1))
            .unwrap();
        assert!(info.non_finite);
        assert_eq!(st.theta(), &[0.5, -0.5]);
        assert_eq!(st.refused(), 1);
    }
    refuses(&Sgld::new());
    refuses(&PrecondSgld::new(Metric::Diagonal(&diag), 2).unwrap());
    refuses(&Psgld::new(0.99, 1e-5).unwrap());
    refuses(&Sghmc::new(0.1).unwrap());
    refuses(&Sghd::new(Metric::Diagonal(&diag), 2, 3).unwrap());
    refuses(&Sgnht::new(0.1).unwrap());
}

#[test]
fn control_variates_are_exact_at_the_centre_and_unbiased_elsewhere() {
    let p = nig();
    let model = LinearRegression::new(&p.x, &p.y, 5, 100.0, 1.0, 1.0).unwrap();
    let centre: Vec<f32> = p.mean.iter().map(|&v| v as f32).collect();
    let mut buf = vec![0.0f32; ControlVariate::<()>::buffer_len(6)];
    let cv = ControlVariate::new(&model, &centre, &mut buf).unwrap();
    // Full-data gradient by MiniBatch over all rows (N/n = 1).
    let all: Vec<usize> = (0..1000).collect();
    let mut exact = vec![0.0f32; 6];
    MiniBatch::new(&model).estimate(&centre, &all, &mut exact);
    let mut g = vec![0.0f32; 6];
    cv.estimate(&centre, &[3, 7, 11], &mut g);
    for j in 0..6 {
        assert!(
            (g[j] - exact[j]).abs() <= 1e-3 * (1.0 + exact[j].abs()),
            "{j}: {} vs {}",
            g[j],
            exact[j]
        );
    }
    // Away from the centre: the average over every single-row batch is the full gradient.
    let theta: Vec<f32> = centre.iter().map(|c| c + 0.01).collect();
    MiniBatch::new(&model).estimate(&theta, &all, &mut exact);
    let mut avg = [0.0f64; 6];
    for i in 0..1000 {
        cv.estimate(&theta, &[i], &mut g);
        for j in 0..6 {
            avg[j] += g[j] as f64 / 1000.0;
        }
    }
    for j in 0..6 {
        assert!(
            (avg[j] - exact[j] as f64).abs() <= 1e-2 * (1.0 + exact[j].abs() as f64),
            "{j}"
        );
    }
    assert!(ControlVariate::new(&model, &centre[..5], &mut buf).is_err());
}

/// An SGLD step on bitmap rows (whose estimate draws the noise part way through) is eq. 4
/// by hand, bit for bit: the estimate, then `fill_normal` from the same generator, then
/// the update (as the out-of-place proposal); with clipping too, whose noise is drawn
/// after the estimate.
#[test]
fn sgld_step_on_bitmap_rows_is_eq4_by_hand() {
    use sgld::models::{BitRows, Laplace, LogisticBits};
    let (n, d) = (40usize, 124usize);
    let u = normals(n * d + n, 11);
    let mut words = vec![0u16; n * BitRows::words_per_row(d)];
    for i in 0..n {
        for j in (0..d).filter(|&j| j == d - 1 || u[i * d + j] > 1.0) {
            words[i * 8 + j / 16] |= 1 << (j % 16);
        }
    }
    let y: Vec<f32> = (0..n)
        .map(|i| if u[n * d + i] > 0.0 { 1.0 } else { -1.0 })
        .collect();
    let model = LogisticBits::new(
        BitRows::new(&words, d).unwrap(),
        &y,
        Laplace::new(1.0).unwrap(),
    )
    .unwrap();
    let est = MiniBatch::new(&model);
    let eps = 1e-3f32;
    for sampler in [Sgld::new(), Sgld::new().with_clip(1e6).unwrap()] {
        let mut theta = vec![0.0f32; d];
        let mut scratch = vec![0.0f32; Sgld::scratch_len(d)];
        let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
        let (mut rng, mut hand_rng) = (default_rng(5), default_rng(5));
        let mut hand = vec![0.0f32; d];
        let (mut g, mut eta) = (vec![0.0f32; d], vec![0.0f32; d]);
        for t in 0..50 {
            let batch: Vec<usize> = (0..10).map(|k| (7 * t + 3 * k) % n).collect();
            sampler
                .step(&mut state, &est, &batch, eps, &mut rng)
                .unwrap();
            est.estimate(&hand, &batch, &mut g);
            sgld::noise::fill_normal(&mut hand_rng, &mut eta);
            // The out-of-place proposal is what the step writes into θ, bit for bit.
            sgld::kernels::langevin_propose(&hand, &g, &mut eta, eps).unwrap();
            hand.copy_from_slice(&eta);
            let same = state
                .theta()
                .iter()
                .zip(&hand)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{sampler:?}, step {t}");
        }
    }
}
