//! Generalised linear models: a response [`Family`] and its link over rows of features
//! ([`Design`]), with any [`Prior`] — Poisson regression of counts with a log link,
//! probit regression of ±1 labels, and logistic regression ([`Logit`]) on rows the
//! logistic models do not take (sparse rows with values).
//!
//! With the linear predictor `ηᵢ = βᵀxᵢ`, the per-example gradient is
//! `∇_β log p(yᵢ|ηᵢ) = s(yᵢ, ηᵢ) xᵢ`, the family's score `s = ∂ log p/∂η` times the row:
//! one dot product and one scaled add a row, as for logistic regression (§5.2). A bias is
//! an ordinary feature that is 1 in every row.

use super::{
    BitRows, HALF_LN_TAU, MAX_INTERLEAVED, Model, Prior, SparseRows, check_matrix,
    interleaved_parts,
};
use crate::error::{Error, check_len};
use crate::kernels::{SparseIndex, imp};
use crate::math::{log_sigmoid_f64, sigmoid};

/// A response family with its link: how `log p(y|η)` depends on the linear predictor.
pub trait Family: Copy + core::fmt::Debug {
    /// Checks a response: `Ok` when `y` is in the family's support.
    fn check(y: f32) -> Result<(), Error>;
    /// The score `∂ log p(y|η)/∂η`.
    fn score(y: f32, eta: f32) -> f32;
    /// `log p(y|η)`, up to a term in `y` alone, in f64.
    fn log_lik(y: f64, eta: f64) -> f64;
}

/// ±1 labels with a logit link: `p(y|η) = σ(yη)`, score `y σ(−yη)` — logistic
/// regression (§5.2) on any [`Design`], e.g. sparse rows with values
/// ([`super::ValuedRows`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Logit;

impl Family for Logit {
    fn check(y: f32) -> Result<(), Error> {
        super::check_labels(
            core::slice::from_ref(&y),
            "logistic labels must be -1 or +1",
        )
    }
    #[inline]
    fn score(y: f32, eta: f32) -> f32 {
        y * sigmoid(-y * eta)
    }
    fn log_lik(y: f64, eta: f64) -> f64 {
        log_sigmoid_f64(y * eta)
    }
}

/// Counts with a log link: `y ~ Poisson(e^η)`, `log p(y|η) = yη − e^η − ln y!`, score
/// `y − e^η`. Responses are whole numbers `≥ 0`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Poisson;

impl Family for Poisson {
    fn check(y: f32) -> Result<(), Error> {
        if y >= 0.0 && y.is_finite() && y == libm::truncf(y) {
            Ok(())
        } else {
            Err(Error::InvalidParameter {
                what: "Poisson responses must be whole numbers >= 0",
            })
        }
    }
    #[inline]
    fn score(y: f32, eta: f32) -> f32 {
        y - crate::math::exp(eta)
    }
    /// `yη − e^η` (the `− ln y!` is left out).
    fn log_lik(y: f64, eta: f64) -> f64 {
        y * eta - libm::exp(eta)
    }
}

/// Binary labels `y ∈ {−1, +1}` with a probit link: `p(y|η) = Φ(yη)`, score
/// `y φ(η)/Φ(yη)`, computed without cancellation far into the tails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Probit;

/// Below this `t`, `Φ(t)` comes from the continued fraction instead of `erfc`.
const TAIL: f64 = -5.0;

/// `Φ(t)/φ(t)` for `t < TAIL` by Laplace's continued fraction of the Mills ratio,
/// `1/(x + 1/(x + 2/(x + 3/(x + …))))` with `x = −t`, to 40 terms (converged to f64's
/// precision for `x ≥ 5`).
fn mills_tail(t: f64) -> f64 {
    let x = -t;
    let mut r = x;
    for k in (1..=40).rev() {
        r = x + k as f64 / r;
    }
    1.0 / r
}

/// `φ(t)/Φ(t)`, the inverse Mills ratio, accurate for every `t` (`≈ −t` far left).
pub fn inverse_mills(t: f64) -> f64 {
    if t < TAIL {
        return 1.0 / mills_tail(t);
    }
    let phi = libm::exp(-0.5 * t * t - HALF_LN_TAU);
    phi / (0.5 * libm::erfc(-t * core::f64::consts::FRAC_1_SQRT_2))
}

