//! Online SGLD for devices that see data one example at a time.
//!
//! Examples arrive one by one into a fixed-capacity window of recent examples
//! ([`Examples`], a [`heapless::Deque`] in the caller's memory: a `static` on a
//! microcontroller, since `Examples::new()` is `const`); each arrival triggers one SGLD step on a mini-batch
//! drawn from the window, and the step-size-weighted estimator (eq. 11) is updated in
//! place. The gradient estimate scales the batch sum by the number of examples *seen so
//! far* (not the window size), `ĝ = ∇log p(θ) + (N_seen/n) Σ_{i∈batch} ∇log p(xᵢ|θ)`,
//! so the chain targets the posterior given the whole stream, with the window standing in
//! for the stream (exact when the stream is stationary).
//!
//! Models: logistic regression on dense rows ([`DenseExample`]) or on sparse binary rows
//! ([`SparseBinaryExample`], at most `K` indices). For a core without an FPU,
//! [`FixedSgld`] runs the sparse binary model in fixed point.

pub mod fixed;

pub use fixed::{FixedPrior, FixedSgld};

use heapless::Deque;
use rand_core::Rng;

use crate::Error;
use crate::estimate::Accumulator;
use crate::gradient::{GradientEstimator, sample_batch};
use crate::kernels::{SparseIndex, imp};
use crate::math::{log_sigmoid_f64, sigmoid};
use crate::models::Prior;
use crate::sampler::{Sgld, SgldState, StepInfo};
use crate::schedule::Schedule;

/// One labelled example of a logistic regression `p(y|x, β) = σ(y βᵀx)`.
pub trait Example {
    /// Checks the example against a model of `dim` parameters.
    fn check(&self, dim: usize) -> Result<(), Error>;
    /// The label, `±1`.
    fn label(&self) -> f32;
    /// `βᵀx`.
    fn margin(&self, theta: &[f32]) -> f32;
    /// `grad += c·x`.
    fn add_scaled(&self, c: f32, grad: &mut [f32]);

    /// `grad += ∇_β log p(y|x, β) = σ(−y βᵀx) y x`.
    fn add_log_lik_grad(&self, theta: &[f32], grad: &mut [f32]) {
        let y = self.label();
        self.add_scaled(y * sigmoid(-y * self.margin(theta)), grad);
    }

    /// `log p(y|x, β)`.
    fn log_lik(&self, theta: &[f32]) -> f64 {
        log_sigmoid_f64(self.label() as f64 * self.margin(theta) as f64)
    }
}

fn check_label(y: f32) -> Result<(), Error> {
    if y == 1.0 || y == -1.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            what: "logistic labels must be -1 or +1",
        })
    }
}

/// A dense example of `D` features.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DenseExample<const D: usize> {
    /// Features.
    pub x: [f32; D],
    /// Label, `±1`.
    pub y: f32,
}

impl<const D: usize> Example for DenseExample<D> {
    fn check(&self, dim: usize) -> Result<(), Error> {
        crate::error::check_len("example features", dim, D)?;
        crate::error::check_finite("example features", &self.x)?;
        check_label(self.y)
    }
    fn label(&self) -> f32 {
        self.y
    }
    fn margin(&self, theta: &[f32]) -> f32 {
        imp::dot(&self.x, theta)
    }
    fn add_scaled(&self, c: f32, grad: &mut [f32]) {
        imp::axpy(c, &self.x, grad);
    }
}

/// A sparse binary example: the (0-based) indices of at most `K` (< 2¹⁶) features equal to 1,
/// stored as `u32` or, through [`SparseBinaryExample::narrow`], as `u8` or `u16`
/// ([`SparseIndex`]). With at most 256 features, `u8` indices make a window of examples
/// about a third of its `u32` size:
///
/// ```
/// use sgld::online::SparseBinaryExample;
/// let wide = SparseBinaryExample::<16>::new(&[3, 17, 123], 1.0)?;
/// let narrow = SparseBinaryExample::<16, u8>::narrow(&[3, 17, 123], 1.0)?;
/// assert_eq!(narrow.indices(), &[3, 17, 123]);
/// assert!(size_of_val(&narrow) * 2 < size_of_val(&wide));
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SparseBinaryExample<const K: usize, I = u32> {
    /// `K` < 2¹⁶ (checked at compile time), so a two-byte length.
    idx: heapless::Vec<I, K, u16>,
    /// The largest index (0 when there is none): a slice longer than it holds every
    /// index, so the row is read without a bounds check per index.
    max: I,
    y: f32,
}

