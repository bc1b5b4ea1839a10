//! Stochastic gradient Langevin dynamics (eq. 4) as `init` + `step`.
//!
//! `θₜ₊₁ = θₜ + (εₜ/2)·ĝ(θₜ) + ηₜ`, `ηₜ ~ N(0, εₜ I)`, where `ĝ` is a
//! [`GradientEstimator`] (the mini-batch estimate of eq. 4 by default). The caller owns
//! every buffer: θ and a scratch slice of [`Sgld::scratch_len`] floats, borrowed by the
//! [`SgldState`] for as long as the chain runs.
//!
//! Convention: this is Welling & Teh's `ε`; a sampler written as
//! `θ + h·∇ log p + N(0, 2h)` (BlackJAX's `step_size`) has `h = ε/2`.

use rand_core::Rng;

use crate::error::{Error, check_finite, check_len, check_step_size};
use crate::gradient::{GradientEstimator, check_batch};
use crate::kernels::{all_finite, imp};
use crate::noise::fill_normal;

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepInfo {
    /// The step size `ε` used.
    pub step_size: f32,
    /// `‖ĝ(θ)‖₂`, the norm of the gradient estimate.
    pub grad_norm: f32,
    /// `‖√ε·η‖₂`, the norm of the injected noise (0 when the step was refused before
    /// drawing it).
    pub noise_norm: f32,
    /// True when the gradient estimate or the proposed position was not finite; θ was
    /// then left unchanged, so nothing non-finite reaches the chain.
    pub non_finite: bool,
    /// True when the gradient was rescaled to the clipping norm (`grad_norm` is the norm
    /// before clipping).
    pub clipped: bool,
}

/// The state of one SGLD chain: the position θ, the last gradient estimate, and the
/// step counter, all in caller-owned memory.
#[derive(Debug)]
pub struct SgldState<'a> {
    theta: &'a mut [f32],
    grad: &'a mut [f32],
    noise: &'a mut [f32],
    steps: u64,
    refused: u64,
}

impl SgldState<'_> {
    /// The current position θ.
    pub fn theta(&self) -> &[f32] {
        self.theta
    }

    /// The gradient estimate of the last step (zeros before the first).
    pub fn grad(&self) -> &[f32] {
        self.grad
    }

    /// Number of steps taken (including refused ones).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Number of steps refused because the gradient or the proposal was not finite.
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Number of parameters.
    pub fn dim(&self) -> usize {
        self.theta.len()
    }
}

/// The SGLD sampler of eq. 4.
///
/// ```
/// use sgld::{Sgld, gradient::MiniBatch, models::{Gaussian, LogisticDense}};
/// // Four points in 2-D (second column the bias), labels ±1.
/// let x = [0.5, 1.0, 1.5, 1.0, -0.7, 1.0, -1.2, 1.0];
/// let y = [1.0, 1.0, -1.0, -1.0];
/// let model = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0)?)?;
/// let grad = MiniBatch::new(&model);
/// let mut theta = [0.0f32; 2];
/// let mut scratch = [0.0f32; Sgld::scratch_len(2)];
/// let mut state = Sgld::init(&mut theta, &mut scratch)?;
/// let mut rng = sgld::noise::default_rng(1);
/// for t in 0..100 {
///     let batch = [t % 4, (t + 1) % 4];
///     let info = Sgld::new().step(&mut state, &grad, &batch, 0.01, &mut rng)?;
///     assert!(!info.non_finite);
/// }
/// assert!(state.theta()[0] > 0.0); // larger x, label +1
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sgld {
    clip: Option<f32>,
}

impl Sgld {
    /// The plain SGLD sampler.
    pub const fn new() -> Self {
        Self { clip: None }
    }

    /// The same sampler with gradient clipping by norm: when `‖ĝ‖₂ > c` the gradient is
    /// rescaled to norm `c` before the update (Karagiannis, handout 6, Notes 37–41). The
    /// chain then targets a different distribution wherever clipping is active; use it to
    /// survive an exploding early phase, not as part of the model. `c` must be finite
    /// and positive.
    ///
    /// ```
    /// let s = sgld::Sgld::new().with_clip(10.0)?;
    /// assert_eq!(s.clip(), Some(10.0));
    /// assert!(sgld::Sgld::new().with_clip(0.0).is_err());
    /// # Ok::<(), sgld::Error>(())
    /// ```
    pub fn with_clip(self, c: f32) -> Result<Self, Error> {
        crate::error::check_positive("clipping norm must be finite and > 0", c as f64)?;
        Ok(Self { clip: Some(c) })
    }

