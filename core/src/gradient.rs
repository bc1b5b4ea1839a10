//! Gradient estimators: what the sampler uses in place of `∇ log p(θ|X)`.
//!
//! SGLD is an integrator (the Langevin update) plus a gradient estimator; keeping the
//! two apart lets the sampler family grow by composition. [`MiniBatch`] is the
//! estimator of eq. 4: `ĝ(θ) = ∇ log p(θ) + (N/n) Σ_{i ∈ batch} ∇ log p(xᵢ|θ)`.

use rand_core::Rng;

use crate::error::{Error, check_len};
use crate::models::Model;

/// An estimate of the gradient of the log posterior from a mini-batch.
pub trait GradientEstimator {
    /// Number of parameters.
    fn dim(&self) -> usize;

    /// Number of data items the batch indices refer to.
    fn n_data(&self) -> usize;

    /// Writes the estimate at `theta` into `grad` (overwriting it).
    ///
    /// Trusts its input: `theta`, `grad` of length [`dim`](Self::dim), a non-empty batch
    /// of indices `< `[`n_data`](Self::n_data). Use [`check_batch`] (or a sampler's
    /// `step`, which calls it) at the boundary.
    fn estimate(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]);
}

/// Checks a mini-batch against a data set of `n_data` items: non-empty, in range.
pub fn check_batch(batch: &[usize], n_data: usize) -> Result<(), Error> {
    if batch.is_empty() {
        return Err(Error::EmptyBatch);
    }
    match batch.iter().find(|&&i| i >= n_data) {
        Some(&index) => Err(Error::IndexOutOfRange { index, len: n_data }),
        None => Ok(()),
    }
}

/// Fills `batch` with indices drawn uniformly from `0..n_data`, with replacement
/// (Lemire's multiply-shift with rejection, so exactly uniform). Errors when
/// `n_data == 0` or the batch is empty.
///
/// ```
/// let mut rng = sgld::noise::default_rng(3);
/// let mut batch = [0usize; 10];
/// sgld::gradient::sample_batch(&mut rng, 32_561, &mut batch)?;
/// assert!(batch.iter().all(|&i| i < 32_561));
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn sample_batch<R: Rng + ?Sized>(
    rng: &mut R,
    n_data: usize,
    batch: &mut [usize],
) -> Result<(), Error> {
    if n_data == 0 {
        return Err(Error::Empty { what: "data set" });
    }
    if batch.is_empty() {
        return Err(Error::EmptyBatch);
    }
    let n = n_data as u64;
    // Reject the low products that would over-represent some indices.
    let threshold = n.wrapping_neg() % n;
    for slot in batch.iter_mut() {
        *slot = loop {
            let m = (rng.next_u64() as u128) * (n as u128);
            if (m as u64) >= threshold {
                break (m >> 64) as usize;
            }
        };
    }
    Ok(())
}

/// The mini-batch estimator of eq. 4: prior gradient plus the batch sum scaled by `N/n`.
#[derive(Debug, Clone, Copy)]
pub struct MiniBatch<M> {
    model: M,
}

impl<M: Model> MiniBatch<M> {
    /// Wraps a model (by value or by reference: `&M` is a model too).
    pub fn new(model: M) -> Self {
        Self { model }
    }

    /// The wrapped model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The checked form of [`GradientEstimator::estimate`].
    pub fn gradient(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) -> Result<(), Error> {
        check_len("theta", self.model.dim(), theta.len())?;
        check_len("grad", self.model.dim(), grad.len())?;
        check_batch(batch, self.model.len())?;
        crate::error::check_finite("theta", theta)?;
        self.estimate(theta, batch, grad);
        Ok(())
    }
}

impl<M: Model> GradientEstimator for MiniBatch<M> {
    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn n_data(&self) -> usize {
        self.model.len()
    }

    fn estimate(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        grad.fill(0.0);
        self.model.add_log_lik_grad(theta, batch, grad);
        if !batch.is_empty() {
            let scale = (self.model.len() as f64 / batch.len() as f64) as f32;
            for g in grad.iter_mut() {
                *g *= scale;
            }
        }
        self.model.add_log_prior_grad(theta, grad);
    }
}
