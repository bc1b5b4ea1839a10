//! The stochastic gradient Nosé–Hoover thermostat (SGNHT; Ding et al. 2014,
//! Algorithm 2).
//!
//! In SGHMC units (`η = ε/2`, `v = h·p`, friction `ξ` per step, diffusion `a = A·h`):
//! `v' = (1−ξ)·v + (ε/2)·ĝ(θ) + N(0, a·ε·τ)`, `θ' = θ + v'`,
//! `ξ' = ξ + v'ᵀv'/d − (ε/2)·τ`.
//! Ding et al. write `p ← p − ξph − ∇Ũh + √(2A)N(0, h)`, `θ ← θ + ph`,
//! `ξ ← ξ + (pᵀp/n − 1)h`; multiplying by `h` with `η = h² = ε/2` gives the lines above.
//! The thermostat `ξ` adapts the friction until the kinetic energy matches the
//! temperature, absorbing unknown gradient noise.
//! The per-step friction `(1−ξ)` settles the thermostat at `ξ(2−ξ) = 2a`, slightly above
//! `a`, which leaves the θ-variances low by about `a/2` (1.3% at `a = 0.05`, measured in
//! the tests): keep `a` small.

use rand_core::Rng;

use super::StepInfo;
use super::common::{self, Options, chain_state, common_options, sampler_impl};
use crate::error::Error;
use crate::gradient::GradientEstimator;
use crate::kernels::imp;
use crate::noise::fill_normal;

/// The SGNHT sampler.
///
/// ```
/// use sgld::sampler::Sgnht;
/// use sgld::{gradient::MiniBatch, models::{Gaussian, LogisticDense}};
/// let x = [0.5, 1.0, 1.5, 1.0, -0.7, 1.0, -1.2, 1.0];
/// let y = [1.0, 1.0, -1.0, -1.0];
/// let model = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0)?)?;
/// let sampler = Sgnht::new(0.1)?;
/// let (mut theta, mut scratch) = ([0.0f32; 2], [0.0f32; Sgnht::scratch_len(2)]);
/// let mut state = sampler.init(&mut theta, &mut scratch)?;
/// let mut rng = sgld::noise::default_rng(1);
/// for t in 0..100 {
///     sampler.step(&mut state, &MiniBatch::new(&model), &[t % 4], 1e-3, &mut rng)?;
/// }
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sgnht {
    diffusion: f32,
    opts: Options,
}

common_options!(impl [] Sgnht);

/// What one SGNHT step did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SgnhtInfo {
    /// The common step information.
    pub step: StepInfo,
    /// The thermostat `ξ` after the step.
    pub xi: f64,
}

impl From<SgnhtInfo> for StepInfo {
    fn from(i: SgnhtInfo) -> StepInfo {
        i.step
    }
}

/// An SGNHT chain: θ, the momentum `v`, the thermostat `ξ`.
#[derive(Debug)]
pub struct SgnhtState<'a> {
    theta: &'a mut [f32],
    grad: &'a mut [f32],
    noise: &'a mut [f32],
    v: &'a mut [f32],
    xi: f64,
    steps: u64,
    refused: u64,
}

impl SgnhtState<'_> {
    /// The thermostat `ξ` (friction per step).
    pub fn xi(&self) -> f64 {
        self.xi
    }

    /// The momentum `v` (θ units per step).
    pub fn momentum(&self) -> &[f32] {
        self.v
    }
}

impl Sgnht {
    /// SGNHT with diffusion `a > 0` per step (also the thermostat's starting value).
    pub fn new(diffusion: f32) -> Result<Self, Error> {
        crate::error::check_positive("SGNHT diffusion must be finite and > 0", diffusion as f64)?;
        Ok(Self {
            diffusion,
            opts: Options::new(),
        })
    }

    /// Scratch floats for dimension `dim`.
    pub const fn scratch_len(dim: usize) -> usize {
        3 * dim
    }

    /// Starts a chain at `theta`, zero momentum, `ξ = a`.
    pub fn init<'a>(
        &self,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
    ) -> Result<SgnhtState<'a>, Error> {
        let [grad, noise, v] = common::carve::<3>(theta, scratch)?;
        Ok(SgnhtState {
            theta,
            grad,
            noise,
            v,
            xi: self.diffusion as f64,
            steps: 0,
            refused: 0,
        })
    }

    /// One step. Errors (state untouched) on bad input as [`crate::Sgld::step`] does; a
    /// non-finite gradient or new position refuses the step (θ, `v`, `ξ` kept).
    pub fn step<E, R>(
        &self,
        state: &mut SgnhtState<'_>,
        estimator: &E,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> Result<SgnhtInfo, Error>
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized,
    {
        common::check_step(state.theta.len(), estimator, batch, eps)?;
        let s = &mut *state;
        s.steps += 1;
        let mut info = SgnhtInfo {
            step: common::gradient(estimator, s.theta, batch, s.grad, self.opts.clip, eps),
            xi: s.xi,
        };
        if info.step.non_finite {
            s.refused += 1;
            return Ok(info);
        }
        let (eta, tau) = (0.5 * eps, self.opts.temperature);
        let scale = libm::sqrtf(self.diffusion * eps * tau);
        if scale > 0.0 {
            fill_normal(rng, s.noise);
        } else {
            crate::kernels::zero(s.noise);
        }
        info.step.noise_norm = scale * common::norm(s.noise);
        let keep = (1.0 - s.xi) as f32;
        for ((n, &v), &g) in s.noise.iter_mut().zip(s.v.iter()).zip(s.grad.iter()) {
            *n = keep * v + eta * g + scale * *n;
        }
        let ok = s
            .theta
            .iter()
            .zip(s.noise.iter())
            .all(|(&t, &v)| v.is_finite() && (t + v).is_finite());
        if !ok {
            info.step.non_finite = true;
            s.refused += 1;
            return Ok(info);
        }
        crate::kernels::copy(s.v, s.noise);
        for (t, &v) in s.theta.iter_mut().zip(s.v.iter()) {
            *t += v;
        }
        let d = s.theta.len() as f64;
        s.xi += imp::dot(s.v, s.v) as f64 / d - eta as f64 * tau as f64;
        info.xi = s.xi;
        Ok(info)
    }
}

chain_state!(SgnhtState);
sampler_impl!(impl [] Sgnht => SgnhtState,
    scratch: |_s, d| Sgnht::scratch_len(d),
    grads: |_s| 1);
