//! The Metropolis-adjusted Langevin algorithm on the full data: the exact reference the
//! stochastic samplers are compared with (Roberts & Tweedie 1996; Welling & Teh, §3).
//!
//! Proposal `θ* = θ + (ε/2)·M·∇log p(θ|X) + N(0, ετM)` (`M = I` unless a metric is
//! given: diagonal, or through the Cholesky factor of its inverse `P = M⁻¹`, e.g. the
//! Fisher information plus the prior precision), accepted with probability
//! `min(1, [p(θ*|X)/p(θ|X)]^{1/τ} · q(θ|θ*)/q(θ*|θ))`. The chain targets
//! `p(θ|X)^{1/τ}` exactly at any `ε` and any fixed `M`; each step is a full pass over the
//! data. A metric near the posterior variances lets every coordinate move at the same
//! pace (on a9a the Laplace-prior coordinates of rare features have sds 100× those of
//! the frequent ones).
//!
//! [`Mala::gaussian_exact`] proposes with the noise `N(0, ε(1 − ε/4)τM)` instead: on a
//! Gaussian posterior of covariance `τM` that proposal leaves the posterior invariant
//! by itself (every move is accepted), so the acceptance measures only how far the
//! posterior is from that Gaussian.

use rand_core::Rng;

use super::StepInfo;
use super::common::{self, Options, chain_state, common_options};
use crate::error::Error;
use crate::gradient::{GradientEstimator, full_log_posterior};
use crate::linalg::{solve_lower, solve_lower_t};
use crate::models::Model;
use crate::noise::fill_normal;

/// MALA over a model's full data.
///
/// ```
/// use sgld::sampler::Mala;
/// use sgld::models::{Gaussian, LogisticDense};
/// let x = [0.5, 1.0, 1.5, 1.0, -0.7, 1.0, -1.2, 1.0];
/// let y = [1.0, 1.0, -1.0, -1.0];
/// let model = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0)?)?;
/// let mala = Mala::new(&model);
/// let (mut theta, mut scratch) = ([0.0f32; 2], [0.0f32; Mala::<()>::scratch_len(2)]);
/// let mut state = mala.init(&mut theta, &mut scratch)?;
/// let mut rng = sgld::noise::default_rng(1);
/// let accepted = (0..200)
///     .filter(|_| mala.step(&mut state, 0.5, &mut rng).map(|i| i.accepted).unwrap_or(false))
///     .count();
/// assert!(accepted > 100);
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Mala<'m, M> {
    model: M,
    metric: MalaMetric<'m>,
    opts: Options,
    gaussian_exact: bool,
}

common_options!(impl ['m, M] Mala<'m, M>);

/// MALA's metric `M`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum MalaMetric<'m> {
    Identity,
    Diagonal(&'m [f32]),
    /// The lower Cholesky factor `L` of the precision `P = M⁻¹ = LLᵀ`.
    Precision(&'m [f32]),
    /// The lower Cholesky factor `L` of the metric itself, `M = LLᵀ`.
    Covariance(&'m [f32]),
}

/// What one MALA step did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MalaInfo {
    /// The common step information (for the proposal).
    pub step: StepInfo,
    /// Whether the proposal was accepted.
    pub accepted: bool,
    /// The acceptance probability `min(1, …)` (0 for a non-finite proposal).
    pub accept_prob: f64,
    /// The log of the Metropolis–Hastings ratio before the `min(1, ·)` (−∞ for a
    /// non-finite proposal): far below zero (Stan's divergence threshold is −1000), it
    /// says the proposal left the region the step can follow.
    pub log_ratio: f64,
}

impl From<MalaInfo> for StepInfo {
    fn from(i: MalaInfo) -> StepInfo {
        i.step
    }
}

/// A MALA chain: θ, its log density and (clipped) gradient, and workspace.
#[derive(Debug)]
pub struct MalaState<'a> {
    theta: &'a mut [f32],
    grad: &'a mut [f32],
    prop: &'a mut [f32],
    grad_prop: &'a mut [f32],
    tmp: &'a mut [f32],
    drift: &'a mut [f32],
    work: &'a mut [f32],
    log_p: f64,
    steps: u64,
    refused: u64,
    accepted: u64,
}

impl MalaState<'_> {
    /// `log p(θ|X)` at the current θ, up to a constant.
    pub fn log_density(&self) -> f64 {
        self.log_p
    }

    /// Accepted proposals so far.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }
}

