//! Logistic regression `p(y|x, β) = σ(y βᵀx)`, `y ∈ {−1, +1}` (§5.2), on dense rows or on
//! sparse binary rows (as index lists or as bitmaps).
//!
//! Per-example gradient (§5.2): `∇_β log p(yᵢ|xᵢ) = σ(−yᵢ βᵀxᵢ) yᵢ xᵢ`. A bias is an
//! ordinary feature that is 1 in every row (a column of ones, or one more index).

use super::{DenseRows, Design, MAX_INTERLEAVED, Model, Prior, interleaved_parts};
use crate::error::{Error, check_len};
use crate::kernels::check_bitmap;
use crate::kernels::{SparseIndex, imp};
use crate::math::log_sigmoid;

fn check_labels(y: &[f32]) -> Result<(), Error> {
    super::check_labels(y, "logistic labels must be -1 or +1")
}

/// Logistic regression on dense rows: `x` is `N × d` row-major, `y` holds `±1`; or any
/// [`DenseRows`] ([`LogisticDense::from_rows`]): rows read in place from larger records,
/// an intercept without a column of ones.
#[derive(Debug, Clone, Copy)]
pub struct LogisticDense<'a, P> {
    rows: DenseRows<'a>,
    y: &'a [f32],
    prior: P,
}

impl<'a, P: Prior> LogisticDense<'a, P> {
    /// Checks `x.len() == y.len()·dim`, finiteness of `x`, labels in `{−1, +1}`, `N ≥ 1`
    /// and `dim ≥ 1`.
    ///
    /// ```
    /// use sgld::models::{Laplace, LogisticDense, Model};
    /// let x = [1.0, 0.5, 1.0, -2.0]; // two rows: (1, 0.5), (1, -2)
    /// let y = [1.0, -1.0];
    /// let m = LogisticDense::new(&x, &y, 2, Laplace::new(1.0)?)?;
    /// assert_eq!((m.len(), m.dim()), (2, 2));
    /// # Ok::<(), sgld::Error>(())
    /// ```
    pub fn new(x: &'a [f32], y: &'a [f32], dim: usize, prior: P) -> Result<Self, Error> {
        if y.is_empty() {
            return Err(Error::Empty { what: "data set" });
        }
        if dim == 0 {
            return Err(Error::Empty {
                what: "feature dimension",
            });
        }
        // The length against the labels here, the values' finiteness by `DenseRows`.
        let values = y.len().checked_mul(dim).ok_or(Error::InvalidParameter {
            what: "matrix dimensions overflow usize",
        })?;
        check_len("x", values, x.len())?;
        Self::from_rows(DenseRows::new(x, dim)?, y, prior)
    }

    /// Logistic regression on `rows`, one label a row. Checks `rows.len() == y.len()`,
    /// labels in `{−1, +1}`, `N ≥ 1` and a parameter at least.
    ///
    /// ```
    /// use sgld::models::{DenseRows, Gaussian, LogisticDense, Model};
    /// // Records (x₁, x₂, label as 0/1), and the labels as ±1 beside them.
    /// let records = [0.5, 1.0, 1.0, -2.0, 0.25, 0.0];
    /// let y = [1.0, -1.0];
    /// let rows = DenseRows::strided(&records, 2, 3, 0)?.with_intercept();
    /// let m = LogisticDense::from_rows(rows, &y, Gaussian::new(1.0)?)?;
    /// assert_eq!(m.dim(), 3); // β₁, β₂ and the intercept
    /// assert_eq!(m.margin(&[1.0, 2.0, 0.5], 1), -2.0 + 0.5 + 0.5);
    /// # Ok::<(), sgld::Error>(())
    /// ```
    pub fn from_rows(rows: DenseRows<'a>, y: &'a [f32], prior: P) -> Result<Self, Error> {
        super::glm::check_rows(&rows, y)?;
        check_labels(y)?;
        Ok(Self { rows, y, prior })
    }

    fn row(&self, i: usize) -> &'a [f32] {
        self.rows.row(i)
    }

    /// The linear predictor `βᵀxᵢ` of row `i`, the intercept included (0 for an index
    /// past the end).
    pub fn margin(&self, theta: &[f32], i: usize) -> f32 {
        self.rows.dot(i, theta)
    }
}

