//! Gradient estimators: what the sampler uses in place of `∇ log p(θ|X)`.
//!
//! SGLD is an integrator (the Langevin update) plus a gradient estimator; keeping the
//! two apart lets the sampler family grow by composition. [`MiniBatch`] is the
//! estimator of eq. 4: `ĝ(θ) = ∇ log p(θ) + (N/n) Σ_{i ∈ batch} ∇ log p(xᵢ|θ)`.

use rand_core::Rng;

use crate::error::{Error, check_len};
use crate::models::Model;
use crate::rng::CacheLines;

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

    /// [`estimate`](Self::estimate), calling `side` exactly once along the way: work
    /// that does not touch `theta` or `grad` (a sampler's noise), placed where the
    /// estimate waits on its own results, so that the processor runs the two together.
    ///
    /// The estimate is the same as [`estimate`](Self::estimate)'s, bit for bit. The
    /// default calls `side` after the estimate; [`MiniBatch`] calls it where its model
    /// puts it ([`Model::scaled_grad_overlapped`]).
    ///
    /// ```
    /// use sgld::gradient::{GradientEstimator, MiniBatch};
    /// use sgld::models::{BitRows, Laplace, LogisticBits};
    /// // Three rows of three binary features (one 16-bit word a row), labels ±1.
    /// let (words, y) = ([0b011u16, 0b101, 0b110], [1.0f32, -1.0, 1.0]);
    /// let model = LogisticBits::new(BitRows::new(&words, 3)?, &y, Laplace::new(1.0)?)?;
    /// let est = MiniBatch::new(&model);
    /// let theta = [0.3f32, -0.2, 0.1];
    /// let (mut a, mut b) = ([0.0f32; 3], [0.0f32; 3]);
    /// est.estimate(&theta, &[0, 2], &mut a);
    /// let mut calls = 0;
    /// est.estimate_overlapped(&theta, &[0, 2], &mut b, &mut || calls += 1);
    /// assert_eq!((a, calls), (b, 1));
    /// # Ok::<(), sgld::Error>(())
    /// ```
    #[inline]
    fn estimate_overlapped(
        &self,
        theta: &[f32],
        batch: &[usize],
        grad: &mut [f32],
        side: &mut dyn FnMut(),
    ) {
        self.estimate(theta, batch, grad);
        side();
    }

    /// Hints that `batch` is the next batch to be estimated, so that its data can be on
    /// its way to the cache while the current step runs. Changes no result; the
    /// default does nothing, and [`MiniBatch`] asks its model ([`Model::prefetch`]).
    ///
    /// A loop that draws each batch one step ahead:
    ///
    /// ```
    /// use sgld::gradient::{GradientEstimator, MiniBatch, sample_batch};
    /// use sgld::models::{BitRows, Laplace, LogisticBits};
    /// let (words, y) = ([0b011u16, 0b101, 0b110], [1.0f32, -1.0, 1.0]);
    /// let model = LogisticBits::new(BitRows::new(&words, 3)?, &y, Laplace::new(1.0)?)?;
    /// let est = MiniBatch::new(&model);
    /// let (mut theta, mut scratch) = ([0.0f32; 3], [0.0f32; sgld::Sgld::scratch_len(3)]);
    /// let mut state = sgld::Sgld::init(&mut theta, &mut scratch)?;
    /// let mut rng = sgld::noise::default_rng(1);
    /// let (mut batch, mut next) = ([0usize; 2], [0usize; 2]);
    /// sample_batch(&mut rng, 3, &mut next)?;
    /// for _ in 0..100 {
    ///     batch = next;
    ///     sample_batch(&mut rng, 3, &mut next)?;
    ///     est.prefetch(&next);
    ///     sgld::Sgld::new().step(&mut state, &est, &batch, 0.01, &mut rng)?;
    /// }
    /// assert!(state.theta().iter().all(|t| t.is_finite()));
    /// # Ok::<(), sgld::Error>(())
    /// ```
    #[inline]
    fn prefetch(&self, batch: &[usize]) {
        let _ = batch;
    }
}

