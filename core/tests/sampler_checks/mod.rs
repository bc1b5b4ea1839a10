//! What the sampler tests share: a chain run with batch-means standard errors, the exact
//! stationary covariance of a linear chain (the discrete Lyapunov equation), the check
//! against the closed form, and the two targets (the ill-conditioned Gaussian mean and
//! the Normal–inverse-gamma regression). The tolerances are derived in `samplers.rs`.

#![allow(dead_code)]

use super::common::{self, ChainSummary, digamma, normals, trigamma};
use nalgebra::{DMatrix, DVector};
use sgld::gradient::{ControlVariate, GradientEstimator, sample_batch};
use sgld::models::GaussianMean;
use sgld::noise::default_rng;
use sgld::sampler::{ChainState, Sampler};

pub const BATCHES: usize = 50;
pub const Z: f64 = 4.5;

pub fn to_f32(m: &DMatrix<f64>) -> Vec<f32> {
    (0..m.nrows())
        .flat_map(|i| (0..m.ncols()).map(move |j| (i, j)))
        .map(|(i, j)| m[(i, j)] as f32)
        .collect()
}

pub fn from_f32(v: &[f32], r: usize, c: usize) -> DMatrix<f64> {
    DMatrix::from_row_iterator(r, c, v.iter().map(|&x| x as f64))
}