impl<const K: usize> SparseBinaryExample<K> {
    /// An example from its non-zero feature indices (at most `K`) and its label.
    pub fn new(indices: &[u32], y: f32) -> Result<Self, Error> {
        SparseBinaryExample::narrow(indices, y)
    }
}

impl<const K: usize, I: SparseIndex> SparseBinaryExample<K, I> {
    /// [`SparseBinaryExample::new`] for indices of any [`SparseIndex`] type.
    pub fn narrow(indices: &[I], y: f32) -> Result<Self, Error> {
        let idx = heapless::Vec::from_slice(indices).map_err(|_| Error::LengthMismatch {
            what: "example indices (capacity)",
            expected: K,
            found: indices.len(),
        })?;
        let max = indices.iter().copied().max_by_key(|j| j.index());
        Ok(Self {
            idx,
            max: max.unwrap_or(I::ZERO),
            y,
        })
    }

    /// Whether every index is below `len`.
    #[inline(always)]
    fn in_bounds(&self, len: usize) -> bool {
        self.max.index() < len
    }

    /// The non-zero feature indices.
    pub fn indices(&self) -> &[I] {
        &self.idx
    }
}

impl<const K: usize, I: SparseIndex> Example for SparseBinaryExample<K, I> {
    fn check(&self, dim: usize) -> Result<(), Error> {
        // The largest index decides: one comparison, not one per index.
        if !self.in_bounds(dim) {
            crate::kernels::check_indices(&self.idx, dim)?;
        }
        check_label(self.y)
    }
    fn label(&self) -> f32 {
        self.y
    }
    // Inlined into the learner's step (a call and its checks cost a tenth of a short
    // row's gather on wasm32).
    #[inline(always)]
    fn margin(&self, theta: &[f32]) -> f32 {
        if self.in_bounds(theta.len()) {
            // SAFETY: every index is at most `max` (`narrow` computed it, and `idx` is
            // never changed after), which is below `theta.len()`.
            #[allow(unsafe_code)]
            unsafe {
                imp::sparse_dot_in_bounds(&self.idx, theta)
            }
        } else {
            imp::sparse_dot(&self.idx, theta)
        }
    }
    fn add_scaled(&self, c: f32, grad: &mut [f32]) {
        if self.in_bounds(grad.len()) {
            // SAFETY: as in `margin`, every index is below `grad.len()`.
            #[allow(unsafe_code)]
            unsafe {
                imp::sparse_axpy_in_bounds(c, &self.idx, grad)
            }
        } else {
            imp::sparse_axpy(c, &self.idx, grad);
        }
    }
}

/// The storage of a window of `CAP` examples: `Examples::new()` is `const`, so it can be
/// a `static` (in `.bss`, never on the stack).
pub type Examples<E, const CAP: usize> = Deque<E, CAP>;

/// A window of the `CAP` most recent examples, as a gradient estimator.
#[derive(Debug)]
pub struct Window<'a, E, P, const CAP: usize> {
    examples: &'a mut Examples<E, CAP>,
    seen: u64,
    dim: usize,
    prior: P,
}

impl<'a, E: Example, P, const CAP: usize> Window<'a, E, P, CAP> {
    /// A window for a model of `dim` parameters in `examples` (emptied first).
    pub fn new(examples: &'a mut Examples<E, CAP>, dim: usize, prior: P) -> Self {
        examples.clear();
        Self {
            examples,
            seen: 0,
            dim,
            prior,
        }
    }

    /// Checks and adds an example, dropping the oldest when full.
    pub fn push(&mut self, example: E) -> Result<(), Error> {
        example.check(self.dim)?;
        if self.examples.is_full() {
            self.examples.pop_front();
        }
        // Cannot fail: there is room after the pop.
        let _ = self.examples.push_back(example);
        self.seen += 1;
        Ok(())
    }

    /// Examples seen so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Examples in the window.
    pub fn len(&self) -> usize {
        self.examples.len()
    }

    /// True before the first example.
    pub fn is_empty(&self) -> bool {
        self.examples.is_empty()
    }

