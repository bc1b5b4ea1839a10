//! The learner a device runs: a Bayesian logistic regression learned online by SGLD, with
//! d = 124 parameters (123 binary features and a bias, the shape of a9a), one step per
//! arriving example on a mini-batch of 10 drawn from a window of the 256 most recent
//! examples, and the step-size-weighted posterior mean (eq. 11) updated in place.
//!
//! With an FPU, everything on the per-example path is f32 ([`PolynomialF32`],
//! `WeightedMeanF32`, the core's f32 step and noise), so a Cortex-M4F, whose FPU is
//! single precision, never calls a software f64 routine. Without one (`sgld_soft_float`,
//! set by the core's rule: a Cortex-M0/M3, RV32IMAC), the learner is the core's
//! fixed-point [`FixedSgld`](sgld::online::FixedSgld) on the same prior, schedule, window
//! and batch. Every buffer is in [`Buffers`], whose constructor is `const`: a firmware
//! puts it in a `static`, so the window never touches the stack.
//!
//! [`Stream`] makes a deterministic a9a-like stream: 13 active features per example out
//! of 123 (drawn by a 64-bit LCG) plus the bias, labels from a fixed sparse coefficient
//! vector with 8% of them flipped. The examples keep their indices as `u8` (124
//! features fit), 24 bytes each, so the window is 6 KiB.

#![no_std]

#[cfg(not(sgld_soft_float))]
use sgld::Sgld;
#[cfg(not(sgld_soft_float))]
use sgld::estimate::WeightedMeanF32;
#[cfg(not(sgld_soft_float))]
use sgld::models::Laplace;
use sgld::noise::{DefaultRng, default_rng};
#[cfg(not(sgld_soft_float))]
use sgld::online::OnlineSgld;
#[cfg(sgld_soft_float)]
use sgld::online::fixed::{FixedPrior, FixedSgld};
use sgld::online::{Example, Examples, SparseBinaryExample};
use sgld::schedule::PolynomialF32;
use sgld::{Error, StepInfo};

/// Parameters: 123 features and the bias.
pub const D: usize = 124;
/// Binary features of the stream.
pub const FEATURES: u32 = 123;
/// Active features per example.
pub const ACTIVE: usize = 13;
// Every index, the bias's included, fits a `u8`.
const _: () = assert!(FEATURES < 256);
/// Examples in the window.
pub const WINDOW: usize = 256;
/// Examples per mini-batch.
pub const BATCH: usize = 10;
/// Examples in the training stream.
pub const STREAM: u64 = 30_000;
/// Examples in the held-out stream.
pub const HELD_OUT: u32 = 5_000;
/// Indices an example may have.
pub const MAX_INDICES: usize = 16;

/// How the learner computes, for reports.
#[cfg(not(sgld_soft_float))]
pub const ARITHMETIC: &str = "f32 throughout";
/// How the learner computes, for reports.
#[cfg(sgld_soft_float)]
pub const ARITHMETIC: &str = "fixed point";

/// One example: at most 16 feature indices as `u8`, and the label.
pub type Ex = SparseBinaryExample<MAX_INDICES, u8>;

/// The learner's memory: the window, θ and what the step and the estimator keep (9 KiB
/// with an FPU, 7 KiB in fixed point).
pub struct Buffers {
    examples: Examples<Ex, WINDOW>,
    #[cfg(not(sgld_soft_float))]
    theta: [f32; D],
    #[cfg(not(sgld_soft_float))]
    scratch: [f32; Sgld::scratch_len(D)],
    #[cfg(not(sgld_soft_float))]
    moments: [f32; WeightedMeanF32::storage_len(D)],
    #[cfg(not(sgld_soft_float))]
    batch: [usize; BATCH],
    #[cfg(sgld_soft_float)]
    theta: [i32; D],
    #[cfg(sgld_soft_float)]
    mean: [i32; D],
}

impl Buffers {
    /// Zeroed buffers, at compile time (a `static` of them sits in `.bss`).
    pub const fn new() -> Self {
        Self {
            examples: Examples::new(),
            #[cfg(not(sgld_soft_float))]
            theta: [0.0; D],
            #[cfg(not(sgld_soft_float))]
            scratch: [0.0; Sgld::scratch_len(D)],
            #[cfg(not(sgld_soft_float))]
            moments: [0.0; WeightedMeanF32::storage_len(D)],
            #[cfg(not(sgld_soft_float))]
            batch: [0; BATCH],
            #[cfg(sgld_soft_float)]
            theta: [0; D],
            #[cfg(sgld_soft_float)]
            mean: [0; D],
        }
    }
}

impl Default for Buffers {
    fn default() -> Self {
        Self::new()
    }
}

/// The learner: f32 SGLD where there is an FPU.
#[cfg(not(sgld_soft_float))]
type Learner<'a> = OnlineSgld<'a, Ex, Laplace, PolynomialF32, WeightedMeanF32<'a>, WINDOW>;
/// The learner: fixed-point SGLD where there is no FPU.
#[cfg(sgld_soft_float)]
type Learner<'a> = FixedSgld<'a, MAX_INDICES, u8, PolynomialF32, WINDOW, BATCH>;

