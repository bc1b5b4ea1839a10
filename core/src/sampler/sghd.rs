//! Stochastic gradient Hamiltonian dynamics (SGHD; Lasri & Chaoui, §5): a fresh
//! momentum each step, then `L` leapfrog steps on mini-batch gradients, no
//! Metropolis–Hastings correction.
//!
//! Lasri & Chaoui write `H(q, p) = −log π(q) + pᵀM p` (we read it as `½pᵀMp`), and
//! `p½ = p + (h/2)∇log π(q)`, `q' = q + hMp½`, `p' = p½ + (h/2)∇log π(q')`, with `M`
//! the covariance of a previous SGLD run. Here it runs in the velocity `u = Mp`,
//! `u ~ N(0, τM)`, with `h = √ε`: for `L = 1` the step is exactly
//! `θ + (ε/2)·M·ĝ + N(0, ετ·M)`, preconditioned SGLD in our convention. All `L`
//! leapfrog steps of one call use the same mini-batch.

use rand_core::Rng;

use super::common::{self, Options, chain_state, common_options, sampler_impl};
use super::{Metric, StepInfo};
use crate::error::Error;
use crate::gradient::GradientEstimator;
use crate::kernels::all_finite;
use crate::noise::fill_normal;

/// The SGHD sampler with metric (inverse mass) `M` and `L` leapfrog steps.
///
/// ```
/// use sgld::sampler::{Metric, Sghd};
/// use sgld::{gradient::MiniBatch, models::{Gaussian, LogisticDense}};
/// let x = [0.5, 1.0, 1.5, 1.0, -0.7, 1.0, -1.2, 1.0];
/// let y = [1.0, 1.0, -1.0, -1.0];
/// let model = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0)?)?;
/// let m = [1.0f32, 1.0];
/// let sampler = Sghd::new(Metric::Diagonal(&m), 2, 5)?;
/// let (mut theta, mut scratch) = ([0.0f32; 2], [0.0f32; Sghd::scratch_len(2)]);
/// let mut state = sampler.init(&mut theta, &mut scratch)?;
/// let mut rng = sgld::noise::default_rng(1);
/// for t in 0..100 {
///     sampler.step(&mut state, &MiniBatch::new(&model), &[t % 4], 1e-2, &mut rng)?;
/// }
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sghd<'m> {
    metric: Metric<'m>,
    leapfrog: u32,
    opts: Options,
}

common_options!(impl ['m] Sghd<'m>);

/// An SGHD chain: θ and workspace (the momentum lives only inside a step).
#[derive(Debug)]
pub struct SghdState<'a> {
    theta: &'a mut [f32],
    grad: &'a mut [f32],
    u: &'a mut [f32],
    q: &'a mut [f32],
    mg: &'a mut [f32],
    tmp: &'a mut [f32],
    steps: u64,
    refused: u64,
}

impl<'m> Sghd<'m> {
    /// SGHD in dimension `d` with metric `metric` (checked) and `leapfrog ≥ 1` steps.
    pub fn new(metric: Metric<'m>, d: usize, leapfrog: u32) -> Result<Self, Error> {
        metric.check(d)?;
        if leapfrog == 0 {
            return Err(Error::InvalidParameter {
                what: "SGHD needs at least one leapfrog step",
            });
        }
        Ok(Self {
            metric,
            leapfrog,
            opts: Options::new(),
        })
    }

    /// Leapfrog steps per call.
    pub fn leapfrog(&self) -> u32 {
        self.leapfrog
    }

    /// Scratch floats for dimension `dim`.
    pub const fn scratch_len(dim: usize) -> usize {
        5 * dim
    }

    /// Starts a chain at `theta` (of the metric's dimension).
    pub fn init<'a>(
        &self,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
    ) -> Result<SghdState<'a>, Error> {
        self.metric.check(theta.len())?;
        let [grad, u, q, mg, tmp] = common::carve::<5>(theta, scratch)?;
        Ok(SghdState {
            theta,
            grad,
            u,
            q,
            mg,
            tmp,
            steps: 0,
            refused: 0,
        })
    }

    /// One step: `u ~ N(0, τM)`, then `L` leapfrog steps of size `h = √ε` (the final
    /// half kick is skipped: the momentum is discarded). `L` gradient evaluations.
    /// Errors (state untouched) on bad input as [`crate::Sgld::step`] does; anything
    /// non-finite along the trajectory refuses the step.
    pub fn step<E, R>(
        &self,
        state: &mut SghdState<'_>,
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
        let s = &mut *state;
        s.steps += 1;
        let h = libm::sqrtf(eps);
        let scale = libm::sqrtf(self.opts.temperature);
        if scale > 0.0 {
            fill_normal(rng, s.q);
            self.metric.sqrt_times(s.q, s.u);
            for u in s.u.iter_mut() {
                *u *= scale;
            }
        } else {
            crate::kernels::zero(s.u);
        }
        let noise_norm = h * common::norm(s.u);
        crate::kernels::copy(s.q, s.theta);
        let mut info = StepInfo::default();
        for l in 0..self.leapfrog {
            let gi = common::gradient(estimator, s.q, batch, s.grad, self.opts.clip, eps);
            if l == 0 {
                info = gi;
                info.noise_norm = noise_norm;
            }
            info.clipped |= gi.clipped;
            if gi.non_finite {
                info.non_finite = true;
                break;
            }
            self.metric.apply(s.grad, s.tmp, s.mg);
            let kick = if l == 0 { 0.5 * h } else { h };
            for ((q, u), &mg) in s.q.iter_mut().zip(s.u.iter_mut()).zip(s.mg.iter()) {
                *u += kick * mg;
                *q += h * *u;
            }
            if !all_finite(s.q) {
                info.non_finite = true;
                break;
            }
        }
        if info.non_finite {
            s.refused += 1;
        } else {
            crate::kernels::copy(s.theta, s.q);
        }
        Ok(info)
    }
}

chain_state!(SghdState);
sampler_impl!(impl ['m] Sghd<'m> => SghdState,
    scratch: |_s, d| Sghd::scratch_len(d),
    grads: |s| s.leapfrog);