    /// The `i`-th example of the window (0 the oldest), in constant time.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&E> {
        nth(self.examples.as_slices(), i)
    }
}

/// The `i`-th element of a deque given as its two slices, oldest first (a loop over a
/// batch takes the slices once).
#[inline(always)]
fn nth<'s, E>((front, back): (&'s [E], &'s [E]), i: usize) -> Option<&'s E> {
    match i.checked_sub(front.len()) {
        None => front.get(i),
        Some(k) => back.get(k),
    }
}

impl<E: Example, P: Prior, const CAP: usize> GradientEstimator for Window<'_, E, P, CAP> {
    fn dim(&self) -> usize {
        self.dim
    }
    fn n_data(&self) -> usize {
        self.examples.len()
    }
    fn estimate(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        // ∇log p(θ) first, then each example's term with the N_seen/n scale folded into
        // its coefficient: one pass over `grad` instead of clearing and scaling it.
        self.prior.write_grad(theta, grad);
        if batch.is_empty() {
            return;
        }
        // In f32 (no f64 on the per-example path): exact up to 2²⁴ examples seen,
        // relative 6·10⁻⁸ beyond.
        let scale = self.seen as f32 / batch.len() as f32;
        let slices = self.examples.as_slices();
        for &i in batch {
            if let Some(ex) = nth(slices, i) {
                let y = ex.label();
                ex.add_scaled(scale * y * sigmoid(-y * ex.margin(theta)), grad);
            }
        }
    }
}

/// An online SGLD learner: one step per arriving example, estimates updated in place.
/// Every buffer is the caller's — the window's examples, θ, scratch, the estimator and
/// the batch indices — so on a device they can all be `static`, and the learner itself
/// is a few hundred bytes. The estimator is any [`Accumulator`]: [`WeightedMoments`]
/// (f64) or [`WeightedMomentsF32`] (f32 only, for an FPU without f64).
///
/// [`WeightedMoments`]: crate::estimate::WeightedMoments
/// [`WeightedMomentsF32`]: crate::estimate::WeightedMomentsF32
///
/// ```
/// use sgld::models::Gaussian;
/// use sgld::online::{DenseExample, Examples, OnlineSgld};
/// use sgld::schedule::Constant;
/// use sgld::{Sgld, estimate::WeightedMoments, noise::default_rng};
///
/// let mut window = Examples::<DenseExample<2>, 64>::new();
/// let (mut theta, mut scratch) = ([0.0f32; 2], [0.0f32; Sgld::scratch_len(2)]);
/// let mut store = [0.0f64; WeightedMoments::storage_len(2)];
/// let mut batch = [0usize; 4];
/// let mut learner = OnlineSgld::new(
///     &mut window, &mut theta, &mut scratch,
///     WeightedMoments::new(&mut store, 2)?, &mut batch,
///     Gaussian::new(10.0)?, Constant::new(1e-3)?, Sgld::new(), 100,
/// )?;
/// let mut rng = default_rng(5);
/// for t in 0..2000 {
///     let x = ((t * 37) % 200) as f32 / 100.0 - 1.0; // a feature in [-1, 1)
///     let y = if x > 0.0 { 1.0 } else { -1.0 };
///     learner.push(DenseExample { x: [x, 1.0], y }, &mut rng)?;
/// }
/// assert!(learner.moments().mean(0) > 1.0); // a clearly positive slope
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug)]
pub struct OnlineSgld<'a, E, P, S, M, const CAP: usize> {
    window: Window<'a, E, P, CAP>,
    state: SgldState<'a>,
    moments: M,
    batch: &'a mut [usize],
    schedule: S,
    sampler: Sgld,
    burn_in: u64,
}

