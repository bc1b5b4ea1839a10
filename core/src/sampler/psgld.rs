//! Preconditioned SGLD with an RMSprop preconditioner (pSGLD; Li, Chen, Carlson & Carin
//! 2016, Algorithm 1).
//!
//! `V ← αV + (1−α)·(ĝ/N)⊙(ĝ/N)`, `G = 1/(λ + √V)`,
//! `θ' = θ + (ε/2)·(G⊙ĝ + Γ) + N(0, ετ·G)`.
//! Li et al. write `θ + (ε/2)(G·ĝ + Γ) + N(0, εG)` — already our convention — with `V`
//! the average of the squared per-datum mean gradient `ḡ = ĝ/N` (up to the prior term),
//! as here, so their `λ` and step sizes carry over. `G` is then of order `N/|ĝ|`; a
//! coordinate whose gradient is always 0 (a feature absent from the data) gets `G = 1/λ`,
//! so on sparse data choose `λ` near the typical `|ĝ|/N` rather than 10⁻⁵.
//!
//! **The Γ term.** `Γᵢ = ∂Gᵢ/∂θᵢ` corrects for the preconditioner's dependence on θ.
//! Like SGMCMCJax (and Li et al.'s experiments) it is **off by default**: the chain then
//! samples a slightly different distribution, with a bias that vanishes as `α → 1`
//! (the preconditioner then barely moves while the chain mixes) and as `ε → 0`
//! (Li et al., Theorem 2: the bias is `O(ε)` plus a term in `(1−α)/ε`-weighted
//! changes of `G`). With [`Psgld::with_gamma_correction`] it is estimated by the
//! secant `(Gᵢ − Gᵢ⁻)/(θᵢ − θᵢ⁻)` along the chain (0 where θᵢ did not move); that
//! estimate is noisy, since `G` is a function of the chain's history rather than of θ.

use rand_core::Rng;

use super::StepInfo;
use super::common::{self, Options, chain_state, common_options, sampler_impl};
use crate::error::Error;
use crate::gradient::GradientEstimator;
use crate::kernels::all_finite;
use crate::noise::fill_normal;

/// The pSGLD sampler.
///
/// ```
/// use sgld::sampler::Psgld;
/// use sgld::{gradient::MiniBatch, models::{Gaussian, LogisticDense}};
/// let x = [0.5, 1.0, 1.5, 1.0, -0.7, 1.0, -1.2, 1.0];
/// let y = [1.0, 1.0, -1.0, -1.0];
/// let model = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0)?)?;
/// let sampler = Psgld::new(0.99, 1e-5)?;
/// let (mut theta, mut scratch) = ([0.0f32; 2], [0.0f32; Psgld::scratch_len(2)]);
/// let mut state = sampler.init(&mut theta, &mut scratch)?;
/// let mut rng = sgld::noise::default_rng(1);
/// for t in 0..100 {
///     let info = sampler.step(&mut state, &MiniBatch::new(&model), &[t % 4], 1e-3, &mut rng)?;
///     assert!(info.mean_precond > 0.0);
/// }
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Psgld {
    decay: f32,
    lambda: f32,
    gamma: bool,
    opts: Options,
}

common_options!(impl [] Psgld);

/// What one pSGLD step did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PsgldInfo {
    /// The common step information.
    pub step: StepInfo,
    /// The mean of the diagonal preconditioner `G` after the update.
    pub mean_precond: f32,
}

impl From<PsgldInfo> for StepInfo {
    fn from(i: PsgldInfo) -> StepInfo {
        i.step
    }
}

/// A pSGLD chain: θ, the last gradient, the second-moment average `V`, and (for the Γ
/// term) the previous `G` and θ.
#[derive(Debug)]
pub struct PsgldState<'a> {
    theta: &'a mut [f32],
    grad: &'a mut [f32],
    noise: &'a mut [f32],
    v: &'a mut [f32],
    g_prev: &'a mut [f32],
    theta_prev: &'a mut [f32],
    steps: u64,
    refused: u64,
}

impl PsgldState<'_> {
    /// The gradient estimate of the last step.
    pub fn grad(&self) -> &[f32] {
        self.grad
    }

    /// The running average `V` of the squared gradients.
    pub fn second_moments(&self) -> &[f32] {
        self.v
    }
}