impl<P: Prior> Model for LogisticDense<'_, P> {
    fn dim(&self) -> usize {
        self.rows.dim()
    }
    fn len(&self) -> usize {
        self.y.len()
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        self.prior.add_grad(theta, grad);
    }
    /// In chunks of sixteen rows: their margins, then `yᵢ σ(−yᵢ βᵀxᵢ)` in one vector
    /// pass (`LogisticDense::chunks`), then each row added.
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        self.chunks(theta, batch, |t| {
            for k in 0..t.len {
                self.rows.add_row(t.y[k] * t.w[k], t.rows[k], grad);
            }
        });
    }
    /// Each row's lines and its label.
    #[inline]
    fn prefetch(&self, batch: &[usize]) {
        prefetch_rows(batch, self.y, |i| self.row(i));
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        self.prior.log_density(theta)
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        // −0.0, where `Iterator::sum` of floats starts: an empty batch gives its bits.
        let mut sum = -0.0f64;
        self.chunks(theta, batch, |t| {
            sum = t.ls[..t.len].iter().fold(sum, |s, &l| s + l as f64);
        });
        sum
    }
    /// One read of each row: its margin gives both terms.
    fn add_log_lik_grad_and_value(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) -> f64 {
        let mut sum = -0.0f64;
        self.chunks(theta, batch, |t| {
            for k in 0..t.len {
                sum += t.ls[k] as f64;
                self.rows.add_row(t.y[k] * t.w[k], t.rows[k], grad);
            }
        });
        sum
    }
    /// One read of each row: its two margins give the difference of its weights.
    fn log_lik_grad_difference(
        &self,
        theta: &[f32],
        centre: &[f32],
        batch: &[usize],
        out: &mut [f32],
    ) {
        crate::kernels::zero(out);
        self.chunks(theta, batch, |t| {
            let u0: [f32; ROWS] = core::array::from_fn(|k| {
                if k < t.len {
                    t.y[k] * self.rows.dot_row(t.rows[k], centre)
                } else {
                    0.0
                }
            });
            let (mut ls0, mut w0) = ([0.0f32; ROWS], [0.0f32; ROWS]);
            imp::log_sigmoid_pair(&u0, &mut ls0, &mut w0);
            for (k, &w0) in w0[..t.len].iter().enumerate() {
                self.rows.add_row(t.y[k] * (t.w[k] - w0), t.rows[k], out);
            }
        });
    }
}

/// A chunk of at most [`ROWS`] rows of a batch for [`LogisticDense`]: its rows in the
/// batch's order (an index past the end left out), their labels, and `ln σ(uₖ)` and
/// `σ(−uₖ)` of their signed margins `uₖ = yₖ βᵀxₖ`.
struct DenseTerms<'a> {
    len: usize,
    rows: [&'a [f32]; ROWS],
    y: [f32; ROWS],
    ls: [f32; ROWS],
    w: [f32; ROWS],
}

impl<'a, P: Prior> LogisticDense<'a, P> {
    /// `f` of each chunk of sixteen rows of the batch ([`DenseTerms`]): the rows'
    /// margins one by one, then their log-sigmoids and weights in one vector pass.
    #[inline(always)]
    fn chunks(&self, theta: &[f32], batch: &[usize], mut f: impl FnMut(&DenseTerms<'a>)) {
        for chunk in batch.chunks(ROWS) {
            let mut t = DenseTerms {
                len: 0,
                rows: [&[]; ROWS],
                y: [0.0; ROWS],
                ls: [0.0; ROWS],
                w: [0.0; ROWS],
            };
            let mut u = [0.0f32; ROWS];
            for &i in chunk {
                let Some(&y) = self.y.get(i) else { continue };
                let row = self.row(i);
                (t.rows[t.len], t.y[t.len]) = (row, y);
                u[t.len] = y * self.rows.dot_row(row, theta);
                t.len += 1;
            }
            imp::log_sigmoid_pair(&u, &mut t.ls, &mut t.w);
            f(&t);
        }
    }
}

/// Sparse binary rows in compressed-row form: row `i` has value 1 at the feature indices
/// `indices[offsets[i]..offsets[i+1]]` (0-based) and 0 elsewhere — LIBSVM data such as
/// a9a, whose values are all 1.
///
/// The indices are `u32` by default, or `u8` / `u16` ([`SparseIndex`]) when the features
/// fit: rows are drawn at random, and narrower rows keep more of a data set in cache
/// (a9a's 32,561 rows are 1.8 MB as `u32` and 0.46 MB as `u8`).
///
/// ```
/// use sgld::models::SparseRows;
/// let offsets = [0, 2, 3]; // two rows: features {0, 3} and {1}
/// let rows = SparseRows::new(&offsets, &[0, 3, 1], 4)?;
/// assert_eq!(rows.row(1), &[1]);
/// let narrow: [u8; 3] = [0, 3, 1];
/// let rows = SparseRows::narrow(&offsets, &narrow, 4)?;
/// assert_eq!(rows.row(0), &[0, 3]);
/// assert!(SparseRows::narrow(&offsets, &narrow, 3).is_err()); // index 3 is not < 3
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SparseRows<'a, I = u32> {
    offsets: &'a [usize],
    indices: &'a [I],
    dim: usize,
}

