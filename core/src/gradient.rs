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
    // The largest index first (a reduction the compiler vectorises); only a batch that
    // fails is searched for its first index out of range.
    if batch.iter().fold(0, |m, &i| m.max(i)) < n_data {
        return Ok(());
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
    for slot in batch.iter_mut() {
        let mut m = (rng.next_u64() as u128) * (n as u128);
        // Reject the low products that would over-represent some indices; the threshold
        // `2⁶⁴ mod n` is below n, so the division is only needed when the low word is.
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = (rng.next_u64() as u128) * (n as u128);
            }
        }
        *slot = (m >> 64) as usize;
    }
    Ok(())
}

/// `N/n`, the factor that makes a batch sum of `n` terms estimate the sum over `N` (0 for
/// an empty batch, whose sum is 0 anyway).
fn batch_scale(n_data: usize, n: usize) -> f32 {
    if n == 0 {
        0.0
    } else {
        (n_data as f64 / n as f64) as f32
    }
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

    #[inline(always)]
    fn estimate(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        crate::kernels::zero(grad);
        self.model.add_log_lik_grad(theta, batch, grad);
        let scale = batch_scale(self.model.len(), batch.len());
        for g in grad.iter_mut() {
            *g *= scale;
        }
        self.model.add_log_prior_grad(theta, grad);
    }
}

/// Indices per chunk when a full-data pass walks the data set.
const CHUNK: usize = 64;

/// Calls `f` with consecutive chunks of the indices `0..n` (at most 64 at a time).
fn for_chunks(n: usize, mut f: impl FnMut(&[usize])) {
    let mut idx = [0usize; CHUNK];
    let mut start = 0;
    while start < n {
        let len = CHUNK.min(n - start);
        for (k, slot) in idx[..len].iter_mut().enumerate() {
            *slot = start + k;
        }
        f(&idx[..len]);
        start += len;
    }
}

/// `out = Σᵢ ∇log p(xᵢ|θ)` over the whole data set, in chunks of 64 rows whose partial
/// sums are added in f32 (`tmp` is a workspace; both of length `d`, trusted).
fn full_log_lik_grad_into<M: Model + ?Sized>(
    model: &M,
    theta: &[f32],
    out: &mut [f32],
    tmp: &mut [f32],
) {
    crate::kernels::zero(out);
    for_chunks(model.len(), |chunk| {
        crate::kernels::zero(tmp);
        model.add_log_lik_grad(theta, chunk, tmp);
        for (o, &t) in out.iter_mut().zip(tmp.iter()) {
            *o += t;
        }
    });
}

/// The full-data log posterior `log p(θ) + Σᵢ log p(xᵢ|θ)` (f64, up to a constant) and
/// its gradient in `grad`, with `tmp` as workspace (lengths trusted).
pub(crate) fn full_log_posterior<M: Model + ?Sized>(
    model: &M,
    theta: &[f32],
    grad: &mut [f32],
    tmp: &mut [f32],
) -> f64 {
    full_log_lik_grad_into(model, theta, grad, tmp);
    model.add_log_prior_grad(theta, grad);
    let mut lp = model.log_prior(theta);
    for_chunks(model.len(), |chunk| lp += model.log_lik(theta, chunk));
    lp
}

/// The control-variate estimator of SGLD-CV (Baker, Fearnhead, Fox & Nemeth 2019, eq. 4):
/// `ĝ(θ) = ∇log p(θ) + ∇log p(X|θ̂) + (N/n)·Σ_{i∈batch} [∇log p(xᵢ|θ) − ∇log p(xᵢ|θ̂)]`,
/// with the full-data gradient at a fixed centre `θ̂` (ideally near the mode, e.g. found
/// by SGD: [`crate::Sgld`] at temperature 0) computed once. Near `θ̂` its variance is
/// `O(‖θ − θ̂‖²)` rather than `O(1)`: the mini-batch noise all but vanishes. Usable with
/// every sampler.
///
/// ```
/// use sgld::gradient::{ControlVariate, GradientEstimator, MiniBatch};
/// use sgld::models::{Gaussian, LogisticDense};
/// let x = [0.5, 1.0, 1.5, 1.0, -0.7, 1.0, -1.2, 1.0];
/// let y = [1.0, 1.0, -1.0, -1.0];
/// let model = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0)?)?;
/// let centre = [0.3f32, 0.1];
/// let mut buf = [0.0f32; ControlVariate::<()>::buffer_len(2)];
/// let cv = ControlVariate::new(&model, &centre, &mut buf)?;
/// // At the centre every batch gives the exact full-data gradient.
/// let (mut a, mut b) = ([0.0f32; 2], [0.0f32; 2]);
/// cv.estimate(&centre, &[0], &mut a);
/// cv.estimate(&centre, &[2, 3], &mut b);
/// assert!((a[0] - b[0]).abs() < 1e-5 && (a[1] - b[1]).abs() < 1e-5);
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ControlVariate<'c, M> {
    model: M,
    centre: &'c [f32],
    centre_grad: &'c [f32],
}

impl<M> ControlVariate<'_, M> {
    /// Floats of the buffer [`ControlVariate::new`] needs for dimension `d`.
    pub const fn buffer_len(d: usize) -> usize {
        2 * d
    }
}

impl<'c, M: Model> ControlVariate<'c, M> {
    /// Builds the estimator around `centre` (finite, of the model's dimension), computing
    /// the full-data log-likelihood gradient there (one pass over the data) into `buf`
    /// of at least [`buffer_len`](Self::buffer_len)`(d)` floats.
    pub fn new(model: M, centre: &'c [f32], buf: &'c mut [f32]) -> Result<Self, Error> {
        let d = model.dim();
        check_len("centre", d, centre.len())?;
        crate::error::check_finite("centre", centre)?;
        if model.is_empty() {
            return Err(Error::Empty { what: "data set" });
        }
        if buf.len() < 2 * d {
            return Err(Error::LengthMismatch {
                what: "control-variate buffer",
                expected: 2 * d,
                found: buf.len(),
            });
        }
        let (g, tmp) = buf.split_at_mut(d);
        full_log_lik_grad_into(&model, centre, g, &mut tmp[..d]);
        if !crate::kernels::all_finite(g) {
            return Err(Error::NonFinite {
                what: "full-data gradient at the centre",
            });
        }
        Ok(Self {
            model,
            centre,
            centre_grad: g,
        })
    }

    /// The centre `θ̂`.
    pub fn centre(&self) -> &[f32] {
        self.centre
    }

    /// The full-data log-likelihood gradient at the centre.
    pub fn centre_grad(&self) -> &[f32] {
        self.centre_grad
    }
}

impl<M: Model> GradientEstimator for ControlVariate<'_, M> {
    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn n_data(&self) -> usize {
        self.model.len()
    }

    fn estimate(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        // grad = Σ_b ∇log p(x|θ) − Σ_b ∇log p(x|θ̂), built with add-only model calls.
        crate::kernels::zero(grad);
        self.model.add_log_lik_grad(self.centre, batch, grad);
        for g in grad.iter_mut() {
            *g = -*g;
        }
        self.model.add_log_lik_grad(theta, batch, grad);
        let scale = batch_scale(self.model.len(), batch.len());
        for (g, &c) in grad.iter_mut().zip(self.centre_grad) {
            *g = *g * scale + c;
        }
        self.model.add_log_prior_grad(theta, grad);
    }
}