/// Checks a mini-batch against a data set of `n_data` items: non-empty, in range.
#[inline]
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
/// For `n_data < 2³²` (every data set that fits in memory as rows) each index takes a
/// 32-bit half `h` of a word: the index is `⌊h·n/2³²⌋`, unless the low 32 bits of `h·n`
/// are below `2³² mod n` (probability below `n/2³²`), when it is redrawn the same way
/// from `next_u32` until accepted. Index `j` of the batch takes half `j` of the words
/// read as little-endian 32-bit values, so sixteen indices are one vector's worth of
/// multiplies. Larger `n_data` take a whole 64-bit word an index, the same way. The
/// words come from `fill_bytes`, up to [`BATCH_WORDS`] a call (one pass of a generator
/// that makes words in bulk, like the default one), rounded up to a multiple of eight;
/// a batch of fewer than sixteen indices (below `2³²`) takes its `⌈len/2⌉` words from
/// `next_u64` instead, the low half first.
///
/// ```
/// let mut rng = sgld::noise::default_rng(3);
/// let mut batch = [0usize; 10];
/// sgld::gradient::sample_batch(&mut rng, 32_561, &mut batch)?;
/// assert!(batch.iter().all(|&i| i < 32_561));
/// # Ok::<(), sgld::Error>(())
/// ```
#[inline]
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
    match u32::try_from(n_data) {
        Ok(n) => sample_batch_u32(rng, n, batch),
        Err(_) => sample_batch_u64(rng, n_data as u64, batch),
    }
    Ok(())
}

/// Words [`sample_batch`] takes from one `fill_bytes` call.
pub const BATCH_WORDS: usize = 64;

/// Indices one 64-byte line of words gives on the 32-bit path.
const LINE_HALVES: usize = 16;

/// [`sample_batch`] for `n < 2³²`: an index a 32-bit half.
#[inline]
fn sample_batch_u32<R: Rng + ?Sized>(rng: &mut R, n: u32, batch: &mut [usize]) {
    if batch.len() < LINE_HALVES {
        // A short batch: its halves from ⌈len/2⌉ calls of `next_u64` (a generator's
        // buffered path, with no buffer to fill and read back).
        let mut word = 0;
        for (j, slot) in batch.iter_mut().enumerate() {
            if j % 2 == 0 {
                word = rng.next_u64();
            }
            let half = (word >> (32 * (j % 2))) as u32;
            *slot = accept_u32(rng, n, half as u64 * n as u64);
        }
        return;
    }
    sample_lines_u32(rng, n, batch);
}

/// The index of the product `m = h·n` of a half `h`: `⌊m/2³²⌋`, or when the low half of
/// `m` is below `2³² mod n`, the same from `next_u32` until accepted.
#[inline(always)]
fn accept_u32<R: Rng + ?Sized>(rng: &mut R, n: u32, mut m: u64) -> usize {
    // 2³² mod n is below n, so the division is only needed when the low half is
    // (probability n/2³²).
    if (m as u32) < n {
        let threshold = n.wrapping_neg() % n;
        while (m as u32) < threshold {
            m = rng.next_u32() as u64 * n as u64;
        }
    }
    (m >> 32) as usize
}

/// The lines of [`sample_batch_u32`] for a batch of sixteen or more (out of line, so the
/// short path stays small where it is inlined).
#[inline(never)]
fn sample_lines_u32<R: Rng + ?Sized>(rng: &mut R, n32: u32, batch: &mut [usize]) {
    let n = n32 as u64;
    let mut buf = CacheLines([0u8; 8 * BATCH_WORDS]);
    for chunk in batch.chunks_mut(2 * BATCH_WORDS) {
        // Whole 64-byte lines: a generator that makes eight words at a time writes whole
        // rounds (the halves past the chunk are not used).
        let bytes = &mut buf.0[..4 * chunk.len().next_multiple_of(LINE_HALVES)];
        rng.fill_bytes(bytes);
        for (group, line) in chunk
            .chunks_mut(LINE_HALVES)
            .zip(bytes.as_chunks::<{ 4 * LINE_HALVES }>().0)
        {
            // Sixteen indices at once, straight into a whole group (a last, partial one
            // takes the first of them), unless a half's product may need redrawing:
            // then one at a time, in order.
            let done = match <&mut [usize; LINE_HALVES]>::try_from(&mut *group) {
                Ok(whole) => crate::kernels::imp::line_indices_u32(line, n32, whole),
                Err(_) => {
                    let mut idx = [0usize; LINE_HALVES];
                    let done = crate::kernels::imp::line_indices_u32(line, n32, &mut idx);
                    if done {
                        crate::kernels::copy(group, &idx);
                    }
                    done
                }
            };
            if !done {
                for (slot, h) in group.iter_mut().zip(line.as_chunks::<4>().0) {
                    *slot = accept_u32(rng, n32, u64::from(u32::from_le_bytes(*h)) * n);
                }
            }
        }
    }
}