impl<'a> SparseRows<'a> {
    /// Checks `offsets` (length `N + 1`, starting at 0, non-decreasing, ending at
    /// `indices.len()`) and every index `< dim`.
    pub fn new(offsets: &'a [usize], indices: &'a [u32], dim: usize) -> Result<Self, Error> {
        SparseRows::narrow(offsets, indices, dim)
    }
}

impl<'a, I: SparseIndex> SparseRows<'a, I> {
    /// [`SparseRows::new`] for indices of any [`SparseIndex`] type (`u8`, `u16`, `u32`),
    /// with the same checks.
    pub fn narrow(offsets: &'a [usize], indices: &'a [I], dim: usize) -> Result<Self, Error> {
        if offsets.len() < 2 {
            return Err(Error::Empty {
                what: "sparse rows",
            });
        }
        if offsets.first() != Some(&0)
            || offsets.last() != Some(&indices.len())
            || offsets.windows(2).any(|w| w[0] > w[1])
        {
            return Err(Error::InvalidParameter {
                what: "sparse row offsets must start at 0, never decrease and end at indices.len()",
            });
        }
        crate::kernels::check_indices(indices, dim)?;
        Ok(Self {
            offsets,
            indices,
            dim,
        })
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Never true for rows built by [`SparseRows::new`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of features.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of indices, all rows together.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }

    /// The rows' mean count of indices, rounded up (a model's
    /// [`row_width`](Model::row_width)).
    pub fn mean_width(&self) -> usize {
        self.nnz().div_ceil(self.len().max(1))
    }

    /// The non-zero feature indices of row `i` (empty past the end).
    pub fn row(&self, i: usize) -> &'a [I] {
        let (a, b) = self.extent(i);
        self.indices.get(a..b).unwrap_or(&[])
    }

    /// Where row `i`'s indices start and end (`(0, 0)` past the end).
    pub(crate) fn extent(&self, i: usize) -> (usize, usize) {
        match (
            self.offsets.get(i),
            i.checked_add(1).and_then(|j| self.offsets.get(j)),
        ) {
            (Some(&a), Some(&b)) => (a, b),
            _ => (0, 0),
        }
    }
}

/// [`Model::prefetch`] for a model with a row and a label per data item: the lines of
/// each row of the batch and of its label (an index past the end asks for nothing).
#[inline(always)]
fn prefetch_rows<'a, T: 'a>(batch: &[usize], y: &[f32], row: impl Fn(usize) -> &'a [T]) {
    for &i in batch {
        crate::kernels::prefetch(row(i));
        crate::kernels::prefetch(y.get(i..=i).unwrap_or(&[]));
    }
}

/// Rows per chunk of the sparse gradient (one SIMD vector of weights).
const ROWS: usize = crate::kernels::LANES;

/// `Σ log σ(yᵢ zᵢ)` over the batch in f64, from the rows' margins `zᵢ` (an index past
/// the end adds nothing).
fn log_lik(y: &[f32], batch: &[usize], margin: impl Fn(usize) -> f32) -> f64 {
    batch
        .iter()
        .filter_map(|&i| Some(log_sigmoid(*y.get(i)? * margin(i)) as f64))
        .sum()
}

