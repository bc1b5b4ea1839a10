//! What the samplers share: options (clipping, temperature), the chain's core buffers,
//! the gradient-and-clip step, and the [`Sampler`] trait.

use rand_core::Rng;

use super::StepInfo;
use crate::error::{Error, check_finite, check_len};
use crate::gradient::GradientEstimator;
use crate::kernels::{all_finite, imp};

/// Clipping norm and temperature, common to every sampler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Options {
    pub(crate) clip: Option<f32>,
    pub(crate) temperature: f32,
}

impl Options {
    pub(crate) const fn new() -> Self {
        Self {
            clip: None,
            temperature: 1.0,
        }
    }

    pub(crate) fn with_clip(mut self, c: f32) -> Result<Self, Error> {
        crate::error::check_positive("clipping norm must be finite and > 0", c as f64)?;
        self.clip = Some(c);
        Ok(self)
    }

    pub(crate) fn with_temperature(mut self, tau: f32) -> Result<Self, Error> {
        if !(tau.is_finite() && tau >= 0.0) {
            return Err(Error::InvalidParameter {
                what: "temperature must be finite and >= 0",
            });
        }
        self.temperature = tau;
        Ok(self)
    }
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

/// Adds `with_clip`, `with_temperature`, `clip` and `temperature` to a sampler type
/// with an `opts: Options` field.
macro_rules! common_options {
    (impl [$($gen:tt)*] $t:ty) => {
        impl<$($gen)*> $t {
            /// The same sampler with gradient clipping by norm: when `‖ĝ‖₂ > c` the
            /// gradient is rescaled to norm `c` (handout 6, Notes 37–41). Wherever
            /// clipping is active the chain targets another distribution; use it to
            /// survive an exploding early phase. `c` must be finite and positive.
            pub fn with_clip(mut self, c: f32) -> Result<Self, $crate::Error> {
                self.opts = self.opts.with_clip(c)?;
                Ok(self)
            }

            /// The same sampler at temperature `τ` (handout 6, Algorithm 21): injected
            /// noise `N(0, ετ)` in place of `N(0, ε)`, so the chain targets
            /// `p(θ|X)^{1/τ}`; `τ = 0` injects none (the optimiser). `τ` must be finite
            /// and `≥ 0`.
            pub fn with_temperature(mut self, tau: f32) -> Result<Self, $crate::Error> {
                self.opts = self.opts.with_temperature(tau)?;
                Ok(self)
            }

            /// The clipping norm, if any.
            pub fn clip(&self) -> Option<f32> {
                self.opts.clip
            }

            /// The temperature `τ` (1 unless set).
            pub fn temperature(&self) -> f32 {
                self.opts.temperature
            }
        }
    };
}
pub(crate) use common_options;

/// The injected noise's variance in units of `τM` at step `eps`: `ε` (the Euler step),
/// or `ε(1 − ε/4)` when `gaussian_exact`, which needs `ε < 4`.
///
/// On `N(μ, τM)` the step `θ' = θ + (ε/2)M∇log p + N(0, sτM)` is the autoregression
/// `θ' − μ = (1 − ε/2)(θ − μ) + N(0, sτM)`, whose stationary covariance is
/// `sτM / (ε − ε²/4)`: the Euler step's `s = ε` inflates it by `1/(1 − ε/4)`, and
/// `s = ε(1 − ε/4)` makes it `τM` exactly, at any `ε < 4` (for `ε < 2` the exact
/// Ornstein–Uhlenbeck flow of the Gaussian over time `−2 ln(1 − ε/2)`; beyond, an
/// autoregression with a negative coefficient and the same stationary law).
pub(crate) fn noise_variance(eps: f32, gaussian_exact: bool) -> Result<f32, Error> {
    if !gaussian_exact {
        return Ok(eps);
    }
    if eps >= 4.0 {
        return Err(Error::InvalidParameter {
            what: "a Gaussian-exact step needs a step size below 4",
        });
    }
    Ok(eps * (1.0 - 0.25 * eps))
}

/// Read access to a running chain, whatever its sampler.
pub trait ChainState {
    /// The current position θ.
    fn theta(&self) -> &[f32];
    /// Steps taken, refused ones included.
    fn steps(&self) -> u64;
    /// Steps refused because something was not finite (θ was kept).
    fn refused(&self) -> u64;
    /// Number of parameters.
    fn dim(&self) -> usize {
        self.theta().len()
    }
}

/// A sampler as a driver loop sees it: scratch size, start, one step.
///
/// Each sampler also has inherent `init`/`step` methods returning its own richer
/// `Info`; this trait returns the common [`StepInfo`].
pub trait Sampler {
    /// The state of one chain, borrowing θ and the scratch.
    type State<'a>: ChainState;

    /// Scratch floats a chain of dimension `dim` needs.
    fn scratch_floats(&self, dim: usize) -> usize;

    /// Starts a chain at `theta` with `scratch` of at least
    /// [`scratch_floats`](Self::scratch_floats)`(theta.len())` floats.
    fn start<'a>(
        &self,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
    ) -> Result<Self::State<'a>, Error>;