/// [`sample_batch`] for `n ≥ 2³²`: an index a 64-bit word.
#[inline(never)]
fn sample_batch_u64<R: Rng + ?Sized>(rng: &mut R, n: u64, batch: &mut [usize]) {
    let mut buf = CacheLines([0u8; 8 * BATCH_WORDS]);
    for chunk in batch.chunks_mut(BATCH_WORDS) {
        let bytes = &mut buf.0[..8 * chunk.len().next_multiple_of(8)];
        rng.fill_bytes(bytes);
        for (slot, b) in chunk.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(b);
            let mut m = (u64::from_le_bytes(word) as u128) * (n as u128);
            // The threshold `2⁶⁴ mod n` is below n, so the division is only needed when
            // the low word is.
            if (m as u64) < n {
                let threshold = n.wrapping_neg() % n;
                while (m as u64) < threshold {
                    m = (rng.next_u64() as u128) * (n as u128);
                }
            }
            *slot = (m >> 64) as usize;
        }
    }
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
        let scale = batch_scale(self.model.len(), batch.len());
        self.model.scaled_grad(theta, batch, scale, grad);
    }

    #[inline(always)]
    fn estimate_overlapped(
        &self,
        theta: &[f32],
        batch: &[usize],
        grad: &mut [f32],
        side: &mut dyn FnMut(),
    ) {
        let scale = batch_scale(self.model.len(), batch.len());
        self.model
            .scaled_grad_overlapped(theta, batch, scale, grad, side);
    }

    #[inline(always)]
    fn prefetch(&self, batch: &[usize]) {
        self.model.prefetch(batch);
    }
}

/// Indices per chunk when a full-data pass walks the data set.
const CHUNK: usize = 64;

/// Partial sums hold at most this many chunks (a bound on a partial sum's terms for
/// models whose [`Model::row_width`] is tiny beside their dimension).
const MAX_CHUNKS_PER_SUM: usize = 1 << 12;

/// `out = Σ` over the whole data set of what `add(chunk, tmp)` adds into a cleared
/// `tmp` for consecutive chunks of at most 64 indices. The chunks are grouped into f32
/// partial sums of about 64 terms a parameter ([`Model::row_width`]: 64 rows of a dense
/// model), each added into `out` when full (`out` and `tmp` of length `d`, trusted).
fn sum_chunks<M: Model + ?Sized>(
    model: &M,
    out: &mut [f32],
    tmp: &mut [f32],
    add: impl FnMut(&[usize], &mut [f32]),
) {
    sum_chunks_over(model, 0..model.len(), out, tmp, add);
}

/// [`sum_chunks`] over the items `range` alone (`out` and `tmp` of any one length).
fn sum_chunks_over<M: Model + ?Sized>(
    model: &M,
    range: core::ops::Range<usize>,
    out: &mut [f32],
    tmp: &mut [f32],
    mut add: impl FnMut(&[usize], &mut [f32]),
) {
    let n = range.end;
    let width = model.row_width().max(1);
    let per_sum = (model.dim() / width).clamp(1, MAX_CHUNKS_PER_SUM);
    crate::kernels::zero(out);
    let mut idx = [0usize; CHUNK];
    let (mut start, mut k) = (range.start, 0usize);
    while start < n {
        let len = CHUNK.min(n - start);
        for (j, slot) in idx[..len].iter_mut().enumerate() {
            *slot = start + j;
        }
        start += len;
        if k % per_sum == 0 {
            crate::kernels::zero(tmp);
        }
        add(&idx[..len], tmp);
        if start == n || k % per_sum == per_sum - 1 {
            for (o, &t) in out.iter_mut().zip(tmp.iter()) {
                *o += t;
            }
        }
        k += 1;
    }
}