    /// The clipping norm, if any.
    pub fn clip(&self) -> Option<f32> {
        self.clip
    }

    /// Scratch floats a chain of dimension `dim` needs: a gradient and a noise buffer.
    pub const fn scratch_len(dim: usize) -> usize {
        2 * dim
    }

    /// Starts a chain at `theta` (finite, non-empty), borrowing `scratch` of at least
    /// [`scratch_len`](Self::scratch_len)`(theta.len())` floats.
    pub fn init<'a>(theta: &'a mut [f32], scratch: &'a mut [f32]) -> Result<SgldState<'a>, Error> {
        let d = theta.len();
        if d == 0 {
            return Err(Error::Empty { what: "theta" });
        }
        check_finite("theta", theta)?;
        if scratch.len() < Self::scratch_len(d) {
            return Err(Error::LengthMismatch {
                what: "scratch",
                expected: Self::scratch_len(d),
                found: scratch.len(),
            });
        }
        let (grad, rest) = scratch.split_at_mut(d);
        let noise = &mut rest[..d];
        grad.fill(0.0);
        Ok(SgldState {
            theta,
            grad,
            noise,
            steps: 0,
            refused: 0,
        })
    }

    /// One step of eq. 4 with step size `eps` on the mini-batch `batch`.
    ///
    /// Errors (and leaves the state untouched) on a non-positive or non-finite `eps`, an
    /// empty batch, an index `≥ N`, or an estimator of another dimension. A non-finite
    /// gradient or proposal is not an error of the input: the step is refused, θ kept,
    /// and [`StepInfo::non_finite`] set.
    pub fn step<E, R>(
        &self,
        state: &mut SgldState<'_>,
        estimator: &E,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> Result<StepInfo, Error>
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized,
    {
        check_step_size(eps as f64)?;
        check_len("estimator dimension", state.dim(), estimator.dim())?;
        check_batch(batch, estimator.n_data())?;

        state.steps += 1;
        let info = self.step_buffers(
            state.theta,
            state.grad,
            state.noise,
            estimator,
            batch,
            eps,
            rng,
        );
        if info.non_finite {
            state.refused += 1;
        }
        Ok(info)
    }

    /// The body of a step on explicit buffers (lengths and inputs already checked):
    /// estimate, clip, draw noise, propose into `noise`, accept if finite.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn step_buffers<E, R>(
        &self,
        theta: &mut [f32],
        grad: &mut [f32],
        noise: &mut [f32],
        estimator: &E,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> StepInfo
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized,
    {
        estimator.estimate(theta, batch, grad);
        let norm = libm::sqrtf(imp::dot(grad, grad));
        let mut info = StepInfo {
            step_size: eps,
            grad_norm: norm,
            ..StepInfo::default()
        };
        if !all_finite(grad) {
            info.non_finite = true;
            return info;
        }
        if let Some(c) = self.clip
            && norm > c
        {
            // ‖g‖ may be +∞ for finite entries whose squares overflow: scale in two steps.
            let max = grad.iter().fold(0.0f32, |m, g| m.max(g.abs()));
            let scaled_norm =
                max * libm::sqrtf(grad.iter().map(|g| (g / max) * (g / max)).sum::<f32>());
            let f = c / scaled_norm;
            for g in grad.iter_mut() {
                *g *= f;
            }
            info.clipped = true;
        }
        let sqrt_eps = libm::sqrtf(eps);
        fill_normal(rng, noise);
        info.noise_norm = sqrt_eps * libm::sqrtf(imp::dot(noise, noise));
        imp::langevin_propose(theta, grad, noise, 0.5 * eps, sqrt_eps);
        if all_finite(noise) {
            theta.copy_from_slice(noise);
        } else {
            info.non_finite = true;
        }
        info
    }
}