impl<M> Mala<'_, M> {
    /// `out = M·g`.
    fn apply_metric(&self, g: &[f32], out: &mut [f32]) {
        crate::kernels::copy(out, g);
        match self.metric {
            MalaMetric::Identity => {}
            MalaMetric::Diagonal(m) => {
                for (o, &mi) in out.iter_mut().zip(m) {
                    *o *= mi;
                }
            }
            MalaMetric::Precision(l) => {
                solve_lower(l, out);
                solve_lower_t(l, out);
            }
            MalaMetric::Covariance(l) => {
                lower_t_times(l, g, out);
                lower_times_in_place(l, out);
            }
        }
    }

    /// Scratch floats for dimension `dim`.
    pub const fn scratch_len(dim: usize) -> usize {
        6 * dim
    }
}

impl<'m, M: Model> Mala<'m, M> {
    /// MALA on `model`'s full data (`&M` is a model too).
    pub fn new(model: M) -> Self {
        Self {
            model,
            metric: MalaMetric::Identity,
            opts: Options::new(),
            gaussian_exact: false,
        }
    }

    /// The same sampler proposing with the noise `N(0, ε(1 − ε/4)τM)` (and the matching
    /// proposal density), which on `N(μ, τM)` is reversible by itself at any step
    /// `ε < 4` (larger steps are refused). The chain is exact either way.
    pub fn gaussian_exact(mut self) -> Self {
        self.gaussian_exact = true;
        self
    }

    /// The same sampler with the diagonal metric `M = diag(m)`: one finite, positive
    /// entry per parameter.
    pub fn with_metric(mut self, m: &'m [f32]) -> Result<Self, Error> {
        super::Metric::Diagonal(m).check(self.model.dim())?;
        self.metric = MalaMetric::Diagonal(m);
        Ok(self)
    }

    /// The same sampler with the metric `M = P⁻¹` given by the lower Cholesky factor
    /// `L` of the precision `P = LLᵀ` (row-major `d × d`, positive diagonal; the upper
    /// triangle is ignored), e.g. from [`crate::linalg::cholesky`] of the Fisher
    /// information plus the prior precision. Costs `O(d²)` per step beside the data pass.
    pub fn with_precision_factor(mut self, l: &'m [f32]) -> Result<Self, Error> {
        super::Metric::Cholesky(l).check(self.model.dim())?;
        self.metric = MalaMetric::Precision(l);
        Ok(self)
    }

