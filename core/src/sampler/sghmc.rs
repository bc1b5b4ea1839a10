//! Stochastic gradient Hamiltonian Monte Carlo (SGHMC; Chen, Fox & Guestrin 2014).
//!
//! In the parametrisation of their eq. 15, with learning rate `η = ε/2` and friction
//! `α ∈ [0, 1]` per step:
//! `v' = (1−α)·v + (ε/2)·ĝ(θ) + N(0, (α − β̂)·ε·τ)`, `θ' = θ + v'`.
//! Chen et al. write `Δv = −η∇Ũ − αv + N(0, 2(α − β̂)η)`; with `η = ε/2` this is the
//! line above (`α = 1` gives SGLD exactly). The momentum in time units is `p = v/√η`,
//! so the Hamiltonian is `H = −log p(θ|X) + vᵀv/(2η)`.
//!
//! `β̂ = η·V̂/2` subtracts the mini-batch gradient noise `V̂` from the injected noise.
//! Chen et al. use `β̂ = 0` in practice, and so does this sampler by default;
//! [`Sghmc::with_noise_estimate`] estimates `V̂` per coordinate as an exponential moving
//! variance of `ĝ` along the chain (an overestimate while θ still moves far, so the
//! chain runs slightly cold then; `β̂` is capped at `α`).

use rand_core::Rng;

use super::StepInfo;
use super::common::{self, Options, chain_state, common_options, sampler_impl};
use crate::error::Error;
use crate::gradient::GradientEstimator;
use crate::kernels::imp;
use crate::noise::fill_normal;

/// The SGHMC sampler.
///
/// ```
/// use sgld::sampler::Sghmc;
/// use sgld::{gradient::MiniBatch, models::{Gaussian, LogisticDense}};
/// let x = [0.5, 1.0, 1.5, 1.0, -0.7, 1.0, -1.2, 1.0];
/// let y = [1.0, 1.0, -1.0, -1.0];
/// let model = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0)?)?;
/// let sampler = Sghmc::new(0.1)?;
/// let mut theta = [0.0f32; 2];
/// let mut scratch = vec![0.0f32; sampler.scratch_len(2)];
/// let mut state = sampler.init(&mut theta, &mut scratch)?;
/// let mut rng = sgld::noise::default_rng(1);
/// for t in 0..100 {
///     sampler.step(&mut state, &MiniBatch::new(&model), &[t % 4], 1e-3, &mut rng)?;
/// }
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sghmc {
    friction: f32,
    noise_decay: Option<f32>,
    opts: Options,
}

common_options!(impl [] Sghmc);

/// What one SGHMC step did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SghmcInfo {
    /// The common step information.
    pub step: StepInfo,
    /// Kinetic energy `v'ᵀv'/(2η)` after the step.
    pub kinetic: f64,
}

impl From<SghmcInfo> for StepInfo {
    fn from(i: SghmcInfo) -> StepInfo {
        i.step
    }
}

/// An SGHMC chain: θ, the momentum `v` (in θ units per step), the last gradient.
#[derive(Debug)]
pub struct SghmcState<'a> {
    theta: &'a mut [f32],
    grad: &'a mut [f32],
    noise: &'a mut [f32],
    v: &'a mut [f32],
    /// Moving mean and variance of ĝ (empty without the noise estimate).
    g_mean: &'a mut [f32],
    g_var: &'a mut [f32],
    steps: u64,
    refused: u64,
}

impl SghmcState<'_> {
    /// The momentum `v` (θ units per step).
    pub fn momentum(&self) -> &[f32] {
        self.v
    }

    /// The momentum, to set it (e.g. to resample it).
    pub fn momentum_mut(&mut self) -> &mut [f32] {
        self.v
    }

    /// The gradient estimate of the last step.
    pub fn grad(&self) -> &[f32] {
        self.grad
    }
}

impl Sghmc {
    /// SGHMC with per-step friction `α ∈ [0, 1]` (0: Hamiltonian dynamics, 1: SGLD).
    pub fn new(friction: f32) -> Result<Self, Error> {
        if !(0.0..=1.0).contains(&friction) {
            return Err(Error::InvalidParameter {
                what: "SGHMC friction must lie in [0, 1]",
            });
        }
        Ok(Self {
            friction,
            noise_decay: None,
            opts: Options::new(),
        })
    }