/// `ln Φ(t)`, accurate for every `t`.
pub fn log_normal_cdf(t: f64) -> f64 {
    if t < TAIL {
        return -0.5 * t * t - HALF_LN_TAU + libm::log(mills_tail(t));
    }
    libm::log(0.5 * libm::erfc(-t * core::f64::consts::FRAC_1_SQRT_2))
}

impl Family for Probit {
    fn check(y: f32) -> Result<(), Error> {
        super::check_labels(core::slice::from_ref(&y), "probit labels must be -1 or +1")
    }
    #[inline]
    fn score(y: f32, eta: f32) -> f32 {
        // φ is even, so y φ(η)/Φ(yη) = y · φ(yη)/Φ(yη). Above the tail, f32 `erfc` and
        // `exp` (the score is an f32 gradient term; `Φ(t) ≥ 2.8·10⁻⁷` there, so the ratio
        // keeps f32's relative precision); in the tail, the continued fraction in f64.
        let t = y * eta;
        let r = if (t as f64) < TAIL {
            inverse_mills(t as f64) as f32
        } else {
            let phi = libm::expf(-0.5 * t * t - HALF_LN_TAU as f32);
            phi / (0.5 * libm::erfcf(-t * core::f32::consts::FRAC_1_SQRT_2))
        };
        y * r
    }
    fn log_lik(y: f64, eta: f64) -> f64 {
        log_normal_cdf(y * eta)
    }
}

/// Rows of features a GLM reads: row `i`'s dot product with θ and `grad += c xᵢ`.
pub trait Design {
    /// Number of rows.
    fn len(&self) -> usize;
    /// True when there are no rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Number of features.
    fn dim(&self) -> usize;
    /// `xᵢᵀθ` (0 for a row past the end).
    fn dot(&self, i: usize, theta: &[f32]) -> f32;
    /// `grad += c xᵢ` (nothing for a row past the end).
    fn add_scaled(&self, i: usize, c: f32, grad: &mut [f32]);
    /// Hints that row `i` is read next.
    fn prefetch(&self, i: usize) {
        let _ = i;
    }
    /// `out[k] = x_{rows[k]}ᵀθ` for a chunk of rows (at most sixteen; one vector pass for
    /// bitmap rows). The default takes them one by one.
    fn dots(&self, rows: &[usize], theta: &[f32], out: &mut [f32]) {
        for (o, &i) in out.iter_mut().zip(rows) {
            *o = self.dot(i, theta);
        }
    }
    /// `grad += Σₖ c[k] x_{rows[k]}` for a chunk of rows. The default takes them one by
    /// one.
    fn add_scaled_rows(&self, rows: &[usize], c: &[f32], grad: &mut [f32]) {
        for (&i, &ck) in rows.iter().zip(c) {
            self.add_scaled(i, ck, grad);
        }
    }
    /// The features an average row has that are not 0, at most [`dim`](Design::dim)
    /// (the GLM's [`Model::row_width`]). The default, `dim`, says every row is full.
    fn row_width(&self) -> usize {
        self.dim()
    }
    /// Whether the design has the interleaved kernels
    /// ([`dot_interleaved`](Design::dot_interleaved),
    /// [`add_scaled_interleaved`](Design::add_scaled_interleaved)) that give its GLMs
    /// [`Model::add_log_lik_grads_interleaved`]. The default has none.
    const INTERLEAVED: bool = false;
    /// Row `i`'s products with `K` points interleaved (`thetas[j][c]` is coordinate `j`
    /// of point `c`): `out[c] = xᵢᵀθ_c` (0 for a row past the end), each feature read
    /// once for all points. Called only where [`INTERLEAVED`](Design::INTERLEAVED); the
    /// default writes nothing.
    fn dot_interleaved<const K: usize>(&self, i: usize, thetas: &[[f32; K]], out: &mut [f32; K]) {
        let _ = (i, thetas, out);
    }
    /// `grads[j][c] += c[c]·x_ij` for `K` points interleaved, as
    /// [`dot_interleaved`](Design::dot_interleaved); the default adds nothing.
    fn add_scaled_interleaved<const K: usize>(
        &self,
        i: usize,
        c: &[f32; K],
        grads: &mut [[f32; K]],
    ) {
        let _ = (i, c, grads);
    }
}