    /// The same sampler with the metric `M = LLᵀ` given by its own lower Cholesky
    /// factor `L` (row-major `d × d`, positive diagonal; the upper triangle is ignored),
    /// e.g. a covariance estimated from warm-up draws. Costs `O(d²)` per step beside the
    /// data pass.
    pub fn with_covariance_factor(mut self, l: &'m [f32]) -> Result<Self, Error> {
        super::Metric::Cholesky(l).check(self.model.dim())?;
        self.metric = MalaMetric::Covariance(l);
        Ok(self)
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Starts a chain at `theta`, where the log density and its gradient must be finite.
    pub fn init<'a>(
        &self,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
    ) -> Result<MalaState<'a>, Error> {
        crate::error::check_len("theta", self.model.dim(), theta.len())?;
        match self.metric {
            MalaMetric::Identity => {}
            MalaMetric::Diagonal(m) => super::Metric::Diagonal(m).check(theta.len())?,
            MalaMetric::Precision(l) | MalaMetric::Covariance(l) => {
                super::Metric::Cholesky(l).check(theta.len())?
            }
        }
        let [grad, prop, grad_prop, tmp, drift, work] = common::carve::<6>(theta, scratch)?;
        let log_p = full_log_posterior(&self.model, theta, grad, tmp);
        if !log_p.is_finite() || !crate::kernels::all_finite(grad) {
            return Err(Error::NonFinite {
                what: "log density or its gradient at the starting point",
            });
        }
        if let Some(c) = self.opts.clip
            && common::norm(grad) > c
        {
            common::clip_to(grad, c);
        }
        Ok(MalaState {
            theta,
            grad,
            prop,
            grad_prop,
            tmp,
            drift,
            work,
            log_p,
            steps: 0,
            refused: 0,
            accepted: 0,
        })
    }

    /// One Metropolis-adjusted step with step size `eps`. Needs `τ > 0`. A proposal
    /// whose density or gradient is not finite is rejected (and counted as refused).
    pub fn step<R: Rng + ?Sized>(
        &self,
        state: &mut MalaState<'_>,
        eps: f32,
        rng: &mut R,
    ) -> Result<MalaInfo, Error> {
        crate::error::check_step_size(eps as f64)?;
        let var = common::noise_variance(eps, self.gaussian_exact)?;
        let tau = self.opts.temperature;
        if tau <= 0.0 {
            return Err(Error::InvalidParameter {
                what: "MALA needs a temperature > 0",
            });
        }
        let s = &mut *state;
        s.steps += 1;
        let h = 0.5 * eps;
        let scale = libm::sqrtf(var * tau);
        fill_normal(rng, s.prop);
        let mut info = MalaInfo {
            step: StepInfo {
                step_size: eps,
                grad_norm: common::norm(s.grad),
                noise_norm: scale * common::norm(s.prop),
                ..StepInfo::default()
            },
            ..MalaInfo::default()
        };
        // drift = M·g(θ); the noise √(sτ)·M^½·z (s = ε, or ε(1 − ε/4)), in `prop` until
        // the proposal is formed.
        self.apply_metric(s.grad, s.drift);
        match self.metric {
            MalaMetric::Identity => {}
            MalaMetric::Diagonal(m) => {
                for (p, &mi) in s.prop.iter_mut().zip(m) {
                    *p *= libm::sqrtf(mi);
                }
            }
            MalaMetric::Precision(l) => solve_lower_t(l, s.prop),
            MalaMetric::Covariance(l) => lower_times_in_place(l, s.prop),
        }
        for ((p, &t), &dr) in s.prop.iter_mut().zip(s.theta.iter()).zip(s.drift.iter()) {
            *p = t + h * dr + scale * *p;
        }
        let log_p_new = if crate::kernels::all_finite(s.prop) {
            full_log_posterior(&self.model, s.prop, s.grad_prop, s.tmp)
        } else {
            f64::NAN
        };
        if !log_p_new.is_finite() || !crate::kernels::all_finite(s.grad_prop) {
            info.step.non_finite = true;
            info.log_ratio = f64::NEG_INFINITY;
            s.refused += 1;
            return Ok(info);
        }
        if let Some(c) = self.opts.clip
            && common::norm(s.grad_prop) > c
        {
            common::clip_to(s.grad_prop, c);
            info.step.clipped = true;
        }
        // log q(to | from) = −(to − from − hM·g(from))ᵀM⁻¹(…) / (2sτ), in f64 from the
        // f32 values.
        self.apply_metric(s.grad_prop, s.work);
        let var2 = 2.0 * var as f64 * tau as f64;
        let hf = h as f64;
        let fwd_res = |i: usize| s.prop[i] as f64 - s.theta[i] as f64 - hf * s.drift[i] as f64;
        let rev_res = |i: usize| s.theta[i] as f64 - s.prop[i] as f64 - hf * s.work[i] as f64;
        let d = s.theta.len();
        let sq = |x: f64| x * x;
        let (fwd, rev) = match self.metric {
            MalaMetric::Identity => (
                (0..d).map(|i| sq(fwd_res(i))).sum::<f64>(),
                (0..d).map(|i| sq(rev_res(i))).sum::<f64>(),
            ),
            MalaMetric::Diagonal(m) => (
                (0..d).map(|i| sq(fwd_res(i)) / m[i] as f64).sum::<f64>(),
                (0..d).map(|i| sq(rev_res(i)) / m[i] as f64).sum::<f64>(),
            ),
            MalaMetric::Precision(l) => {
                // aᵀPa = ‖Lᵀa‖², row by row of Lᵀ.
                let mut f = 0.0f64;
                let mut r = 0.0f64;
                for i in 0..d {
                    let vf: f64 = (i..d).map(|k| l[k * d + i] as f64 * fwd_res(k)).sum();
                    let vr: f64 = (i..d).map(|k| l[k * d + i] as f64 * rev_res(k)).sum();
                    f += vf * vf;
                    r += vr * vr;
                }
                (f, r)
            }
            MalaMetric::Covariance(l) => {
                // aᵀM⁻¹a = ‖L⁻¹a‖²: the residual in f32, solved in place.
                let mut quad = |res: &dyn Fn(usize) -> f64| {
                    for (i, t) in s.tmp.iter_mut().enumerate() {
                        *t = res(i) as f32;
                    }
                    solve_lower(l, s.tmp);
                    s.tmp.iter().map(|&v| sq(v as f64)).sum::<f64>()
                };
                (quad(&fwd_res), quad(&rev_res))
            }
        };
        let log_a = (log_p_new - s.log_p) / tau as f64 + (fwd - rev) / var2;
        info.log_ratio = log_a;
        info.accept_prob = if log_a >= 0.0 { 1.0 } else { libm::exp(log_a) };
        if common::uniform(rng) < info.accept_prob {
            info.accepted = true;
            s.accepted += 1;
            crate::kernels::copy(s.theta, s.prop);
            crate::kernels::copy(s.grad, s.grad_prop);
            s.log_p = log_p_new;
        }
        Ok(info)
    }
}

