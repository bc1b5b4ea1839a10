//! SGLD preconditioned by a fixed matrix `M` (eq. 9; handout 6, eq. 3.9).
//!
//! `θ' = θ + (ε/2)·M·ĝ(θ) + N(0, ετ·M)`. The handout writes
//! `w + η·P·∇ + √(2ητ)·P^½·ε` — the same with `η = ε/2`, `P = M`.
//!
//! [`PrecondSgld::gaussian_exact`] injects `N(0, ε(1 − ε/4)τM)` instead: with `M` the
//! posterior covariance (the Laplace approximation's, or the warm-up draws') the step
//! is then exact on a Gaussian posterior, where the Euler step's variance is
//! `1/(1 − ε/4)` too wide; what remains is the mini-batch noise and the posterior's
//! departure from that Gaussian.

use rand_core::Rng;

use super::common::{self, Options, chain_state, common_options, sampler_impl};
use super::{Metric, StepInfo};
use crate::error::Error;
use crate::gradient::GradientEstimator;
use crate::kernels::all_finite;
use crate::noise::fill_normal;

/// Preconditioned SGLD with a fixed metric.
///
/// ```
/// use sgld::sampler::{Metric, PrecondSgld};
/// use sgld::{gradient::MiniBatch, models::{Gaussian, LogisticDense}};
/// let x = [0.5, 1.0, 1.5, 1.0, -0.7, 1.0, -1.2, 1.0];
/// let y = [1.0, 1.0, -1.0, -1.0];
/// let model = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0)?)?;
/// let m = [2.0f32, 0.5];
/// let sampler = PrecondSgld::new(Metric::Diagonal(&m), 2)?;
/// let (mut theta, mut scratch) = ([0.0f32; 2], [0.0f32; PrecondSgld::scratch_len(2)]);
/// let mut state = sampler.init(&mut theta, &mut scratch)?;
/// let mut rng = sgld::noise::default_rng(1);
/// for t in 0..100 {
///     sampler.step(&mut state, &MiniBatch::new(&model), &[t % 4], 0.01, &mut rng)?;
/// }
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrecondSgld<'m> {
    metric: Metric<'m>,
    opts: Options,
    gaussian_exact: bool,
}

common_options!(impl ['m] PrecondSgld<'m>);

/// A preconditioned-SGLD chain: θ, the last gradient, and workspace.
#[derive(Debug)]
pub struct PrecondState<'a> {
    theta: &'a mut [f32],
    grad: &'a mut [f32],
    noise: &'a mut [f32],
    drift: &'a mut [f32],
    prop: &'a mut [f32],
    steps: u64,
    refused: u64,
}

impl PrecondState<'_> {
    /// The gradient estimate of the last step.
    pub fn grad(&self) -> &[f32] {
        self.grad
    }
}

impl<'m> PrecondSgld<'m> {
    /// A sampler for dimension `d` with metric `metric` (checked).
    pub fn new(metric: Metric<'m>, d: usize) -> Result<Self, Error> {
        metric.check(d)?;
        Ok(Self {
            metric,
            opts: Options::new(),
            gaussian_exact: false,
        })
    }

    /// The same sampler with the noise `N(0, ε(1 − ε/4)τM)`, whose stationary law on
    /// `N(μ, τM)` is that Gaussian at any step `ε < 4` (larger steps are refused).
    ///
    /// ```
    /// use sgld::sampler::{Metric, PrecondSgld};
    /// let m = [2.0f32, 0.5];
    /// let s = PrecondSgld::new(Metric::Diagonal(&m), 2)?.gaussian_exact();
    /// assert!(s.is_gaussian_exact());
    /// # Ok::<(), sgld::Error>(())
    /// ```
    pub fn gaussian_exact(mut self) -> Self {
        self.gaussian_exact = true;
        self
    }

    /// Whether the noise is [`gaussian_exact`](Self::gaussian_exact).
    pub fn is_gaussian_exact(&self) -> bool {
        self.gaussian_exact
    }

    /// The metric.
    pub fn metric(&self) -> Metric<'m> {
        self.metric
    }

    /// Scratch floats for dimension `dim`.
    pub const fn scratch_len(dim: usize) -> usize {
        4 * dim
    }

    /// Starts a chain at `theta` (of the metric's dimension).
    pub fn init<'a>(
        &self,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
    ) -> Result<PrecondState<'a>, Error> {
        self.metric.check(theta.len())?;
        let [grad, noise, drift, prop] = common::carve::<4>(theta, scratch)?;
        Ok(PrecondState {
            theta,
            grad,
            noise,
            drift,
            prop,
            steps: 0,
            refused: 0,
        })
    }

    /// One step. Errors (state untouched) on bad input as [`crate::Sgld::step`] does, and
    /// on `ε ≥ 4` when [`gaussian_exact`](Self::gaussian_exact); a non-finite gradient or
    /// proposal refuses the step.
    pub fn step<E, R>(
        &self,
        state: &mut PrecondState<'_>,
        estimator: &E,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> Result<StepInfo, Error>
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized,
    {
        common::check_step(state.theta.len(), estimator, batch, eps)?;
        let var = common::noise_variance(eps, self.gaussian_exact)?;
        state.steps += 1;
        let s = &mut *state;
        let mut info = common::gradient(estimator, s.theta, batch, s.grad, self.opts.clip, eps);
        if !info.non_finite {
            self.metric.apply(s.grad, s.prop, s.drift);
            let scale = libm::sqrtf(var * self.opts.temperature);
            if scale > 0.0 {
                fill_normal(rng, s.noise);
                self.metric.sqrt_times(s.noise, s.prop);
            } else {
                crate::kernels::zero(s.prop);
            }
            info.noise_norm = scale * common::norm(s.prop);
            let h = 0.5 * eps;
            for ((p, &t), &dr) in s.prop.iter_mut().zip(s.theta.iter()).zip(s.drift.iter()) {
                *p = t + h * dr + scale * *p;
            }
            if all_finite(s.prop) {
                crate::kernels::copy(s.theta, s.prop);
            } else {
                info.non_finite = true;
            }
        }
        if info.non_finite {
            s.refused += 1;
        }
        Ok(info)
    }
}

chain_state!(PrecondState);
sampler_impl!(impl ['m] PrecondSgld<'m> => PrecondState,
    scratch: |_s, d| PrecondSgld::scratch_len(d),
    grads: |_s| 1);