/// `Σ v·θ_j` over a row's `(j, v)` for `K` interleaved points (a `j` outside `thetas`
/// adds nothing).
#[inline(always)]
pub(crate) fn sparse_dot_interleaved<const K: usize>(
    terms: impl Iterator<Item = (usize, f32)>,
    thetas: &[[f32; K]],
) -> [f32; K] {
    let mut acc = [0.0f32; K];
    for (j, v) in terms {
        if let Some(t) = thetas.get(j) {
            for c in 0..K {
                acc[c] += v * t[c];
            }
        }
    }
    acc
}

/// `grads[j][c] += c[c]·v` over a row's `(j, v)` (a `j` outside `grads` adds nothing).
#[inline(always)]
pub(crate) fn sparse_add_interleaved<const K: usize>(
    terms: impl Iterator<Item = (usize, f32)>,
    c: &[f32; K],
    grads: &mut [[f32; K]],
) {
    for (j, v) in terms {
        if let Some(g) = grads.get_mut(j) {
            for k in 0..K {
                g[k] += c[k] * v;
            }
        }
    }
}

/// Dense rows: `x` is `N × d` row-major; or, by [`DenseRows::strided`], rows read where
/// they lie in larger records (a response stored beside them); and, by
/// [`DenseRows::with_intercept`], an intercept that no column of ones holds.
///
/// ```
/// use sgld::models::{DenseRows, Design};
/// let rows = DenseRows::new(&[1.0, 2.0, 3.0, 4.0], 2)?; // (1, 2) and (3, 4)
/// assert_eq!(rows.len(), 2);
/// assert_eq!(rows.dot(1, &[1.0, 0.5]), 5.0);
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DenseRows<'a> {
    x: &'a [f32],
    /// Values a row.
    width: usize,
    /// Values from one row's start to the next's (at least `width`).
    stride: usize,
    /// Where the first row starts.
    offset: usize,
    /// Rows.
    len: usize,
    /// Whether the last parameter is an intercept.
    intercept: bool,
}

impl<'a> DenseRows<'a> {
    /// Checks that `x` holds whole rows of `dim ≥ 1` finite values.
    pub fn new(x: &'a [f32], dim: usize) -> Result<Self, Error> {
        if dim == 0 {
            return Err(Error::Empty {
                what: "feature dimension",
            });
        }
        check_matrix("x", x, x.len() / dim, dim)?;
        Ok(Self {
            x,
            width: dim,
            stride: dim,
            offset: 0,
            len: x.len() / dim,
            intercept: false,
        })
    }

    /// The rows of `width` values at `offset`, `offset + stride`, `offset + 2·stride`, …,
    /// as many as `x` holds whole: a `.npy` design stored with its response as the last
    /// column is `strided(x, d, d + 1, 0)`, with it first `strided(x, d, d + 1, 1)`.
    /// Checks `width ≥ 1`, `stride ≥ width` (rows do not overlap) and that the rows'
    /// values are finite; the values between rows are neither read nor checked.
    ///
    /// ```
    /// use sgld::models::{DenseRows, Design};
    /// // Records (x₁, x₂, label): the features read in place, an intercept added.
    /// let records = [0.5, 1.0, 1.0, -2.0, 0.25, 0.0];
    /// let rows = DenseRows::strided(&records, 2, 3, 0)?.with_intercept();
    /// assert_eq!((rows.len(), rows.dim()), (2, 3)); // β₁, β₂ and the intercept
    /// assert_eq!(rows.dot(1, &[1.0, 2.0, 0.5]), -2.0 + 0.5 + 0.5);
    /// let mut g = [0.0f32; 3];
    /// rows.add_scaled(1, 2.0, &mut g);
    /// assert_eq!(g, [-4.0, 0.5, 2.0]);
    /// # Ok::<(), sgld::Error>(())
    /// ```
    pub fn strided(
        x: &'a [f32],
        width: usize,
        stride: usize,
        offset: usize,
    ) -> Result<Self, Error> {
        let rows = Self::strided_prechecked(x, width, stride, offset)?;
        for i in 0..rows.len {
            crate::error::check_finite("x", rows.row(i))?;
        }
        Ok(rows)
    }