/// The weights `s yₖ σ(−yₖ zₖ)` of a chunk's rows from their labels and margins
/// `zₖ = βᵀxₖ`, all sixteen lanes in one vector pass (a lane without a row has `y = 0`:
/// weight 0). `s yₖ` is exact (`yₖ = ±1`), so taking it before the margins arrive
/// leaves one multiply after the sigmoid and rounds as `(σ·yₖ)·s` does.
#[inline(always)]
fn weights(y: &[f32; ROWS], margins: &[f32; ROWS], s: f32) -> [f32; ROWS] {
    let sy = y.map(|yk| s * yk);
    let z: [f32; ROWS] = core::array::from_fn(|k| -y[k] * margins[k]);
    let mut c = [0.0f32; ROWS];
    imp::sigmoid(&z, &mut c);
    for (ck, &syk) in c.iter_mut().zip(&sy) {
        *ck *= syk;
    }
    c
}

/// The labels of a chunk of at most [`ROWS`] rows; 0 for a lane without a row or an
/// index past the end (its terms then add nothing).
#[inline(always)]
fn chunk_labels(y: &[f32], chunk: &[usize]) -> [f32; ROWS] {
    core::array::from_fn(|k| chunk.get(k).and_then(|&i| y.get(i)).copied().unwrap_or(0.0))
}

/// `a − b`, lane by lane: a chunk's weights at θ less those at the centre.
#[inline(always)]
fn difference(a: [f32; ROWS], b: [f32; ROWS]) -> [f32; ROWS] {
    core::array::from_fn(|k| a[k] - b[k])
}

/// Logistic regression on sparse binary rows (indices of any [`SparseIndex`] type).
#[derive(Debug, Clone, Copy)]
pub struct LogisticSparse<'a, P, I = u32> {
    rows: SparseRows<'a, I>,
    y: &'a [f32],
    prior: P,
}

impl<'a, P: Prior, I: SparseIndex> LogisticSparse<'a, P, I> {
    /// Checks that there is one label (`±1`) per row and at least one feature.
    pub fn new(rows: SparseRows<'a, I>, y: &'a [f32], prior: P) -> Result<Self, Error> {
        check_len("y", rows.len(), y.len())?;
        if rows.dim() == 0 {
            return Err(Error::Empty {
                what: "feature dimension",
            });
        }
        check_labels(y)?;
        Ok(Self { rows, y, prior })
    }