    /// The same sampler with `β̂` from a moving variance of `ĝ` with weight `κ ∈ (0, 1]`
    /// on the newest gradient.
    pub fn with_noise_estimate(mut self, kappa: f32) -> Result<Self, Error> {
        if !(kappa > 0.0 && kappa <= 1.0) {
            return Err(Error::InvalidParameter {
                what: "noise-estimate weight must lie in (0, 1]",
            });
        }
        self.noise_decay = Some(kappa);
        Ok(self)
    }

    /// The friction `α`.
    pub fn friction(&self) -> f32 {
        self.friction
    }

    /// Scratch floats for dimension `dim`.
    pub const fn scratch_len(&self, dim: usize) -> usize {
        if self.noise_decay.is_some() {
            5 * dim
        } else {
            3 * dim
        }
    }

    /// Starts a chain at `theta` with zero momentum.
    pub fn init<'a>(
        &self,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
    ) -> Result<SghmcState<'a>, Error> {
        let [grad, noise, v, g_mean, g_var] = if self.noise_decay.is_some() {
            common::carve::<5>(theta, scratch)?
        } else {
            let [a, b, c] = common::carve::<3>(theta, scratch)?;
            [a, b, c, &mut [], &mut []]
        };
        Ok(SghmcState {
            theta,
            grad,
            noise,
            v,
            g_mean,
            g_var,
            steps: 0,
            refused: 0,
        })
    }

    /// One step. Errors (state untouched) on bad input as [`crate::Sgld::step`] does; a
    /// non-finite gradient or new position refuses the step (θ and `v` kept).
    pub fn step<E, R>(
        &self,
        state: &mut SghmcState<'_>,
        estimator: &E,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> Result<SghmcInfo, Error>
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized,
    {
        common::check_step(state.theta.len(), estimator, batch, eps)?;
        let s = &mut *state;
        let first = s.steps == s.refused;
        s.steps += 1;
        let mut info = SghmcInfo {
            step: common::gradient(estimator, s.theta, batch, s.grad, self.opts.clip, eps),
            kinetic: 0.0,
        };
        if info.step.non_finite {
            s.refused += 1;
            return Ok(info);
        }
        let (eta, alpha, tau) = (0.5 * eps, self.friction, self.opts.temperature);
        let base = 2.0 * eta * tau;
        if base * alpha > 0.0 {
            fill_normal(rng, s.noise);
        } else {
            crate::kernels::zero(s.noise);
        }
        let mut noise_sq = 0.0f32;
        for i in 0..s.theta.len() {
            let g = s.grad[i];
            let beta = match self.noise_decay {
                Some(k) => {
                    let (m, var) = (&mut s.g_mean[i], &mut s.g_var[i]);
                    if first {
                        *m = g;
                        *var = 0.0;
                    } else {
                        let dlt = g - *m;
                        *m += k * dlt;
                        *var = (1.0 - k) * (*var + k * dlt * dlt);
                    }
                    (eta * *var / 2.0).min(alpha)
                }
                None => 0.0,
            };
            let n = libm::sqrtf(base * (alpha - beta)) * s.noise[i];
            noise_sq += n * n;
            // The new momentum, held in the noise buffer until accepted.
            s.noise[i] = (1.0 - alpha) * s.v[i] + eta * g + n;
        }
        info.step.noise_norm = libm::sqrtf(noise_sq);
        let ok = s
            .theta
            .iter()
            .zip(s.noise.iter())
            .all(|(&t, &v)| v.is_finite() && (t + v).is_finite());
        if ok {
            crate::kernels::copy(s.v, s.noise);
            for (t, &v) in s.theta.iter_mut().zip(s.v.iter()) {
                *t += v;
            }
        } else {
            info.step.non_finite = true;
            s.refused += 1;
        }
        info.kinetic = imp::dot(s.v, s.v) as f64 / (2.0 * eta as f64);
        Ok(info)
    }
}

chain_state!(SghmcState);
sampler_impl!(impl [] Sghmc => SghmcState,
    scratch: |s, d| s.scratch_len(d),
    grads: |_s| 1);