    /// [`strided`](Self::strided) for values a caller has checked finite already (a
    /// loader that names a bad value's row and column): the layout is checked, the
    /// values are not read, so a design is not read twice before the first step. A
    /// non-finite value left in gives non-finite gradients, which the samplers report;
    /// it cannot make a model panic.
    pub fn strided_prechecked(
        x: &'a [f32],
        width: usize,
        stride: usize,
        offset: usize,
    ) -> Result<Self, Error> {
        if width == 0 {
            return Err(Error::Empty {
                what: "feature dimension",
            });
        }
        if stride < width {
            return Err(Error::InvalidParameter {
                what: "dense rows overlap: their stride is smaller than their width",
            });
        }
        let len = match x
            .len()
            .checked_sub(offset)
            .and_then(|v| v.checked_sub(width))
        {
            Some(rest) => rest / stride + 1,
            None => 0,
        };
        Ok(Self {
            x,
            width,
            stride,
            offset,
            len,
            intercept: false,
        })
    }

    /// The same rows with an intercept: one more parameter, the last, which adds to every
    /// row's `xᵢᵀθ` as a column of ones would.
    pub fn with_intercept(self) -> Self {
        Self {
            intercept: true,
            ..self
        }
    }

    /// Row `i`'s values (empty past the end), the intercept's 1 not among them.
    pub fn row(&self, i: usize) -> &'a [f32] {
        if i >= self.len {
            return &[];
        }
        i.checked_mul(self.stride)
            .and_then(|a| a.checked_add(self.offset))
            .and_then(|a| self.x.get(a..a.checked_add(self.width)?))
            .unwrap_or(&[])
    }

    /// `xᵢᵀθ` from row `i`'s values, the intercept added.
    #[inline(always)]
    pub(crate) fn dot_row(&self, row: &[f32], theta: &[f32]) -> f32 {
        let z = imp::dot(row, theta);
        match self.intercept {
            true => z + theta.get(self.width).copied().unwrap_or(0.0),
            false => z,
        }
    }

    /// `grad += c xᵢ` from row `i`'s values, the intercept's entry included.
    #[inline(always)]
    pub(crate) fn add_row(&self, c: f32, row: &[f32], grad: &mut [f32]) {
        imp::axpy(c, row, grad);
        if self.intercept
            && let Some(g) = grad.get_mut(self.width)
        {
            *g += c;
        }
    }
}

impl Design for DenseRows<'_> {
    fn len(&self) -> usize {
        self.len
    }
    fn dim(&self) -> usize {
        self.width + self.intercept as usize
    }
    fn dot(&self, i: usize, theta: &[f32]) -> f32 {
        match i < self.len {
            true => self.dot_row(self.row(i), theta),
            false => 0.0,
        }
    }
    fn add_scaled(&self, i: usize, c: f32, grad: &mut [f32]) {
        if i < self.len {
            self.add_row(c, self.row(i), grad);
        }
    }
    fn prefetch(&self, i: usize) {
        crate::kernels::prefetch(self.row(i));
    }
}

/// Checks a model's rows against its responses: a row at least, a parameter at least, and
/// one response a row.
pub(crate) fn check_rows(rows: &impl Design, y: &[f32]) -> Result<(), Error> {
    if y.is_empty() {
        return Err(Error::Empty { what: "data set" });
    }
    if rows.dim() == 0 {
        return Err(Error::Empty {
            what: "feature dimension",
        });
    }
    check_len("y", rows.len(), y.len())
}

