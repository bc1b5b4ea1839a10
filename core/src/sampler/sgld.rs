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

use super::common::{self, Options, Sampler, chain_state, common_options};
use crate::error::{Error, check_finite};
use crate::gradient::GradientEstimator;
use crate::kernels::imp;
use crate::noise::fill_normal;

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepInfo {
    /// The step size `ε` used.
    pub step_size: f32,
    /// `‖ĝ(θ)‖₂`, the norm of the gradient estimate (NaN from a sampler built
    /// [`without_norms`](Sgld::without_norms), unless it clips).
    pub grad_norm: f32,
    /// `‖√ε·η‖₂`, the norm of the injected noise (0 when a clipping chain refused a
    /// non-finite gradient before drawing it; NaN without norms).
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
    pool: NormalPool,
    steps: u64,
    refused: u64,
}

/// Normals per pool: one vector block of the noise kernel.
const POOL: usize = 32;

/// Normals drawn a block at a time for a chain of fewer than [`POOL`] parameters.
///
/// Drawing two normals costs the latency of a whole vector block (~45 ns of dependent
/// arithmetic); drawing a block of 32 and handing them out over the next steps costs
/// ~1 ns a normal. Every normal is used once, so the noise is the same i.i.d. N(0, 1).
/// Larger chains draw their noise directly. 128 bytes in the state, no scratch.
#[derive(Debug, Clone)]
struct NormalPool {
    buf: [f32; POOL],
    /// Normals of `buf` already handed out.
    used: usize,
}

impl NormalPool {
    const fn new() -> Self {
        Self {
            buf: [0.0; POOL],
            used: POOL,
        }
    }

    /// Fills `out` with standard normals: from the pool (refilled when it runs out) for
    /// short `out`, straight from the generator otherwise.
    #[inline(always)]
    fn fill<R: Rng + ?Sized>(&mut self, rng: &mut R, out: &mut [f32]) {
        if out.len() >= POOL {
            fill_normal(rng, out);
            return;
        }
        let mut out = out;
        while !out.is_empty() {
            if self.used == POOL {
                // In the pairwise order of a short fill, so the pool's first d normals
                // are exactly what fill_normal(rng, d) would have drawn.
                crate::noise::fill_block_pairwise(rng, &mut self.buf);
                self.used = 0;
            }
            let k = out.len().min(POOL - self.used);
            let (head, rest) = out.split_at_mut(k);
            crate::kernels::copy(head, &self.buf[self.used..self.used + k]);
            self.used += k;
            out = rest;
        }
    }
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
/// let mut sum = 0.0;
/// for t in 0..4000 {
///     let batch = [t % 4, (t + 1) % 4];
///     let info = Sgld::new().step(&mut state, &grad, &batch, 0.01, &mut rng)?;
///     assert!(!info.non_finite);
///     if t >= 1000 {
///         sum += state.theta()[0];
///     }
/// }
/// assert!(sum / 3000.0 > 0.0); // posterior mean: larger x, label +1
/// # Ok::<(), sgld::Error>(())
/// ```
///
/// Clipping and temperature are options (`τ = 0` is SGD):
///
/// ```
/// let s = sgld::Sgld::new().with_clip(10.0)?.with_temperature(0.5)?;
/// assert_eq!((s.clip(), s.temperature()), (Some(10.0), 0.5));
/// assert!(sgld::Sgld::new().with_clip(0.0).is_err());
/// assert!(sgld::Sgld::new().with_temperature(-1.0).is_err());
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sgld {
    opts: Options,
    /// Whether the steps skip the norms of [`StepInfo`].
    skip_norms: bool,
}

common_options!(impl [] Sgld);

impl Sgld {
    /// The plain SGLD sampler (no clipping, `τ = 1`).
    pub const fn new() -> Self {
        Self {
            opts: Options::new(),
            skip_norms: false,
        }
    }

    /// The same sampler without the step's norms: [`StepInfo::grad_norm`] and
    /// [`StepInfo::noise_norm`] are NaN (unless clipping measures the gradient's), and
    /// the step saves their two sums of squares, a tenth of a step's work on a core
    /// without an FPU. The finiteness check stays.
    ///
    /// ```
    /// let s = sgld::Sgld::new().without_norms();
    /// assert!(!s.norms());
    /// ```
    pub const fn without_norms(mut self) -> Self {
        self.skip_norms = true;
        self
    }

    /// Whether the steps report the norms (true unless [`without_norms`](Self::without_norms)).
    pub const fn norms(&self) -> bool {
        !self.skip_norms
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
            pool: NormalPool::new(),
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
    #[inline]
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
        common::check_step(state.dim(), estimator, batch, eps)?;
        Ok(self.step_unchecked_batch(state, estimator, batch, eps, rng))
    }

