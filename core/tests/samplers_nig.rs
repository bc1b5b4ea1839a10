//! The sampler family on the Normal–inverse-gamma regression, against its closed form
//! with the Laplace-linearised bias of each sampler at its step (the tolerances are
//! derived in `samplers.rs`).

mod common;
mod sampler_checks;

use nalgebra::{DMatrix, DVector};
use sampler_checks::*;
use sgld::Sgld;
use sgld::gradient::{ControlVariate, GradientEstimator, MiniBatch};
use sgld::models::LinearRegression;
use sgld::sampler::{Metric, PrecondSgld, Psgld, Sampler, Sghd, Sghmc, Sgnht};

/// Runs `sampler` on the NIG regression from the posterior mean (so a short burn-in
/// suffices) and checks it with the Laplace-linearised bias of `kind`.
/// With `cv`, the estimator is the control variate centred at the posterior mean, whose
/// mini-batch noise is `O(‖θ − θ̂‖²)`: `V = 0` in the bias.
fn nig_case<S: Sampler>(sampler: &S, kind: &Linear, eps: f32, steps: u64, what: &str, cv: bool) {
    let mut p = nig();
    let model = LinearRegression::new(&p.x, &p.y, 5, 100.0, 1.0, 1.0).unwrap();
    let theta0: Vec<f32> = p.mean.iter().map(|&v| v as f32).collect();
    let mut buf = vec![0.0f32; ControlVariate::<()>::buffer_len(6)];
    let cv_est = ControlVariate::new(&model, &theta0, &mut buf).unwrap();
    let plain = MiniBatch::new(&model);
    let est: &dyn GradientEstimator = if cv {
        p.v = zeros(6);
        &cv_est
    } else {
        &plain
    };
    let s = run(
        sampler,
        est,
        &theta0,
        eps,
        steps / 20,
        steps,
        100,
        23,
        |_| {},
    );
    // The bias of the Laplace approximation, added to the exact covariance.
    let laplace = p.a.clone().try_inverse().unwrap();
    let bias = stationary(kind, &p.a, &p.v, eps as f64, 1.0) - laplace + &p.cov;
    check(&s, &p.mean, &p.cov, &bias, what, false);
}

#[test]
fn every_sampler_on_the_normal_inverse_gamma_regression() {
    let p = nig();
    let d = 6;
    let id = DMatrix::<f64>::identity(d, d);
    // Metric: the Laplace covariance (what an SGLD pilot run would estimate).
    let mut l: Vec<f64> = p.a.clone().try_inverse().unwrap().iter().copied().collect();
    sgld::linalg::cholesky(&mut l, d).unwrap();
    let l32: Vec<f32> = l.iter().map(|&v| v as f32).collect();
    let lm = from_f32(&l32, d, d);
    let m = &lm * lm.transpose();

    nig_case(
        &Sgld::new(),
        &Linear::Precond(&id),
        1e-5,
        600_000,
        "NIG: SGLD",
        false,
    );
    let pre = PrecondSgld::new(Metric::Cholesky(&l32), d).unwrap();
    nig_case(
        &pre,
        &Linear::Precond(&m),
        0.01,
        100_000,
        "NIG: precond",
        false,
    );
    let sghd = Sghd::new(Metric::Cholesky(&l32), d, 3).unwrap();
    nig_case(
        &sghd,
        &Linear::Leapfrog(&m, 3),
        0.005,
        50_000,
        "NIG: SGHD-CV",
        true,
    );
    let alpha = 0.2f32;
    nig_case(
        &Sghmc::new(alpha).unwrap(),
        &Linear::Momentum {
            friction: alpha as f64,
            c: alpha as f64,
        },
        2e-6,
        600_000,
        "NIG: SGHMC",
        false,
    );
}

#[test]
fn psgld_and_sgnht_on_the_normal_inverse_gamma_regression() {
    let p = nig();
    let model = LinearRegression::new(&p.x, &p.y, 5, 100.0, 1.0, 1.0).unwrap();
    let theta0: Vec<f32> = p.mean.iter().map(|&v| v as f32).collect();
    let est = MiniBatch::new(&model);

    let ps = Psgld::new(0.999, 1e-5).unwrap();
    // G ≈ N/|ĝ| with N = 1000.
    let eps = 1e-6;
    let (mut g, mut k) = (vec![0.0f64; 6], 0u64);
    let s = run(&ps, &est, &theta0, eps, 20_000, 400_000, 100, 29, |st| {
        for (g, &v) in g.iter_mut().zip(st.second_moments()) {
            *g += 1.0 / (1e-5 + (v as f64).sqrt());
        }
        k += 1;
    });
    let m = DMatrix::from_diagonal(&DVector::from_iterator(6, g.iter().map(|g| g / k as f64)));
    let laplace = p.a.clone().try_inverse().unwrap();
    let bias = stationary(&Linear::Precond(&m), &p.a, &p.v, eps as f64, 1.0) - &laplace + &p.cov;
    check(&s, &p.mean, &p.cov, &bias, "NIG: pSGLD", false);

    // SGNHT with the control variate (its thermostat would otherwise absorb the
    // mini-batch noise into a friction the linearisation cannot see).
    let a_diff = 0.05f32;
    let sg = Sgnht::new(a_diff).unwrap();
    let eps = 2.5e-6;
    let (mut xi, mut k) = (0.0f64, 0u64);
    let mut buf = vec![0.0f32; ControlVariate::<()>::buffer_len(6)];
    let cv = ControlVariate::new(&model, &theta0, &mut buf).unwrap();
    let s = run(&sg, &cv, &theta0, eps, 20_000, 600_000, 100, 31, |st| {
        xi += st.xi();
        k += 1;
    });
    let xi = xi / k as f64;
    let bias = stationary(
        &Linear::Momentum {
            friction: xi,
            c: a_diff as f64,
        },
        &p.a,
        &zeros(6),
        eps as f64,
        1.0,
    ) - &laplace
        + &p.cov;
    check(&s, &p.mean, &p.cov, &bias, "NIG: SGNHT-CV", true);
}