impl<'a, E: Example, P: Prior, S: Schedule, M: Accumulator, const CAP: usize>
    OnlineSgld<'a, E, P, S, M, CAP>
{
    /// A learner starting at `theta` with the window in `examples` (emptied first);
    /// `scratch` as for [`Sgld::init`]; `moments` an empty estimator of `theta.len()`
    /// components; `batch` sets the mini-batch size (fewer while the window holds fewer
    /// examples). Arrivals after the first `burn_in` enter the estimator with weight εₜ.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        examples: &'a mut Examples<E, CAP>,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
        moments: M,
        batch: &'a mut [usize],
        prior: P,
        schedule: S,
        sampler: Sgld,
        burn_in: u64,
    ) -> Result<Self, Error> {
        if batch.is_empty() {
            return Err(Error::EmptyBatch);
        }
        if CAP == 0 {
            return Err(Error::Empty {
                what: "window capacity",
            });
        }
        let d = theta.len();
        let state = Sgld::init(theta, scratch)?;
        Ok(Self {
            window: Window::new(examples, d, prior),
            state,
            moments,
            batch,
            schedule,
            sampler,
            burn_in,
        })
    }

    /// Takes one example: checks it (an invalid one is refused and changes nothing), adds
    /// it to the window, and runs one SGLD step on a batch drawn from the window.
    pub fn push<R: Rng + ?Sized>(&mut self, example: E, rng: &mut R) -> Result<StepInfo, Error> {
        self.window.push(example)?;
        let n = self.batch.len().min(self.window.len());
        let batch = &mut self.batch[..n];
        sample_batch(rng, self.window.len(), batch)?;
        let t = self.window.seen() - 1;
        let eps = self.schedule.step_size(t);
        // The batch was just drawn from the window: only the step size is checked.
        crate::error::check_step_size_f32(eps)?;
        let info =
            self.sampler
                .step_unchecked_batch(&mut self.state, &self.window, batch, eps, rng);
        if t >= self.burn_in && !info.non_finite {
            // The step has just checked that θ is finite.
            self.moments.accumulate_finite(eps, self.state.theta())?;
        }
        Ok(info)
    }

    /// The current position θ.
    pub fn theta(&self) -> &[f32] {
        self.state.theta()
    }

    /// The posterior estimates so far (eq. 11).
    pub fn moments(&self) -> &M {
        &self.moments
    }

    /// The window.
    pub fn window(&self) -> &Window<'a, E, P, CAP> {
        &self.window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `get` reads the window in arrival order, across the deque's wrap, as iterating does.
    #[test]
    fn the_window_is_read_oldest_first_across_the_wrap() {
        let mut examples = Examples::<SparseBinaryExample<2, u8>, 4>::new();
        let mut window = Window::new(&mut examples, 8, crate::models::Gaussian::new(1.0).unwrap());
        for j in 0..6u8 {
            window
                .push(SparseBinaryExample::narrow(&[j], 1.0).unwrap())
                .unwrap();
            for i in 0..5 {
                let want = window.examples.iter().nth(i).map(|e| e.indices().to_vec());
                assert_eq!(window.get(i).map(|e| e.indices().to_vec()), want, "{j} {i}");
            }
        }
        assert_eq!(window.get(0).unwrap().indices(), &[2]);
    }

    /// A row read without bounds checks gives what the checked kernels give, and a slice
    /// too short for its largest index takes the checked path, which skips the indices
    /// out of range.
    #[test]
    fn sparse_rows_read_in_bounds_or_skip_what_is_out_of_range() {
        let ex = SparseBinaryExample::<8, u8>::narrow(&[9, 2, 30, 5], -1.0).unwrap();
        let theta: [f32; 31] = core::array::from_fn(|i| i as f32 * 0.5 - 3.0);
        assert_eq!(ex.margin(&theta), imp::sparse_dot(ex.indices(), &theta));
        assert_eq!(ex.margin(&theta), 1.5 + -2.0 + 12.0 + -0.5);
        // θ of 30: index 30 is out of range and skipped.
        assert_eq!(ex.margin(&theta[..30]), 1.5 + -2.0 + -0.5);
        let mut g = [0.0f32; 31];
        ex.add_scaled(2.0, &mut g);
        let mut short = [0.0f32; 10];
        ex.add_scaled(2.0, &mut short);
        for j in 0..31 {
            let want = if [9, 2, 30, 5].contains(&j) { 2.0 } else { 0.0 };
            assert_eq!(g[j], want, "full, {j}");
            if j < 10 {
                assert_eq!(short[j], want, "short, {j}");
            }
        }
        // No index: the row is empty for any θ, the empty one included.
        let none = SparseBinaryExample::<8, u8>::narrow(&[], 1.0).unwrap();
        assert_eq!((none.margin(&theta), none.margin(&[])), (0.0, 0.0));
    }
}