    /// [`step`](Self::step) on a batch that [`sample_batch`](crate::gradient::sample_batch)
    /// has just drawn for `estimator` (so not empty, every index below `N`), which it
    /// does not check again; `eps` and the dimension are checked by the caller.
    #[inline]
    pub(crate) fn step_unchecked_batch<E, R>(
        &self,
        state: &mut SgldState<'_>,
        estimator: &E,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> StepInfo
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized,
    {
        state.steps += 1;
        let info = self.step_buffers(
            state.theta,
            state.grad,
            state.noise,
            &mut state.pool,
            estimator,
            batch,
            eps,
            rng,
        );
        if info.non_finite {
            state.refused += 1;
        }
        info
    }

    /// The body of a step on explicit buffers (lengths and inputs already checked):
    /// estimate (and clip), draw noise `N(0, ετ)`, step θ in place keeping the old θ in
    /// `noise`, and take the step back unless the new θ is finite.
    ///
    /// Without clipping, the gradient's norm and finiteness come from the step's own
    /// pass: a non-finite gradient makes a non-finite θ (`h > 0`), so it is refused
    /// there. With clipping, the norm is needed first, and a non-finite gradient is
    /// refused before any noise is drawn.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn step_buffers<E, R>(
        &self,
        theta: &mut [f32],
        grad: &mut [f32],
        noise: &mut [f32],
        pool: &mut NormalPool,
        estimator: &E,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> StepInfo
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized,
    {
        let clip = self.opts.clip;
        let scale = crate::math::sqrt(eps * self.opts.temperature);
        let mut draw = || {
            if scale > 0.0 {
                pool.fill(rng, noise);
            } else {
                crate::kernels::zero(noise);
            }
        };
        let mut info = match clip {
            Some(_) => {
                let info = common::gradient(estimator, theta, batch, grad, clip, eps);
                if info.non_finite {
                    return info;
                }
                draw();
                info
            }
            None => {
                // The noise is drawn inside the estimate, where the estimate waits on
                // its own results (it does not depend on them).
                estimator.estimate_overlapped(theta, batch, grad, &mut draw);
                StepInfo {
                    step_size: eps,
                    ..StepInfo::default()
                }
            }
        };
        let finite = if self.skip_norms {
            if clip.is_none() {
                info.grad_norm = f32::NAN;
            }
            info.noise_norm = f32::NAN;
            crate::kernels::reference::langevin_step_finite(theta, grad, noise, 0.5 * eps, scale)
        } else {
            let check = imp::langevin_step_checked(theta, grad, noise, 0.5 * eps, scale);
            if clip.is_none() {
                info.grad_norm = crate::math::sqrt(check.grad_sq);
            }
            info.noise_norm = scale * crate::math::sqrt(check.noise_sq);
            check.finite
        };
        if !finite {
            crate::kernels::copy(theta, noise);
            info.non_finite = true;
        }
        info
    }
}

chain_state!(SgldState);

impl Sampler for Sgld {
    type State<'a> = SgldState<'a>;

    fn scratch_floats(&self, dim: usize) -> usize {
        Self::scratch_len(dim)
    }

    fn start<'a>(
        &self,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
    ) -> Result<SgldState<'a>, Error> {
        Self::init(theta, scratch)
    }

    fn advance<E, R>(
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
        self.step(state, estimator, batch, eps, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same gradient `g` everywhere, on three parameters.
    struct Fixed(f32);

    impl GradientEstimator for Fixed {
        fn dim(&self) -> usize {
            3
        }
        fn n_data(&self) -> usize {
            1
        }
        fn estimate(&self, _: &[f32], _: &[usize], grad: &mut [f32]) {
            grad.fill(self.0);
        }
    }

    /// Without norms the chain moves as with them (to rounding: the checked kernel may
    /// fuse its multiply-adds), reports NaN norms, and still refuses a non-finite step.
    #[test]
    fn without_norms_the_chain_is_the_same_and_still_checked() {
        let (with, without) = (Sgld::new(), Sgld::new().without_norms());
        let (mut ta, mut tb) = ([0.5f32, -1.0, 2.0], [0.5f32, -1.0, 2.0]);
        let (mut sa, mut sb) = ([0.0f32; 6], [0.0f32; 6]);
        let mut a = Sgld::init(&mut ta, &mut sa).unwrap();
        let mut b = Sgld::init(&mut tb, &mut sb).unwrap();
        let (mut ra, mut rb) = (crate::noise::default_rng(9), crate::noise::default_rng(9));
        for _ in 0..50 {
            let ia = with
                .step(&mut a, &Fixed(-0.3), &[0], 1e-2, &mut ra)
                .unwrap();
            let ib = without
                .step(&mut b, &Fixed(-0.3), &[0], 1e-2, &mut rb)
                .unwrap();
            assert!(ia.grad_norm.is_finite() && ia.noise_norm.is_finite());
            assert!(ib.grad_norm.is_nan() && ib.noise_norm.is_nan() && !ib.non_finite);
        }
        for (x, y) in a.theta().iter().zip(b.theta()) {
            assert!((x - y).abs() <= 1e-5 * (1.0 + x.abs()), "{x} vs {y}");
        }
        let before = [b.theta()[0], b.theta()[1], b.theta()[2]];
        let info = without
            .step(&mut b, &Fixed(f32::INFINITY), &[0], 1e-2, &mut rb)
            .unwrap();
        assert!(info.non_finite);
        assert_eq!(b.theta(), before);
    }
}