/// Runs any sampler with a constant step: `burn_in` steps, then `steps` kept in
/// `BATCHES` consecutive batches; `observe` sees the state after every kept step.
#[allow(clippy::too_many_arguments)]
pub fn run<S: Sampler, E: GradientEstimator + ?Sized>(
    sampler: &S,
    est: &E,
    theta0: &[f32],
    eps: f32,
    burn_in: u64,
    steps: u64,
    n: usize,
    seed: u64,
    mut observe: impl FnMut(&S::State<'_>),
) -> ChainSummary {
    let d = theta0.len();
    let mut theta = theta0.to_vec();
    let mut scratch = vec![0.0f32; sampler.scratch_floats(d)];
    let mut state = sampler.start(&mut theta, &mut scratch).unwrap();
    let mut rng = default_rng(seed);
    let mut batch = vec![0usize; n];
    for _ in 0..burn_in {
        sample_batch(&mut rng, est.n_data(), &mut batch).unwrap();
        sampler
            .advance(&mut state, est, &batch, eps, &mut rng)
            .unwrap();
    }
    let per = steps / BATCHES as u64;
    let mut out = ChainSummary {
        mean: vec![0.0; d],
        var: vec![0.0; d],
        second: vec![],
        batch_mean: vec![],
        batch_var: vec![],
        batch_weight: vec![],
        max_eps: eps as f64,
        refused: 0,
    };
    let (mut sum, mut sq) = (vec![0.0f64; d], vec![0.0f64; d]);
    for _ in 0..BATCHES {
        let (mut bs, mut bq) = (vec![0.0f64; d], vec![0.0f64; d]);
        for _ in 0..per {
            sample_batch(&mut rng, est.n_data(), &mut batch).unwrap();
            let info = sampler
                .advance(&mut state, est, &batch, eps, &mut rng)
                .unwrap();
            assert!(!info.non_finite, "seed {seed}: non-finite step");
            observe(&state);
            for (j, &t) in state.theta().iter().enumerate() {
                bs[j] += t as f64;
                bq[j] += t as f64 * t as f64;
            }
        }
        let k = per as f64;
        let m: Vec<f64> = bs.iter().map(|s| s / k).collect();
        out.batch_var
            .push((0..d).map(|j| bq[j] / k - m[j] * m[j]).collect());
        out.batch_mean.push(m);
        out.batch_weight.push(k);
        for j in 0..d {
            sum[j] += bs[j];
            sq[j] += bq[j];
        }
    }
    let total = (per * BATCHES as u64) as f64;
    for j in 0..d {
        out.mean[j] = sum[j] / total;
        out.var[j] = sq[j] / total - out.mean[j] * out.mean[j];
    }
    out.refused = state.refused();
    out
}

/// `Σ = BΣBᵀ + Q` by doubling.
pub fn lyapunov(b: &DMatrix<f64>, q: &DMatrix<f64>) -> DMatrix<f64> {
    common::stationary_covariance(b, q)
}

/// The linear map of one step of each sampler on a Gaussian target with precision `A`
/// and mini-batch gradient-noise covariance `V`; returns the stationary covariance of θ.
pub enum Linear<'a> {
    /// `θ' = θ + (ε/2)Mĝ + N(0, ετM)` (SGLD: `M = I`; pSGLD: `M = diag(Ḡ)`).
    Precond(&'a DMatrix<f64>),
    /// The same with the Gaussian-exact noise `N(0, ε(1 − ε/4)τM)`.
    PrecondGaussianExact(&'a DMatrix<f64>),
    /// `v' = (1−α)v + ηĝ + N(0, cετ)`, `θ' = θ + v'` (SGHMC: `c = α`; SGNHT: friction
    /// `ξ̄`, `c = a`).
    Momentum { friction: f64, c: f64 },
    /// SGHD with metric `M` and `L` leapfrog steps.
    Leapfrog(&'a DMatrix<f64>, u32),
}

pub fn stationary(
    kind: &Linear,
    a: &DMatrix<f64>,
    v: &DMatrix<f64>,
    eps: f64,
    tau: f64,
) -> DMatrix<f64> {
    let d = a.nrows();
    let id = DMatrix::<f64>::identity(d, d);
    match kind {
        Linear::Precond(m) | Linear::PrecondGaussianExact(m) => {
            let s = match kind {
                Linear::PrecondGaussianExact(_) => eps * (1.0 - eps / 4.0),
                _ => eps,
            };
            let b = &id - *m * a * (eps / 2.0);
            let q = *m * v * m.transpose() * (eps * eps / 4.0) + *m * (s * tau);
            lyapunov(&b, &q)
        }
        Linear::Momentum { friction, c } => {
            let eta = eps / 2.0;
            let mut b = DMatrix::zeros(2 * d, 2 * d);
            let top = &id - a * eta;
            b.view_mut((0, 0), (d, d)).copy_from(&top);
            b.view_mut((0, d), (d, d))
                .copy_from(&(&id * (1.0 - friction)));
            b.view_mut((d, 0), (d, d)).copy_from(&(a * -eta));
            b.view_mut((d, d), (d, d))
                .copy_from(&(&id * (1.0 - friction)));
            let w = v * (eta * eta) + &id * (c * eps * tau);
            let mut q = DMatrix::zeros(2 * d, 2 * d);
            for (r, cc) in [(0, 0), (0, d), (d, 0), (d, d)] {
                q.view_mut((r, cc), (d, d)).copy_from(&w);
            }
            lyapunov(&b, &q).view((0, 0), (d, d)).into_owned()
        }
        Linear::Leapfrog(m, l) => {
            // Affine in z = (q, u, ξ): kick u += k·M(−Aq + ξ), drift q += h·u.
            let h = eps.sqrt();
            let n = 3 * d;
            let kick = |k: f64| {
                let mut t = DMatrix::<f64>::identity(n, n);
                t.view_mut((d, 0), (d, d)).copy_from(&(*m * a * -k));
                t.view_mut((d, 2 * d), (d, d)).copy_from(&(*m * k));
                t
            };
            let mut drift = DMatrix::<f64>::identity(n, n);
            drift.view_mut((0, d), (d, d)).copy_from(&(&id * h));
            let mut t = &drift * kick(h / 2.0);
            for _ in 1..*l {
                t = &drift * kick(h) * t;
            }
            let tqq = t.view((0, 0), (d, d)).into_owned();
            let tqu = t.view((0, d), (d, d)).into_owned();
            let tqx = t.view((0, 2 * d), (d, d)).into_owned();
            let q = &tqu * (*m * tau) * tqu.transpose() + &tqx * v * tqx.transpose();
            lyapunov(&tqq, &q)
        }
    }
}

/// Means within `z·MCSE`. Variances: when the chain is exactly linear (`exact`), within
/// `z·MCSE` of its stationary variance `Σ_ε`, which must itself lie within 5% of the
/// closed form; otherwise (a linearisation) within `z·MCSE + |Σ_ε − Σ|`, that bias at
/// most half the MCSE term.
pub fn check(
    s: &ChainSummary,
    mean: &DVector<f64>,
    cov: &DMatrix<f64>,
    cov_eps: &DMatrix<f64>,
    what: &str,
    exact: bool,
) {
    assert_eq!(s.refused, 0, "{what}: refused steps");
    let mut worst = 0.0f64;
    for j in 0..mean.len() {
        let se = s.mcse_mean(j);
        let err = (s.mean[j] - mean[j]).abs();
        assert!(
            err <= Z * se,
            "{what}: mean of θ[{j}] = {}, exact {}, {Z}·MCSE = {}",
            s.mean[j],
            mean[j],
            Z * se
        );
        let se_v = s.mcse_var(j);
        let bias = (cov_eps[(j, j)] - cov[(j, j)]).abs();
        if exact {
            assert!(
                bias <= 0.05 * cov[(j, j)],
                "{what}: step too large for θ[{j}]: Σ_ε = {:.4e}, Σ = {:.4e}",
                cov_eps[(j, j)],
                cov[(j, j)]
            );
            let err_v = (s.var[j] - cov_eps[(j, j)]).abs();
            assert!(
                err_v <= Z * se_v,
                "{what}: variance of θ[{j}] = {:.5e}, Σ_ε = {:.5e} (closed form {:.5e}), {Z}·MCSE = {:.3e}",
                s.var[j],
                cov_eps[(j, j)],
                cov[(j, j)],
                Z * se_v
            );
            worst = worst.max(err / se).max(err_v / se_v);
            continue;
        }
        assert!(
            bias <= 0.5 * Z * se_v,
            "{what}: step too large for θ[{j}]: bias {bias:.3e} vs MCSE term {:.3e}",
            Z * se_v
        );
        let err_v = (s.var[j] - cov[(j, j)]).abs();
        assert!(
            err_v <= Z * se_v + bias,
            "{what}: variance of θ[{j}] = {:.5e}, exact {:.5e}, tolerance {:.3e}",
            s.var[j],
            cov[(j, j)],
            Z * se_v + bias
        );
        worst = worst.max(err / se).max(err_v / se_v);
    }
    eprintln!("{what}: worst |error|/MCSE {worst:.2}");
}

/// The Gaussian-mean target: `d = 50`, posterior precision `A = D^½ S D^½` with `D`
/// log-spaced over [1, 150] and `S` a rotation of eigenvalues in [0.8, 1.25]; `N = 2`
/// observations (`Λ = 0.45A`, `P₀ = 0.1A`).
pub struct GaussTarget {
    pub x: Vec<f32>,
    pub lik: Vec<f32>,
    pub prior: Vec<f32>,
    pub mu0: Vec<f32>,
    pub a: DMatrix<f64>,
    pub mean: DVector<f64>,
    pub cov: DMatrix<f64>,
    pub d: usize,
}

pub fn gauss_target() -> GaussTarget {
    let d = 50;
    let g = normals(d * d, 7);
    let q = DMatrix::from_iterator(d, d, g.iter().map(|&v| v as f64))
        .qr()
        .q();
    let e = DVector::from_iterator(
        d,
        (0..d).map(|i| 0.8 * (1.25f64 / 0.8).powf(i as f64 / 49.0)),
    );
    let s = &q * DMatrix::from_diagonal(&e) * q.transpose();
    let dh = DVector::from_iterator(d, (0..d).map(|i| 150f64.powf(i as f64 / 49.0).sqrt()));
    let at = DMatrix::from_fn(d, d, |i, j| dh[i] * s[(i, j)] * dh[j]);
    let at = (&at + at.transpose()) * 0.5;
    let (lik, prior) = (to_f32(&(&at * 0.45)), to_f32(&(&at * 0.1)));
    let mu0: Vec<f32> = (0..d).map(|i| (i as f32 * 0.37).sin()).collect();
    let x: Vec<f32> = normals(2 * d, 8).iter().map(|v| v * 0.3 + 1.0).collect();
    // Closed form from the f32 values the model sees.
    let (lk, pr) = (from_f32(&lik, d, d), from_f32(&prior, d, d));
    let a = &pr + &lk * 2.0;
    let cov = a.clone().try_inverse().unwrap();
    let xs = from_f32(&x, 2, d);
    let xsum = xs.row_sum().transpose();
    let mean = &cov * (&pr * from_f32(&mu0, d, 1) + &lk * xsum);
    let ev = a.clone().symmetric_eigenvalues();
    let cond = ev.max() / ev.min();
    assert!(cond >= 100.0, "condition number {cond}");
    GaussTarget {
        x,
        lik,
        prior,
        mu0,
        a,
        mean: mean.column(0).into_owned(),
        cov,
        d,
    }
}

/// Runs `sampler` with the control-variate estimator (centre 0) on the Gaussian target
/// and checks it against `τ·Σ` with the bias of `kind`.
#[allow(clippy::too_many_arguments)]
pub fn gauss_case<S: Sampler>(
    sampler: &S,
    kind: impl Fn(&DMatrix<f64>) -> DMatrix<f64>,
    eps: f32,
    tau: f64,
    burn_in: u64,
    steps: u64,
    what: &str,
    exact: bool,
    observe: impl FnMut(&S::State<'_>),
) {
    let t = gauss_target();
    let model = GaussianMean::new(&t.x, t.d, &t.lik, &t.mu0, &t.prior).unwrap();
    let centre = vec![0.0f32; t.d];
    let mut buf = vec![0.0f32; ControlVariate::<()>::buffer_len(t.d)];
    let cv = ControlVariate::new(&model, &centre, &mut buf).unwrap();
    let s = run(sampler, &cv, &centre, eps, burn_in, steps, 1, 11, observe);
    let cov = &t.cov * tau;
    let cov_eps = kind(&t.a);
    check(&s, &t.mean, &cov, &cov_eps, what, exact);
}

pub fn zeros(d: usize) -> DMatrix<f64> {
    DMatrix::zeros(d, d)
}

/// The Normal–inverse-gamma regression of `posterior.rs` (N = 1000, d = 5 + log σ²,
/// batch 100), with plain mini-batches: closed-form means and variances, and the Laplace
/// quantities `A` (negative Hessian at the mean) and `V` (mini-batch noise).
pub struct Nig {
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub mean: DVector<f64>,
    pub cov: DMatrix<f64>,
    pub a: DMatrix<f64>,
    pub v: DMatrix<f64>,
}

pub fn nig() -> Nig {
    let (n_data, d, n) = (1000usize, 5usize, 100usize);
    let (vv, phi, psi) = (100.0f64, 1.0f64, 1.0f64);
    let x = normals(n_data * d, 421);
    let noise = normals(n_data, 422);
    let beta_star = [1.0f32, -2.0, 0.5, 0.0, 3.0];
    let y: Vec<f32> = (0..n_data)
        .map(|i| (0..d).map(|j| x[i * d + j] * beta_star[j]).sum::<f32>() + noise[i])
        .collect();
    let xm = from_f32(&x, n_data, d);
    let yv = DVector::from_iterator(n_data, y.iter().map(|&t| t as f64));
    let prec = xm.transpose() * &xm + DMatrix::identity(d, d) / vv;
    let vn = prec.clone().try_inverse().unwrap();
    let mun = &vn * (xm.transpose() * &yv);
    let an = phi + n_data as f64 / 2.0;
    let bn = psi + 0.5 * (yv.dot(&yv) - mun.dot(&(&prec * &mun)));
    let mut mean = DVector::zeros(d + 1);
    let mut cov = DMatrix::zeros(d + 1, d + 1);
    mean.rows_mut(0, d).copy_from(&mun);
    mean[d] = bn.ln() - digamma(an);
    cov.view_mut((0, 0), (d, d))
        .copy_from(&(&vn * (bn / (an - 1.0))));
    cov[(d, d)] = trigamma(an);
    let e = (-mean[d]).exp();
    let r = &yv - &xm * &mun;
    let mut a = DMatrix::zeros(d + 1, d + 1);
    a.view_mut((0, 0), (d, d)).copy_from(&(&prec * e));
    let cross = (xm.transpose() * &r - &mun / vv) * e;
    for j in 0..d {
        a[(j, d)] = cross[j];
        a[(d, j)] = cross[j];
    }
    a[(d, d)] = e * (r.dot(&r) / 2.0 + mun.dot(&mun) / (2.0 * vv) + psi);
    let scores = DMatrix::from_fn(n_data, d + 1, |i, j| {
        if j < d {
            r[i] * e * xm[(i, j)]
        } else {
            -0.5 + 0.5 * r[i] * r[i] * e
        }
    });
    let sbar = scores.row_mean();
    let c = DMatrix::from_fn(n_data, d + 1, |i, j| scores[(i, j)] - sbar[j]);
    let v = c.transpose() * &c / n_data as f64 * ((n_data * n_data) as f64 / n as f64);
    Nig {
        x,
        y,
        mean,
        cov,
        a,
        v,
    }
}