/// `out = Lᵀg` for the lower triangle of row-major `L` (`d = g.len()`, trusted).
fn lower_t_times(l: &[f32], g: &[f32], out: &mut [f32]) {
    let d = g.len();
    out.fill(0.0);
    for (k, &gk) in g.iter().enumerate() {
        for (o, &lki) in out[..=k].iter_mut().zip(&l[k * d..k * d + k + 1]) {
            *o += lki * gk;
        }
    }
}

/// `x = Lx` in place for the lower triangle of row-major `L` (from the last row up,
/// each row reading only entries not yet overwritten).
fn lower_times_in_place(l: &[f32], x: &mut [f32]) {
    let d = x.len();
    for i in (0..d).rev() {
        x[i] = crate::kernels::imp::dot(&l[i * d..i * d + i + 1], &x[..=i]);
    }
}

chain_state!(MalaState);

/// MALA as a [`crate::sampler::Sampler`]: it ignores the estimator and the batch and
/// uses its model's full data (each step costs one full pass).
impl<M: Model> crate::sampler::Sampler for Mala<'_, M> {
    type State<'a> = MalaState<'a>;

    fn scratch_floats(&self, dim: usize) -> usize {
        Self::scratch_len(dim)
    }

    fn start<'a>(
        &self,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
    ) -> Result<MalaState<'a>, Error> {
        self.init(theta, scratch)
    }

    fn advance<E, R>(
        &self,
        state: &mut MalaState<'_>,
        _estimator: &E,
        _batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> Result<StepInfo, Error>
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized,
    {
        self.step(state, eps, rng).map(Into::into)
    }
}