    /// The rows.
    pub fn rows(&self) -> SparseRows<'a, I> {
        self.rows
    }

    /// The linear predictor `βᵀxᵢ` of row `i`.
    pub fn margin(&self, theta: &[f32], i: usize) -> f32 {
        imp::sparse_dot(self.rows.row(i), theta)
    }

    /// The rows and labels of a chunk of at most [`ROWS`] indices: an index past the end
    /// (and a lane past the chunk) gets y = 0 and an empty row, which add nothing.
    #[inline(always)]
    fn chunk(&self, chunk: &[usize]) -> ([&'a [I]; ROWS], [f32; ROWS]) {
        let mut rows: [&[I]; ROWS] = [&[]; ROWS];
        let mut y = [0.0f32; ROWS];
        for (k, &i) in chunk.iter().enumerate().take(ROWS) {
            y[k] = self.y.get(i).copied().unwrap_or(0.0);
            rows[k] = self.rows.row(i);
        }
        (rows, y)
    }

    /// [`Model::add_log_lik_grads_interleaved`] for `K` points: each row's indices are
    /// read once, and each index gathers the `K` points' coordinates and scatters their
    /// `K` weights as one contiguous run (`false` where the lengths do not fit).
    fn interleaved<const K: usize>(
        &self,
        thetas: &[f32],
        batch: &[usize],
        grads: &mut [f32],
        values: &mut [f64],
    ) -> bool {
        let Some((th, g, mut values)) =
            interleaved_parts::<K>(self.rows.dim(), thetas, grads, values)
        else {
            return false;
        };
        for chunk in batch.chunks(ROWS) {
            let (rows, y) = self.chunk(chunk);
            // The margins, point by point: `z[c][r] = θ_cᵀx_r`.
            let mut z = [[0.0f32; ROWS]; K];
            for (r, row) in rows.iter().enumerate().take(chunk.len()) {
                let mut sum = [0.0f32; K];
                for &j in *row {
                    let t = &th[j.index()];
                    for c in 0..K {
                        sum[c] += t[c];
                    }
                }
                for c in 0..K {
                    z[c][r] = sum[c];
                }
            }
            let w: [[f32; ROWS]; K] = core::array::from_fn(|c| weights(&y, &z[c], 1.0));
            if let Some(values) = values.as_deref_mut() {
                for (r, &i) in chunk.iter().enumerate() {
                    if let Some(&yi) = self.y.get(i) {
                        for c in 0..K {
                            values[c] += log_sigmoid(yi * z[c][r]) as f64;
                        }
                    }
                }
            }
            for (r, row) in rows.iter().enumerate().take(chunk.len()) {
                let wr: [f32; K] = core::array::from_fn(|c| w[c][r]);
                for &j in *row {
                    let gj = &mut g[j.index()];
                    for c in 0..K {
                        gj[c] += wr[c];
                    }
                }
            }
        }
        true
    }

    /// [`Model::add_log_lik_grad`]'s pass, handing `row(i, margin)` each row's margin
    /// in the batch's order.
    #[inline(always)]
    fn add_chunks(
        &self,
        theta: &[f32],
        batch: &[usize],
        grad: &mut [f32],
        mut row: impl FnMut(usize, f32),
    ) {
        self.add_weighted(batch, grad, |chunk, rows, y| {
            let mut z = [0.0f32; ROWS];
            for (k, &i) in chunk.iter().enumerate() {
                z[k] = imp::sparse_dot(rows[k], theta);
                row(i, z[k]);
            }
            weights(y, &z, 1.0)
        });
    }

    /// `grad += Σ cᵢ xᵢ` over the batch in chunks of sixteen rows, `weigh(chunk, rows,
    /// labels)` giving a chunk's weights: every row's label and extent, a touch of every
    /// row's first index (so the rows' cache misses overlap), the weights, then the
    /// scatter-adds.
    #[inline(always)]
    fn add_weighted(
        &self,
        batch: &[usize],
        grad: &mut [f32],
        mut weigh: impl FnMut(&[usize], &[&[I]; ROWS], &[f32; ROWS]) -> [f32; ROWS],
    ) {
        for chunk in batch.chunks(ROWS) {
            let (rows, y) = self.chunk(chunk);
            // Touch every row's first index before any gather: these loads do not depend
            // on each other, so the rows' cache misses overlap instead of arriving one row
            // at a time behind each dot product (`black_box` keeps the unused loads).
            core::hint::black_box(
                rows.iter()
                    .fold(0usize, |t, r| t ^ r.first().map_or(0, |&j| j.index())),
            );
            let c = weigh(chunk, &rows, &y);
            for k in 0..chunk.len() {
                imp::sparse_axpy(c[k], rows[k], grad);
            }
        }
    }
}

impl<P: Prior, I: SparseIndex> Model for LogisticSparse<'_, P, I> {
    fn dim(&self) -> usize {
        self.rows.dim()
    }
    fn len(&self) -> usize {
        self.y.len()
    }
    /// The rows' mean count of indices, rounded up.
    fn row_width(&self) -> usize {
        self.rows.mean_width()
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        self.prior.add_grad(theta, grad);
    }
    /// In chunks of sixteen rows: every row's label and extent, a touch of every row's
    /// first index (so the rows' cache misses overlap), every row's margin, the weights
    /// `yᵢ σ(−yᵢ βᵀxᵢ)` in one vector pass, then the scatter-adds.
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        self.add_chunks(theta, batch, grad, |_, _| {});
    }
    /// Eight: one read of each row's indices serves them all.
    fn interleaved_points(&self) -> usize {
        MAX_INTERLEAVED
    }
    /// One read of each row's indices for up to eight points (chains in lockstep).
    fn add_log_lik_grads_interleaved(
        &self,
        thetas: &[f32],
        k: usize,
        batch: &[usize],
        grads: &mut [f32],
        values: &mut [f64],
    ) -> bool {
        per_count!(k, self.interleaved(thetas, batch, grads, values))
    }
    /// Each row's indices and its label (the row's extent is read to find them).
    #[inline]
    fn prefetch(&self, batch: &[usize]) {
        prefetch_rows(batch, self.y, |i| self.rows.row(i));
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        self.prior.log_density(theta)
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        log_lik(self.y, batch, |i| self.margin(theta, i))
    }
    /// The gradient's pass, each row's `log σ(yᵢ βᵀxᵢ)` taken from the margin it
    /// computes (a full-data pass reads every row once, not twice).
    fn add_log_lik_grad_and_value(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) -> f64 {
        // −0.0, where `Iterator::sum` of floats starts: an empty batch gives its bits.
        let mut sum = -0.0f64;
        self.add_chunks(theta, batch, grad, |i, z| {
            if let Some(&y) = self.y.get(i) {
                sum += log_sigmoid(y * z) as f64;
            }
        });
        sum
    }
    /// One read of each row: its two margins give the difference of its weights.
    fn log_lik_grad_difference(
        &self,
        theta: &[f32],
        centre: &[f32],
        batch: &[usize],
        out: &mut [f32],
    ) {
        crate::kernels::zero(out);
        self.add_weighted(batch, out, |chunk, rows, y| {
            let (mut z, mut z0) = ([0.0f32; ROWS], [0.0f32; ROWS]);
            for k in 0..chunk.len() {
                z[k] = imp::sparse_dot(rows[k], theta);
                z0[k] = imp::sparse_dot(rows[k], centre);
            }
            difference(weights(y, &z, 1.0), weights(y, &z0, 1.0))
        });
    }
}