/// Bitmap rows: a chunk's dot products in one vector pass and its scaled adds in one
/// masked pass ([`crate::kernels::bitmap_dots`]), as logistic regression reads them.
impl Design for BitRows<'_> {
    fn len(&self) -> usize {
        BitRows::len(self)
    }
    fn dim(&self) -> usize {
        BitRows::dim(self)
    }
    fn dot(&self, i: usize, theta: &[f32]) -> f32 {
        imp::bitmap_dots16(self.words(), self.stride(), &[i], theta)[0]
    }
    fn add_scaled(&self, i: usize, c: f32, grad: &mut [f32]) {
        imp::bitmap_axpys(&[c], self.words(), self.stride(), &[i], grad);
    }
    fn prefetch(&self, i: usize) {
        crate::kernels::prefetch(self.row(i));
    }
    fn dots(&self, rows: &[usize], theta: &[f32], out: &mut [f32]) {
        imp::bitmap_dots(self.words(), self.stride(), rows, theta, out);
    }
    fn add_scaled_rows(&self, rows: &[usize], c: &[f32], grad: &mut [f32]) {
        imp::bitmap_axpys(c, self.words(), self.stride(), rows, grad);
    }
}

impl<I: SparseIndex> Design for SparseRows<'_, I> {
    const INTERLEAVED: bool = true;
    fn len(&self) -> usize {
        SparseRows::len(self)
    }
    /// The rows' mean count of indices, rounded up.
    fn row_width(&self) -> usize {
        self.mean_width()
    }
    fn dim(&self) -> usize {
        SparseRows::dim(self)
    }
    fn dot(&self, i: usize, theta: &[f32]) -> f32 {
        imp::sparse_dot(self.row(i), theta)
    }
    fn add_scaled(&self, i: usize, c: f32, grad: &mut [f32]) {
        imp::sparse_axpy(c, self.row(i), grad);
    }
    fn dot_interleaved<const K: usize>(&self, i: usize, thetas: &[[f32; K]], out: &mut [f32; K]) {
        *out = sparse_dot_interleaved(self.row(i).iter().map(|j| (j.index(), 1.0)), thetas);
    }
    fn add_scaled_interleaved<const K: usize>(
        &self,
        i: usize,
        c: &[f32; K],
        grads: &mut [[f32; K]],
    ) {
        sparse_add_interleaved(self.row(i).iter().map(|j| (j.index(), 1.0)), c, grads);
    }
    fn prefetch(&self, i: usize) {
        crate::kernels::prefetch(self.row(i));
    }
}

/// A generalised linear model: responses `y` of family `F` on the rows of `R`, prior `P`.
///
/// ```
/// use sgld::models::{DenseRows, Glm, Laplace, Model, Poisson};
/// let x = [1.0, 0.5, 1.0, -2.0]; // two rows with a bias column
/// let y = [3.0, 0.0]; // counts
/// let m = Glm::new(DenseRows::new(&x, 2)?, &y, Poisson, Laplace::new(1.0)?)?;
/// let mut g = [0.0f32; 2];
/// m.add_log_lik_grad(&[0.0, 0.0], &[0, 1], &mut g);
/// assert_eq!(g, [(3.0 - 1.0) + (0.0 - 1.0), 0.5 * 2.0 - 2.0 * -1.0]); // Σ (y − e^η) x
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Glm<'a, R, F, P> {
    rows: R,
    y: &'a [f32],
    family: F,
    prior: P,
}

impl<'a, R: Design, F: Family, P: Prior> Glm<'a, R, F, P> {
    /// Checks one response per row, each in the family's support, at least one row and
    /// one feature.
    pub fn new(rows: R, y: &'a [f32], family: F, prior: P) -> Result<Self, Error> {
        check_rows(&rows, y)?;
        y.iter().try_for_each(|&v| F::check(v))?;
        Ok(Self {
            rows,
            y,
            family,
            prior,
        })
    }

    /// The family.
    pub fn family(&self) -> F {
        self.family
    }

    /// The linear predictor `ηᵢ = βᵀxᵢ` of row `i` (0 past the end).
    pub fn eta(&self, theta: &[f32], i: usize) -> f32 {
        self.rows.dot(i, theta)
    }
}