    /// One step with step size `eps` on the mini-batch `batch`.
    fn advance<E, R>(
        &self,
        state: &mut Self::State<'_>,
        estimator: &E,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> Result<StepInfo, Error>
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized;

    /// Gradient evaluations (mini-batch estimates) one step costs.
    fn grads_per_step(&self) -> u32 {
        1
    }
}

/// Checks `theta` (non-empty, finite) and carves `k` slices of `d` floats out of
/// `scratch`, zeroed.
pub(crate) fn carve<'a, const K: usize>(
    theta: &[f32],
    scratch: &'a mut [f32],
) -> Result<[&'a mut [f32]; K], Error> {
    let d = theta.len();
    if d == 0 {
        return Err(Error::Empty { what: "theta" });
    }
    check_finite("theta", theta)?;
    let need = d.checked_mul(K).ok_or(Error::InvalidParameter {
        what: "dimension overflows usize",
    })?;
    if scratch.len() < need {
        return Err(Error::LengthMismatch {
            what: "scratch",
            expected: need,
            found: scratch.len(),
        });
    }
    let mut rest = &mut scratch[..need];
    rest.fill(0.0);
    Ok(core::array::from_fn(|_| {
        let (head, tail) = core::mem::take(&mut rest).split_at_mut(d);
        rest = tail;
        head
    }))
}

/// The input checks every `step` makes before touching the state.
pub(crate) fn check_step(
    dim: usize,
    estimator: &(impl GradientEstimator + ?Sized),
    batch: &[usize],
    eps: f32,
) -> Result<(), Error> {
    crate::error::check_step_size_f32(eps)?;
    check_len("estimator dimension", dim, estimator.dim())?;
    crate::gradient::check_batch(batch, estimator.n_data())
}

/// Writes `ĝ(θ)` into `grad`, clips it, and starts the step's [`StepInfo`]; `non_finite`
/// is set when the estimate is not finite (then the step must be refused).
#[inline(always)]
pub(crate) fn gradient<E: GradientEstimator + ?Sized>(
    estimator: &E,
    theta: &[f32],
    batch: &[usize],
    grad: &mut [f32],
    clip: Option<f32>,
    eps: f32,
) -> StepInfo {
    estimator.estimate(theta, batch, grad);
    let norm = crate::math::sqrt(imp::dot(grad, grad));
    let mut info = StepInfo {
        step_size: eps,
        grad_norm: norm,
        ..StepInfo::default()
    };
    // A finite norm means every element is finite (a NaN or ∞ would reach the sum), so
    // only an infinite or NaN norm needs the element check (‖g‖² may just overflow).
    if !norm.is_finite() && !all_finite(grad) {
        info.non_finite = true;
        return info;
    }
    if let Some(c) = clip
        && norm > c
    {
        clip_to(grad, c);
        info.clipped = true;
    }
    info
}

/// Rescales a finite, non-zero `grad` to norm `c` (safe when `‖g‖²` overflows f32).
pub(crate) fn clip_to(grad: &mut [f32], c: f32) {
    let max = grad.iter().fold(0.0f32, |m, g| m.max(g.abs()));
    if max == 0.0 {
        return;
    }
    let scaled_norm = max * libm::sqrtf(grad.iter().map(|g| (g / max) * (g / max)).sum::<f32>());
    let f = c / scaled_norm;
    for g in grad.iter_mut() {
        *g *= f;
    }
}

pub(crate) use crate::noise::uniform;

/// `‖x‖₂` of a slice.
pub(crate) fn norm(x: &[f32]) -> f32 {
    libm::sqrtf(imp::dot(x, x))
}

/// Implements [`ChainState`] for a state struct with `theta`, `steps` and `refused`
/// fields.
macro_rules! chain_state {
    ($s:ident) => {
        impl $crate::sampler::ChainState for $s<'_> {
            fn theta(&self) -> &[f32] {
                self.theta
            }
            fn steps(&self) -> u64 {
                self.steps
            }
            fn refused(&self) -> u64 {
                self.refused
            }
        }
    };
}
pub(crate) use chain_state;

/// Implements [`Sampler`] by delegating to the inherent `init` and `step` (whose info
/// converts into [`StepInfo`]).
macro_rules! sampler_impl {
    (impl [$($gen:tt)*] $t:ty => $state:ident,
     scratch: |$sf:ident, $d:ident| $scratch:expr,
     grads: |$sg:ident| $grads:expr) => {
        impl<$($gen)*> $crate::sampler::Sampler for $t {
            type State<'a> = $state<'a>;

            fn scratch_floats(&self, $d: usize) -> usize {
                let $sf = self;
                $scratch
            }

            fn start<'a>(
                &self,
                theta: &'a mut [f32],
                scratch: &'a mut [f32],
            ) -> Result<$state<'a>, $crate::Error> {
                self.init(theta, scratch)
            }

            fn advance<E, R>(
                &self,
                state: &mut $state<'_>,
                estimator: &E,
                batch: &[usize],
                eps: f32,
                rng: &mut R,
            ) -> Result<$crate::sampler::StepInfo, $crate::Error>
            where
                E: $crate::gradient::GradientEstimator + ?Sized,
                R: rand_core::Rng + ?Sized,
            {
                self.step(state, estimator, batch, eps, rng).map(Into::into)
            }

            fn grads_per_step(&self) -> u32 {
                let $sg = self;
                $grads
            }
        }
    };
}
pub(crate) use sampler_impl;