/// The online learner with its generator; a few hundred bytes beside its [`Buffers`].
pub struct Device<'a> {
    learner: Learner<'a>,
    rng: DefaultRng,
}

/// The step size falls from 10⁻³ to 10⁻⁵ over [`STREAM`] examples.
fn schedule() -> Result<PolynomialF32, Error> {
    PolynomialF32::from_range(1e-3, 1e-5, 0.55, STREAM)
}

impl<'a> Device<'a> {
    /// A learner from θ = 0 with a Laplace(1) prior and plain SGLD (without the step's
    /// norms, which it does not read), its step falling from 10⁻³ to 10⁻⁵ over
    /// [`STREAM`] examples; the second half of the stream enters the estimate.
    #[cfg(not(sgld_soft_float))]
    pub fn new(buffers: &'a mut Buffers, seed: u64) -> Result<Self, Error> {
        let Buffers {
            examples,
            theta,
            scratch,
            moments,
            batch,
        } = buffers;
        theta.fill(0.0);
        let learner = OnlineSgld::new(
            examples,
            theta,
            scratch,
            WeightedMeanF32::new(moments, D)?,
            batch,
            Laplace::new(1.0)?,
            schedule()?,
            // The step's norms are not read here: their sums of squares are skipped.
            Sgld::new().without_norms(),
            STREAM / 2,
        )?;
        Ok(Self {
            learner,
            rng: default_rng(seed),
        })
    }

    /// The same learner in fixed point.
    #[cfg(sgld_soft_float)]
    pub fn new(buffers: &'a mut Buffers, seed: u64) -> Result<Self, Error> {
        let Buffers {
            examples,
            theta,
            mean,
        } = buffers;
        theta.fill(0);
        let learner = FixedSgld::new(
            examples,
            theta,
            mean,
            FixedPrior::laplace(1.0)?,
            schedule()?,
            STREAM / 2,
        )?;
        Ok(Self {
            learner,
            rng: default_rng(seed),
        })
    }

    /// One arriving example: one SGLD step and the estimate's update.
    #[inline(never)]
    pub fn learn(&mut self, example: Ex) -> Result<StepInfo, Error> {
        self.learner.push(example, &mut self.rng)
    }

    /// The posterior mean of parameter `j` so far.
    pub fn mean(&self, j: usize) -> f32 {
        #[cfg(not(sgld_soft_float))]
        return self.learner.moments().mean(j);
        #[cfg(sgld_soft_float)]
        return self.learner.mean(j);
    }

    /// Writes every parameter's posterior mean so far into `out` (length [`D`]).
    pub fn means_into(&self, out: &mut [f32]) -> Result<(), Error> {
        #[cfg(not(sgld_soft_float))]
        return self.learner.moments().means_into(out);
        #[cfg(sgld_soft_float)]
        return self.learner.means_into(out);
    }

    /// Correct predictions of the posterior mean on `n` examples of `stream`.
    pub fn correct(&self, stream: &mut Stream, n: u32) -> Result<u32, Error> {
        let mut mean = [0.0f32; D];
        self.means_into(&mut mean)?;
        let mut correct = 0;
        for _ in 0..n {
            let ex = stream.next_example()?;
            if (ex.margin(&mean) > 0.0) == (ex.label() > 0.0) {
                correct += 1;
            }
        }
        Ok(correct)
    }
}

/// A deterministic a9a-like stream.
pub struct Stream {
    s: u64,
}

impl Stream {
    /// The training stream.
    pub const fn training() -> Self {
        Self { s: 7 }
    }

    /// The held-out stream.
    pub const fn held_out() -> Self {
        Self { s: 99 }
    }

    fn next_u32(&mut self) -> u32 {
        self.s = self
            .s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.s >> 33) as u32
    }

    /// The true coefficient of feature `j`: a fixed sparse pattern in [−1.5, 1.5].
    fn beta(j: u8) -> f32 {
        if j.is_multiple_of(3) {
            ((j as u32 * 37) % 31) as f32 / 10.0 - 1.5
        } else {
            0.0
        }
    }

    /// The next example.
    pub fn next_example(&mut self) -> Result<Ex, Error> {
        let mut idx = [0u8; ACTIVE + 1];
        let mut k = 0;
        while k < ACTIVE {
            // Lossless: below FEATURES < 256.
            let j = (self.next_u32() % FEATURES) as u8;
            if !idx[..k].contains(&j) {
                idx[k] = j;
                k += 1;
            }
        }
        idx[..ACTIVE].sort_unstable();
        idx[ACTIVE] = FEATURES as u8; // the bias
        let z: f32 = idx[..ACTIVE].iter().map(|&j| Self::beta(j)).sum::<f32>() - 0.2;
        let flip = self.next_u32() % 100 < 8;
        let y = if (z > 0.0) != flip { 1.0 } else { -1.0 };
        Ex::narrow(&idx, y)
    }
}