/// Binary rows stored as bitmaps: row `i` is the `⌈dim/16⌉` words
/// `words[i·w..(i+1)·w]` (`w` = [`BitRows::words_per_row`]), and feature `j` is 1 when
/// bit `j % 16` of its word `j / 16` is set.
///
/// For data sets of a few hundred features, such as a9a's 124, a bitmap is about as
/// small as an index list (16 bytes a9a row against its 14 `u8` indices), and a batch
/// of bitmap rows is gathered and scattered with masked vector adds, 16 features at a
/// time, instead of one load or store per feature ([`crate::kernels::bitmap_dots`]).
///
/// ```
/// use sgld::models::{BitRows, SparseRows};
/// let offsets = [0, 2, 3]; // two rows: features {0, 3} and {17}
/// let sparse = SparseRows::new(&offsets, &[0, 3, 17], 20)?;
/// let mut words = [0u16; 4]; // two rows of ⌈20/16⌉ = 2 words
/// BitRows::fill_from_sparse(&sparse, &mut words)?;
/// assert_eq!(words, [0b1001, 0, 0, 0b10]);
/// let rows = BitRows::new(&words, 20)?;
/// assert_eq!((rows.len(), rows.row(1)), (2, &[0, 0b10][..]));
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct BitRows<'a> {
    words: &'a [u16],
    dim: usize,
}

impl<'a> BitRows<'a> {
    /// Words in each row of `dim` features: `⌈dim/16⌉`.
    pub const fn words_per_row(dim: usize) -> usize {
        dim.div_ceil(16)
    }

    /// Checks `dim ≥ 1`, at least one row, a whole number of rows in `words`, and no
    /// bit set at or past `dim` in any row.
    pub fn new(words: &'a [u16], dim: usize) -> Result<Self, Error> {
        if dim == 0 {
            return Err(Error::Empty {
                what: "feature dimension",
            });
        }
        let w = Self::words_per_row(dim);
        if words.is_empty() {
            return Err(Error::Empty { what: "bit rows" });
        }
        if !words.len().is_multiple_of(w) {
            return Err(Error::InvalidParameter {
                what: "bit rows: the number of words must be a multiple of the words per row",
            });
        }
        for row in words.chunks_exact(w) {
            check_bitmap(row, dim)?;
        }
        Ok(Self { words, dim })
    }

    /// Writes the bitmaps of sparse rows into `out` (`rows.len()` rows of
    /// [`BitRows::words_per_row`]`(rows.dim())` words), for [`BitRows::new`] to read.
    pub fn fill_from_sparse<I: SparseIndex>(
        rows: &SparseRows<'_, I>,
        out: &mut [u16],
    ) -> Result<(), Error> {
        let w = Self::words_per_row(rows.dim());
        let want = rows.len().checked_mul(w).ok_or(Error::InvalidParameter {
            what: "bit rows: too many words",
        })?;
        check_len("bit rows", want, out.len())?;
        for (i, row) in out.chunks_exact_mut(w).enumerate() {
            row.fill(0);
            // Sparse rows were checked to hold indices below `dim`.
            for j in rows.row(i).iter().map(|j| j.index()) {
                if let Some(word) = row.get_mut(j / 16) {
                    *word |= 1 << (j % 16);
                }
            }
        }
        Ok(())
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.words.len() / self.stride()
    }