/// `out = Σᵢ ∇log p(xᵢ|θ)` over the whole data set ([`sum_chunks`]; `tmp` is a
/// workspace; both of length `d`, trusted).
fn full_log_lik_grad_into<M: Model + ?Sized>(
    model: &M,
    theta: &[f32],
    out: &mut [f32],
    tmp: &mut [f32],
) {
    sum_chunks(model, out, tmp, |chunk, tmp| {
        model.add_log_lik_grad(theta, chunk, tmp)
    });
}

/// The full-data log posterior `log p(θ) + Σᵢ log p(xᵢ|θ)` (f64, up to a constant) and
/// its gradient in `grad`, with `tmp` as workspace (all of length `model.dim()`; the
/// lengths are trusted: a shorter slice panics). What MALA evaluates at each proposal.
///
/// ```
/// use sgld::gradient::full_log_posterior;
/// use sgld::models::{Gaussian, LogisticDense};
/// let x = [0.5, 1.0, -1.2, 1.0];
/// let y = [1.0, -1.0];
/// let model = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0)?)?;
/// let (mut g, mut tmp) = ([0.0f32; 2], [0.0f32; 2]);
/// let lp = full_log_posterior(&model, &[0.0, 0.0], &mut g, &mut tmp);
/// // Two rows at θ = 0: 2·log ½ plus the prior's two log N(0|0, 1).
/// let expected = 2.0 * 0.5f64.ln() - (2.0 * std::f64::consts::PI).ln();
/// assert!((lp - expected).abs() < 1e-6);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn full_log_posterior<M: Model + ?Sized>(
    model: &M,
    theta: &[f32],
    grad: &mut [f32],
    tmp: &mut [f32],
) -> f64 {
    let mut lp = model.log_prior(theta);
    sum_chunks(model, grad, tmp, |chunk, tmp| {
        lp += model.add_log_lik_grad_and_value(theta, chunk, tmp);
    });
    model.add_log_prior_grad(theta, grad);
    lp
}

/// The log likelihood and its gradient over the items `range` (no prior) at `k` points
/// at once, interleaved as [`Model::add_log_lik_grads_interleaved`] takes them
/// (`thetas[j·k + c]` is coordinate `j` of point `c`): `grads` (the same layout) and
/// `values[c]` (none where `values` is empty), summed as [`full_log_posterior`] sums,
/// with `tmp` (as long as `grads`)
/// as workspace. One read of each item serves every point, where chains run in lockstep
/// split the data set among threads. Returns `false`, having written nothing, where `k`
/// is not in `1..=`[`Model::interleaved_points`], the lengths are not `d·k`, `d·k`,
/// `d·k` and `k` (or 0), or `range` is not within the data set.
///
/// ```
/// use sgld::gradient::{full_log_posterior, log_lik_grads_interleaved};
/// use sgld::models::{Flat, LogisticSparse, Model, SparseRows};
/// let (offsets, indices, y) = ([0, 2, 3], [0u32, 2, 1], [1.0, -1.0]);
/// let model = LogisticSparse::new(SparseRows::new(&offsets, &indices, 3)?, &y, Flat)?;
/// // Two points, interleaved: (0.1, 0.2, 0.3) and (−1, 0, 1).
/// let thetas = [0.1, -1.0, 0.2, 0.0, 0.3, 1.0];
/// let (mut grads, mut tmp, mut values) = ([0.0f32; 6], [0.0f32; 6], [0.0f64; 2]);
/// assert!(log_lik_grads_interleaved(&model, &thetas, 2, 0..2, &mut grads, &mut tmp, &mut values));
/// let (mut g, mut t) = ([0.0f32; 3], [0.0f32; 3]);
/// let lp = full_log_posterior(&model, &[-1.0, 0.0, 1.0], &mut g, &mut t);
/// assert!((values[1] - lp).abs() < 1e-6 && (grads[1] - g[0]).abs() < 1e-6);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn log_lik_grads_interleaved<M: Model + ?Sized>(
    model: &M,
    thetas: &[f32],
    k: usize,
    range: core::ops::Range<usize>,
    grads: &mut [f32],
    tmp: &mut [f32],
    values: &mut [f64],
) -> bool {
    let len = model.dim().checked_mul(k);
    let fits = (1..=model.interleaved_points()).contains(&k)
        && len == Some(thetas.len())
        && len == Some(grads.len())
        && len == Some(tmp.len())
        && (values.len() == k || values.is_empty())
        && range.start <= range.end
        && range.end <= model.len();
    if !fits {
        return false;
    }
    values.fill(0.0);
    sum_chunks_over(model, range, grads, tmp, |chunk, tmp| {
        model.add_log_lik_grads_interleaved(thetas, k, chunk, tmp, values);
    });
    true
}