impl<R: Design, F: Family, P: Prior> Model for Glm<'_, R, F, P> {
    fn dim(&self) -> usize {
        self.rows.dim()
    }
    fn len(&self) -> usize {
        self.y.len()
    }
    fn row_width(&self) -> usize {
        self.rows.row_width()
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        self.prior.add_grad(theta, grad);
    }
    /// In chunks of sixteen rows: the chunk's linear predictors, their scores, then the
    /// scaled adds (a row past the end adds nothing).
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        const CHUNK: usize = 16;
        for chunk in batch.chunks(CHUNK) {
            let mut eta = [0.0f32; CHUNK];
            self.rows.dots(chunk, theta, &mut eta[..chunk.len()]);
            let mut c = [0.0f32; CHUNK];
            for ((ck, &e), &i) in c.iter_mut().zip(&eta).zip(chunk) {
                if let Some(&y) = self.y.get(i) {
                    *ck = F::score(y, e);
                }
            }
            self.rows.add_scaled_rows(chunk, &c[..chunk.len()], grad);
        }
    }
    /// Each chunk's linear predictors at both points, then one scaled add of each row
    /// with the difference of its scores.
    fn log_lik_grad_difference(
        &self,
        theta: &[f32],
        centre: &[f32],
        batch: &[usize],
        out: &mut [f32],
    ) {
        const CHUNK: usize = 16;
        crate::kernels::zero(out);
        for chunk in batch.chunks(CHUNK) {
            let (mut eta, mut eta0) = ([0.0f32; CHUNK], [0.0f32; CHUNK]);
            self.rows.dots(chunk, theta, &mut eta[..chunk.len()]);
            self.rows.dots(chunk, centre, &mut eta0[..chunk.len()]);
            let mut c = [0.0f32; CHUNK];
            for (k, &i) in chunk.iter().enumerate() {
                if let Some(&y) = self.y.get(i) {
                    c[k] = F::score(y, eta[k]) - F::score(y, eta0[k]);
                }
            }
            self.rows.add_scaled_rows(chunk, &c[..chunk.len()], out);
        }
    }
    #[inline]
    fn prefetch(&self, batch: &[usize]) {
        for &i in batch {
            self.rows.prefetch(i);
        }
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        self.prior.log_density(theta)
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        batch
            .iter()
            .filter_map(|&i| {
                let y = *self.y.get(i)?;
                Some(F::log_lik(y as f64, self.rows.dot(i, theta) as f64))
            })
            .sum()
    }
    /// Eight where the design has interleaved kernels (sparse rows, with or without
    /// values), else none.
    fn interleaved_points(&self) -> usize {
        if R::INTERLEAVED { MAX_INTERLEAVED } else { 0 }
    }
    /// Where the design has interleaved kernels: each row read once for up to eight
    /// points.
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
}