    /// Words in each row.
    #[inline]
    pub fn stride(&self) -> usize {
        Self::words_per_row(self.dim)
    }

    /// The words of every row, one row after another.
    pub fn words(&self) -> &'a [u16] {
        self.words
    }

    /// Never true for rows built by [`BitRows::new`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of features.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The words of row `i` (empty past the end).
    #[inline]
    pub fn row(&self, i: usize) -> &'a [u16] {
        let w = Self::words_per_row(self.dim);
        i.checked_mul(w)
            .and_then(|a| self.words.get(a..a.checked_add(w)?))
            .unwrap_or(&[])
    }
}

/// Logistic regression on binary rows stored as bitmaps ([`BitRows`]): the model of
/// [`LogisticSparse`] on the same data, with its batch's dot products and scatter-adds
/// done sixteen features at a time.
///
/// ```
/// use sgld::models::{BitRows, Laplace, LogisticBits, LogisticSparse, Model, SparseRows};
/// let offsets = [0, 2, 3];
/// let sparse = SparseRows::new(&offsets, &[0, 3, 1], 4)?;
/// let mut words = [0u16; 2];
/// BitRows::fill_from_sparse(&sparse, &mut words)?;
/// let y = [1.0, -1.0];
/// let bits = LogisticBits::new(BitRows::new(&words, 4)?, &y, Laplace::new(1.0)?)?;
/// let by_index = LogisticSparse::new(sparse, &y, Laplace::new(1.0)?)?;
/// let theta = [0.5, -0.25, 1.0, 2.0];
/// let (mut g1, mut g2) = ([0.0; 4], [0.0; 4]);
/// bits.add_log_lik_grad(&theta, &[0, 1, 1], &mut g1);
/// by_index.add_log_lik_grad(&theta, &[0, 1, 1], &mut g2);
/// assert_eq!(g1, g2);
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct LogisticBits<'a, P> {
    rows: BitRows<'a>,
    y: &'a [f32],
    prior: P,
}

impl<'a, P: Prior> LogisticBits<'a, P> {
    /// Checks that there is one label (`±1`) per row.
    pub fn new(rows: BitRows<'a>, y: &'a [f32], prior: P) -> Result<Self, Error> {
        check_len("y", rows.len(), y.len())?;
        check_labels(y)?;
        Ok(Self { rows, y, prior })
    }

    /// The rows.
    pub fn rows(&self) -> BitRows<'a> {
        self.rows
    }

    /// The linear predictor `βᵀxᵢ` of row `i` (0 past the end).
    pub fn margin(&self, theta: &[f32], i: usize) -> f32 {
        imp::bitmap_dots16(self.rows.words, self.rows.stride(), &[i], theta)[0]
    }

    /// `grad += s Σ_{i ∈ batch} ∇ log p(xᵢ|θ)`, in chunks of sixteen rows: the margins
    /// as one vector ([`bitmap_dots16`](imp::bitmap_dots16)), the weights
    /// `s yᵢ σ(−yᵢ βᵀxᵢ)` in one vector pass, the scatter-adds in one
    /// [`bitmap_axpys`](imp::bitmap_axpys) pass.
    /// `side`, if any, runs once: after the first chunk's margins (or at the end of an
    /// empty batch).
    #[inline]
    fn add_scaled_log_lik_grad(
        &self,
        theta: &[f32],
        batch: &[usize],
        s: f32,
        grad: &mut [f32],
        mut side: Option<&mut dyn FnMut()>,
    ) {
        let (table, stride) = (self.rows.words, self.rows.stride());
        for chunk in batch.chunks(ROWS) {
            let n = chunk.len();
            // An index past the end gets y = 0 (and the kernels a row of zeros): it adds
            // nothing.
            let y = chunk_labels(self.y, chunk);
            let z = imp::bitmap_dots16(table, stride, chunk, theta);
            if let Some(side) = side.take() {
                side();
            }
            let c = weights(&y, &z, s);
            imp::bitmap_axpys(&c[..n], table, stride, chunk, grad);
        }
        if let Some(side) = side {
            side();
        }
    }

    /// `grad = ∇log p(θ) + s·Σ_batch ∇log p(xᵢ|θ)`: the prior's gradient written first
    /// (it needs only θ), then the batch's terms, `side` run as
    /// [`add_scaled_log_lik_grad`](Self::add_scaled_log_lik_grad) runs it.
    #[inline(always)]
    fn write_scaled_grad(
        &self,
        theta: &[f32],
        batch: &[usize],
        s: f32,
        grad: &mut [f32],
        side: Option<&mut dyn FnMut()>,
    ) {
        self.prior.write_grad(theta, grad);
        self.add_scaled_log_lik_grad(theta, batch, s, grad, side);
    }
}