/// The gradient of [`full_log_posterior`] alone, into `grad` (one pass over the data
/// fewer; same workspace and lengths).
pub fn full_grad_log_posterior<M: Model + ?Sized>(
    model: &M,
    theta: &[f32],
    grad: &mut [f32],
    tmp: &mut [f32],
) {
    full_log_lik_grad_into(model, theta, grad, tmp);
    model.add_log_prior_grad(theta, grad);
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

    /// The estimator around `centre` with its full-data log-likelihood gradient
    /// `centre_grad` already known (from a parallel pass, or the last pass of a mode
    /// search that stopped at `centre`): no pass here. Both of the model's dimension and
    /// finite.
    ///
    /// ```
    /// use sgld::gradient::{ControlVariate, GradientEstimator};
    /// use sgld::models::{Gaussian, LogisticDense, Model};
    /// let x = [0.5, 1.0, 1.5, 1.0, -0.7, 1.0, -1.2, 1.0];
    /// let y = [1.0, 1.0, -1.0, -1.0];
    /// let model = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0)?)?;
    /// let centre = [0.3f32, 0.1];
    /// let mut full = [0.0f32; 2];
    /// model.add_log_lik_grad(&centre, &[0, 1, 2, 3], &mut full);
    /// let cv = ControlVariate::with_centre_grad(&model, &centre, &full)?;
    /// let mut buf = [0.0f32; ControlVariate::<()>::buffer_len(2)];
    /// let same = ControlVariate::new(&model, &centre, &mut buf)?;
    /// let (mut a, mut b) = ([0.0f32; 2], [0.0f32; 2]);
    /// cv.estimate(&[0.5, -0.2], &[1, 3], &mut a);
    /// same.estimate(&[0.5, -0.2], &[1, 3], &mut b);
    /// assert!((a[0] - b[0]).abs() < 1e-5 && (a[1] - b[1]).abs() < 1e-5);
    /// # Ok::<(), sgld::Error>(())
    /// ```
    pub fn with_centre_grad(
        model: M,
        centre: &'c [f32],
        centre_grad: &'c [f32],
    ) -> Result<Self, Error> {
        let d = model.dim();
        check_len("centre", d, centre.len())?;
        crate::error::check_finite("centre", centre)?;
        check_len("centre gradient", d, centre_grad.len())?;
        crate::error::check_finite("centre gradient", centre_grad)?;
        if model.is_empty() {
            return Err(Error::Empty { what: "data set" });
        }
        Ok(Self {
            model,
            centre,
            centre_grad,
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
        self.model
            .log_lik_grad_difference(theta, self.centre, batch, grad);
        let scale = batch_scale(self.model.len(), batch.len());
        for (g, &c) in grad.iter_mut().zip(self.centre_grad) {
            *g = *g * scale + c;
        }
        self.model.add_log_prior_grad(theta, grad);
    }

    fn prefetch(&self, batch: &[usize]) {
        self.model.prefetch(batch);
    }
}