impl<R: Design, F: Family, P: Prior> Glm<'_, R, F, P> {
    /// [`Model::add_log_lik_grads_interleaved`] for `K` points, through the design's
    /// interleaved kernels (`false` where it has none or the lengths do not fit).
    fn interleaved<const K: usize>(
        &self,
        thetas: &[f32],
        batch: &[usize],
        grads: &mut [f32],
        values: &mut [f64],
    ) -> bool {
        if !R::INTERLEAVED {
            return false;
        }
        let Some((th, g, mut values)) =
            interleaved_parts::<K>(self.rows.dim(), thetas, grads, values)
        else {
            return false;
        };
        let mut z = [0.0f32; K];
        for &i in batch {
            let Some(&y) = self.y.get(i) else { continue };
            self.rows.dot_interleaved(i, th, &mut z);
            let c: [f32; K] = core::array::from_fn(|c| F::score(y, z[c]));
            if let Some(values) = values.as_deref_mut() {
                for (v, &zc) in values.iter_mut().zip(&z) {
                    *v += F::log_lik(y as f64, zc as f64);
                }
            }
            self.rows.add_scaled_interleaved(i, &c, g);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{Flat, Gaussian};

    /// `Φ(t)` from `erfc` where it is accurate.
    fn normal_cdf(t: f64) -> f64 {
        0.5 * libm::erfc(-t / core::f64::consts::SQRT_2)
    }

    #[test]
    fn the_probit_tails_are_continuous_and_accurate() {
        // Where both are accurate (erfc keeps full relative precision down to 1e-300),
        // the continued fraction equals the direct ratio.
        for t in [-5.0, -6.0, -8.0, -12.0, -20.0, -30.0] {
            let direct = libm::exp(-0.5 * t * t - HALF_LN_TAU) / normal_cdf(t);
            let cf = 1.0 / mills_tail(t);
            assert!(
                (cf - direct).abs() <= 1e-13 * direct,
                "t {t}: {cf} vs {direct}"
            );
            let ln_direct = libm::log(normal_cdf(t));
            assert!((log_normal_cdf(t) - ln_direct).abs() <= 1e-12 * ln_direct.abs());
        }
        // Across the switch the functions move smoothly.
        let (a, b) = (inverse_mills(TAIL - 1e-9), inverse_mills(TAIL + 1e-9));
        assert!((a - b).abs() < 1e-8, "{a} vs {b}");
        // Far out: φ/Φ ≈ x + 1/x with x = −t, ln Φ finite; on the right φ/Φ → 0.
        let t = -1e4;
        assert!((inverse_mills(t) - (-t - 1.0 / t)).abs() < 1e-9);
        assert!(log_normal_cdf(t).is_finite() && log_normal_cdf(t) < -4.9e7);
        assert!(inverse_mills(40.0) >= 0.0 && inverse_mills(40.0) < 1e-300);
        assert_eq!(log_normal_cdf(40.0), 0.0);
        assert!(inverse_mills(f64::NAN).is_nan());
        // Known values: Φ(0) = ½, φ(0)/Φ(0) = 2φ(0) = √(2/π).
        assert!((inverse_mills(0.0) - (2.0 / core::f64::consts::PI).sqrt()).abs() < 1e-15);
        assert!((log_normal_cdf(0.0) + core::f64::consts::LN_2).abs() < 1e-15);
    }

    #[test]
    fn the_f32_probit_score_keeps_f32_precision() {
        // Against the f64 ratio on a grid across the switch and into the right tail.
        let mut t = -12.0f32;
        while t < 12.0 {
            for y in [1.0f32, -1.0] {
                let got = Probit::score(y, y * t) as f64;
                let want = y as f64 * inverse_mills(t as f64);
                assert!(
                    (got - want).abs() <= 4e-6 * want.abs() + 1e-30,
                    "t {t}: {got} vs {want}"
                );
            }
            t += 0.01;
        }
        assert!(Probit::score(1.0, f32::NAN).is_nan());
        assert_eq!(Probit::score(1.0, f32::INFINITY), 0.0);
    }

    /// The gradient of `log_lik` by central differences, in f64 on f32 parameters (two
    /// parameters, five rows).
    fn check_gradient<F: Family>(x: &[f32; 10], y: &[f32; 5], theta: [f32; 2], family: F) {
        let m = Glm::new(DenseRows::new(x, 2).unwrap(), y, family, Flat).unwrap();
        let batch = [0, 1, 2, 3, 4];
        let mut g = [0.0f32; 2];
        m.add_log_lik_grad(&theta, &batch, &mut g);
        for j in 0..2 {
            let h = 1e-3f32;
            let (mut up, mut down) = (theta, theta);
            up[j] += h;
            down[j] -= h;
            let fd = (m.log_lik(&up, &batch) - m.log_lik(&down, &batch)) / (2.0 * h as f64);
            assert!(
                (g[j] as f64 - fd).abs() <= 2e-3 * (1.0 + fd.abs()),
                "{family:?} component {j}: {} vs {fd}",
                g[j]
            );
        }
    }

    #[test]
    fn gradients_are_the_derivatives_of_the_log_likelihood() {
        let x = [0.5, 1.0, -1.2, 1.0, 2.0, 1.0, -0.3, 1.0, 1.5, 1.0];
        let counts = [1.0, 0.0, 7.0, 2.0, 4.0];
        check_gradient(&x, &counts, [0.8, 0.2], Poisson);
        check_gradient(&x, &counts, [-0.5, 1.1], Poisson);
        let labels = [1.0, -1.0, 1.0, -1.0, 1.0];
        check_gradient(&x, &labels, [0.8, 0.2], Probit);
        // Far into the tails, where Φ(yη) underflows in a naive ratio.
        check_gradient(&x, &labels, [-6.0, 2.0], Probit);
    }

    #[test]
    fn dense_and_sparse_rows_give_the_same_model() {
        // Binary rows (0, 2), (1), (0, 1, 2) as dense and as index lists.
        let x = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0];
        let offsets = [0, 2, 3, 6];
        let indices: [u8; 6] = [0, 2, 1, 0, 1, 2];
        let y = [2.0, 0.0, 5.0];
        let prior = Gaussian::new(2.0).unwrap();
        let dense = Glm::new(DenseRows::new(&x, 3).unwrap(), &y, Poisson, prior).unwrap();
        let rows = SparseRows::narrow(&offsets, &indices, 3).unwrap();
        let sparse = Glm::new(rows, &y, Poisson, prior).unwrap();
        let theta = [0.3, -0.2, 0.1];
        let (mut a, mut b) = ([0.0f32; 3], [0.0f32; 3]);
        dense.scaled_grad(&theta, &[0, 1, 2, 1], 2.0, &mut a);
        sparse.scaled_grad(&theta, &[0, 1, 2, 1], 2.0, &mut b);
        for (p, q) in a.iter().zip(&b) {
            assert!((p - q).abs() <= 1e-6 * p.abs().max(1.0), "{a:?} vs {b:?}");
        }
        // And as bitmaps (probit labels this time), with a batch longer than a chunk.
        let mut words = [0u16; 3];
        BitRows::fill_from_sparse(&rows, &mut words).unwrap();
        let bits = BitRows::new(&words, 3).unwrap();
        let labels = [1.0, -1.0, 1.0];
        let dense_p = Glm::new(DenseRows::new(&x, 3).unwrap(), &labels, Probit, prior).unwrap();
        let bitmap = Glm::new(bits, &labels, Probit, prior).unwrap();
        let batch = [0, 1, 2, 1, 0, 2, 2, 1, 0, 0, 1, 2, 2, 2, 1, 0, 1, 2, 0, 1];
        let (mut a, mut b) = ([0.0f32; 3], [0.0f32; 3]);
        dense_p.add_log_lik_grad(&theta, &batch, &mut a);
        bitmap.add_log_lik_grad(&theta, &batch, &mut b);
        for (p, q) in a.iter().zip(&b) {
            assert!((p - q).abs() <= 1e-5 * p.abs().max(1.0), "{a:?} vs {b:?}");
        }
        assert_eq!(bitmap.eta(&theta, 2), theta.iter().sum::<f32>());
        assert!((dense.log_lik(&theta, &[0, 2]) - sparse.log_lik(&theta, &[0, 2])).abs() < 1e-6);
        // A batch index past the end adds nothing.
        let mut c = [0.0f32; 3];
        dense.add_log_lik_grad(&theta, &[7], &mut c);
        assert_eq!(c, [0.0; 3]);
        assert_eq!(dense.eta(&theta, 9), 0.0);
    }

    #[test]
    fn responses_outside_the_family_are_refused() {
        let x = [1.0, 2.0];
        let rows = DenseRows::new(&x, 1).unwrap();
        for bad in [-1.0, 0.5, f32::NAN, f32::INFINITY] {
            assert!(Glm::new(rows, &[1.0, bad], Poisson, Flat).is_err(), "{bad}");
        }
        for bad in [0.0, 2.0, 0.5, f32::NAN] {
            assert!(Glm::new(rows, &[1.0, bad], Probit, Flat).is_err(), "{bad}");
        }
        assert!(Glm::new(rows, &[1.0], Poisson, Flat).is_err()); // one response, two rows
        assert!(Glm::new(rows, &[], Poisson, Flat).is_err());
        assert!(DenseRows::new(&x, 0).is_err());
        assert!(DenseRows::new(&[1.0, f32::NAN], 1).is_err());
        assert!(DenseRows::new(&[1.0, 2.0, 3.0], 2).is_err()); // not whole rows
    }
}