impl<P: Prior> Model for LogisticBits<'_, P> {
    fn dim(&self) -> usize {
        self.rows.dim()
    }
    fn len(&self) -> usize {
        self.y.len()
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        self.prior.add_grad(theta, grad);
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        self.add_scaled_log_lik_grad(theta, batch, 1.0, grad, None);
    }
    /// The prior's gradient first (it needs only θ, so it runs while the batch's
    /// margins are computed), then the batch's terms scaled as they are added.
    #[inline]
    fn scaled_grad(&self, theta: &[f32], batch: &[usize], s: f32, grad: &mut [f32]) {
        self.write_scaled_grad(theta, batch, s, grad, None);
    }
    /// `side` runs after the first sixteen rows' margins, before their weights: the
    /// weights' `exp` and division and the scatter-adds each wait for the step before,
    /// and work placed there runs in their shadow.
    #[inline]
    fn scaled_grad_overlapped(
        &self,
        theta: &[f32],
        batch: &[usize],
        s: f32,
        grad: &mut [f32],
        side: &mut dyn FnMut(),
    ) {
        self.write_scaled_grad(theta, batch, s, grad, Some(side));
    }
    /// Each row's words and its label.
    #[inline]
    fn prefetch(&self, batch: &[usize]) {
        prefetch_rows(batch, self.y, |i| self.rows.row(i));
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        self.prior.log_density(theta)
    }
    /// Sixteen rows' margins a chunk, as the gradient computes them.
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        let (table, stride) = (self.rows.words, self.rows.stride());
        let mut sum = 0.0f64;
        for chunk in batch.chunks(ROWS) {
            let z = imp::bitmap_dots16(table, stride, chunk, theta);
            self.add_chunk_log_lik(chunk, &z, &mut sum);
        }
        sum
    }
    /// Each chunk's margins once, for both its terms.
    fn add_log_lik_grad_and_value(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) -> f64 {
        let (table, stride) = (self.rows.words, self.rows.stride());
        let mut sum = 0.0f64;
        for chunk in batch.chunks(ROWS) {
            let z = imp::bitmap_dots16(table, stride, chunk, theta);
            self.add_chunk_log_lik(chunk, &z, &mut sum);
            let y = chunk_labels(self.y, chunk);
            let c = weights(&y, &z, 1.0);
            imp::bitmap_axpys(&c[..chunk.len()], table, stride, chunk, grad);
        }
        sum
    }
    /// Each chunk's rows read once for both margins.
    fn log_lik_grad_difference(
        &self,
        theta: &[f32],
        centre: &[f32],
        batch: &[usize],
        out: &mut [f32],
    ) {
        crate::kernels::zero(out);
        let (table, stride) = (self.rows.words, self.rows.stride());
        for chunk in batch.chunks(ROWS) {
            let z = imp::bitmap_dots16(table, stride, chunk, theta);
            let z0 = imp::bitmap_dots16(table, stride, chunk, centre);
            let y = chunk_labels(self.y, chunk);
            let c = difference(weights(&y, &z, 1.0), weights(&y, &z0, 1.0));
            imp::bitmap_axpys(&c[..chunk.len()], table, stride, chunk, out);
        }
    }
}

impl<P: Prior> LogisticBits<'_, P> {
    /// `sum += Σ log σ(yᵢ zᵢ)` over a chunk of at most [`ROWS`] rows with margins `z`,
    /// term by term.
    #[inline(always)]
    fn add_chunk_log_lik(&self, chunk: &[usize], z: &[f32; ROWS], sum: &mut f64) {
        // A lane without a row has y = 0; it is not added.
        let y = chunk_labels(self.y, chunk);
        let l: [f32; ROWS] = core::array::from_fn(|k| log_sigmoid(y[k] * z[k]));
        for (k, &lk) in l.iter().enumerate() {
            if y[k] != 0.0 {
                *sum += lk as f64;
            }
        }
    }
}