impl Psgld {
    /// pSGLD with decay `α ∈ (0, 1)` (Li et al. use 0.99) and diagonal bias `λ > 0`
    /// (they use 10⁻⁵).
    pub fn new(decay: f32, lambda: f32) -> Result<Self, Error> {
        if !(decay > 0.0 && decay < 1.0) {
            return Err(Error::InvalidParameter {
                what: "pSGLD decay must lie in (0, 1)",
            });
        }
        crate::error::check_positive("pSGLD lambda must be finite and > 0", lambda as f64)?;
        Ok(Self {
            decay,
            lambda,
            gamma: false,
            opts: Options::new(),
        })
    }

    /// The same sampler with the secant estimate of the Γ term (see the module docs).
    pub fn with_gamma_correction(mut self, on: bool) -> Self {
        self.gamma = on;
        self
    }

    /// Scratch floats for dimension `dim`.
    pub const fn scratch_len(dim: usize) -> usize {
        5 * dim
    }

    /// Starts a chain at `theta`; `V` is initialised from the first gradient.
    pub fn init<'a>(
        &self,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
    ) -> Result<PsgldState<'a>, Error> {
        let [grad, noise, v, g_prev, theta_prev] = common::carve::<5>(theta, scratch)?;
        Ok(PsgldState {
            theta,
            grad,
            noise,
            v,
            g_prev,
            theta_prev,
            steps: 0,
            refused: 0,
        })
    }

    /// One step. Errors (state untouched) on bad input as [`crate::Sgld::step`] does; a
    /// non-finite gradient or proposal refuses the step (`V` keeps a finite update).
    pub fn step<E, R>(
        &self,
        state: &mut PsgldState<'_>,
        estimator: &E,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> Result<PsgldInfo, Error>
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized,
    {
        common::check_step(state.theta.len(), estimator, batch, eps)?;
        let s = &mut *state;
        let first = s.steps == s.refused;
        s.steps += 1;
        let mut info = PsgldInfo {
            step: common::gradient(estimator, s.theta, batch, s.grad, self.opts.clip, eps),
            mean_precond: 0.0,
        };
        if info.step.non_finite {
            s.refused += 1;
            return Ok(info);
        }
        let (a, lambda) = (self.decay, self.lambda);
        // Li et al. average the squares of the per-datum mean gradient ĝ/N.
        let inv_n = 1.0 / estimator.n_data().max(1) as f32;
        for (v, &g) in s.v.iter_mut().zip(s.grad.iter()) {
            let g = g * inv_n;
            *v = if first {
                g * g
            } else {
                a * *v + (1.0 - a) * g * g
            };
        }
        let scale = libm::sqrtf(eps * self.opts.temperature);
        if scale > 0.0 {
            fill_normal(rng, s.noise);
        } else {
            crate::kernels::zero(s.noise);
        }
        let h = 0.5 * eps;
        let use_gamma = self.gamma && !first;
        let (mut g_sum, mut noise_sq) = (0.0f32, 0.0f32);
        for i in 0..s.theta.len() {
            let g_i = 1.0 / (lambda + libm::sqrtf(s.v[i]));
            let mut gamma = 0.0;
            if use_gamma {
                let dt = s.theta[i] - s.theta_prev[i];
                let q = (g_i - s.g_prev[i]) / dt;
                if dt != 0.0 && q.is_finite() {
                    gamma = q;
                }
            }
            if self.gamma {
                s.g_prev[i] = g_i;
            }
            let n = scale * libm::sqrtf(g_i) * s.noise[i];
            noise_sq += n * n;
            g_sum += g_i;
            s.noise[i] = s.theta[i] + h * (g_i * s.grad[i] + gamma) + n;
        }
        info.step.noise_norm = libm::sqrtf(noise_sq);
        info.mean_precond = g_sum / s.theta.len() as f32;
        if all_finite(s.noise) {
            if self.gamma {
                crate::kernels::copy(s.theta_prev, s.theta);
            }
            crate::kernels::copy(s.theta, s.noise);
        } else {
            info.step.non_finite = true;
            s.refused += 1;
        }
        Ok(info)
    }
}

chain_state!(PsgldState);
sampler_impl!(impl [] Psgld => PsgldState,
    scratch: |_s, d| Psgld::scratch_len(d),
    grads: |_s| 1);
