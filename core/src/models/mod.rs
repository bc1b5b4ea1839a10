//! Models: log-prior and per-example log-likelihood gradients over borrowed data.
//!
//! A model reads data the caller owns and never copies it. Its constructor checks
//! shapes and finiteness once; the [`Model`] methods then trust their arguments (the
//! checked entry point is [`crate::gradient::MiniBatch`]). The `N/n` scaling of the
//! mini-batch sum belongs to the gradient estimator, not to the model: the estimator
//! passes it to [`Model::scaled_grad`].

/// `self.f::<K>(args)` for `k` from 1 to [`MAX_INTERLEAVED`], the counts of points the
/// interleaved passes ([`Model::add_log_lik_grads_interleaved`]) take; `false` for any
/// other count.
macro_rules! per_count {
    ($k:expr, $s:ident . $f:ident ($($a:expr),* $(,)?)) => {
        match $k {
            1 => $s.$f::<1>($($a),*),
            2 => $s.$f::<2>($($a),*),
            3 => $s.$f::<3>($($a),*),
            4 => $s.$f::<4>($($a),*),
            5 => $s.$f::<5>($($a),*),
            6 => $s.$f::<6>($($a),*),
            7 => $s.$f::<7>($($a),*),
            8 => $s.$f::<8>($($a),*),
            _ => false,
        }
    };
}

/// The most points the crate's interleaved passes take at once (the counts of
/// `per_count!`).
pub(crate) const MAX_INTERLEAVED: usize = 8;

mod dist;
mod gaussian_mean;
mod glm;
mod linreg;
mod logistic;
mod mixture;
mod mlp;
mod prior;
mod valued;

pub use dist::{Dist, PerBlock};
pub use gaussian_mean::GaussianMean;
pub use glm::{
    DenseRows, Design, Family, Glm, Logit, Poisson, Probit, inverse_mills, log_normal_cdf,
};
pub use linreg::LinearRegression;
pub use logistic::{BitRows, LogisticBits, LogisticDense, LogisticSparse, SparseRows};
pub use mixture::TiedMixture;
pub use mlp::{Mlp, Noise};
pub use prior::{Flat, Gaussian, Laplace, Prior};
pub use valued::ValuedRows;

/// A Bayesian model `p(θ) Πᵢ p(xᵢ|θ)` over `N` data items.
///
/// The methods *add* into `grad` (they never clear it), so a caller composes the
/// gradient of eq. 4 from parts. They trust their arguments: `theta` and `grad` of
/// length [`dim`](Model::dim), batch indices `< `[`len`](Model::len). The callers keep
/// to this (every step checks its batch with [`crate::gradient::check_batch`] before the
/// model sees it), so a model of one's own can index without guarding. The crate's own
/// models also skip what does not fit, so that no input makes them panic; the result is
/// then unspecified.
pub trait Model {
    /// Number of parameters `d`.
    fn dim(&self) -> usize;

    /// Number of data items `N`.
    fn len(&self) -> usize;

    /// True when the model holds no data (never, for a model built by its constructor).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `grad += ∇ log p(θ)`.
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]);

    /// `grad += Σ_{i ∈ batch} ∇ log p(xᵢ|θ)` (unscaled sum over the batch).
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]);

    /// `grad = ∇ log p(θ) + s Σ_{i ∈ batch} ∇ log p(xᵢ|θ)`, overwriting `grad`: eq. 4's
    /// estimate with `s = N/n`.
    ///
    /// The default clears `grad`, adds the batch sum, scales it and adds the prior: four
    /// passes over `grad`, each waiting for the one before. A model whose batch pass can
    /// take the factor overrides it to start from the prior and add the batch's terms
    /// already scaled; the sum then rounds differently, within a few ulps per term.
    #[inline]
    fn scaled_grad(&self, theta: &[f32], batch: &[usize], s: f32, grad: &mut [f32]) {
        crate::kernels::zero(grad);
        self.add_log_lik_grad(theta, batch, grad);
        crate::kernels::scale(grad, s);
        self.add_log_prior_grad(theta, grad);
    }

    /// [`scaled_grad`](Self::scaled_grad), calling `side` exactly once along the way
    /// (see [`GradientEstimator::estimate_overlapped`](crate::gradient::GradientEstimator::estimate_overlapped)):
    /// the same `grad`, bit for bit. The default calls `side` after it; a model whose
    /// pass has a stretch bound by latency (a few values, each waiting for the last)
    /// calls it just before that stretch.
    #[inline]
    fn scaled_grad_overlapped(
        &self,
        theta: &[f32],
        batch: &[usize],
        s: f32,
        grad: &mut [f32],
        side: &mut dyn FnMut(),
    ) {
        self.scaled_grad(theta, batch, s, grad);
        side();
    }

    /// `out = Σ_{i ∈ batch} [∇ log p(xᵢ|θ) − ∇ log p(xᵢ|θ̂)]`, overwriting `out`: the
    /// mini-batch part of the control-variate estimate (SGLD-CV eq. 4,
    /// [`ControlVariate`](crate::gradient::ControlVariate)) at `theta` around `centre`.
    ///
    /// The default makes both sums ([`add_log_lik_grad`](Self::add_log_lik_grad) at
    /// `centre`, negated, then at `theta`): every item read twice and two updates of
    /// `out` per item. A model whose item's gradient is a weight times the item (a GLM's
    /// row) overrides it to read each item once and add the difference of its two
    /// weights; the sum then rounds differently, within a few ulps per term.
    #[inline]
    fn log_lik_grad_difference(
        &self,
        theta: &[f32],
        centre: &[f32],
        batch: &[usize],
        out: &mut [f32],
    ) {
        crate::kernels::zero(out);
        self.add_log_lik_grad(centre, batch, out);
        crate::kernels::scale(out, -1.0);
        self.add_log_lik_grad(theta, batch, out);
    }

    /// Hints that the items of `batch` are read next (a prefetch of their rows into the
    /// cache where the target has one). Changes no result; the default does nothing.
    #[inline]
    fn prefetch(&self, batch: &[usize]) {
        let _ = batch;
    }

    /// The parameters an average item's gradient touches (its non-zero features), at
    /// most [`dim`](Model::dim). Full-data passes ([`crate::gradient::full_log_posterior`])
    /// add about `64·dim/row_width` items into each f32 partial sum, so each parameter
    /// gathers about 64 terms per sum and clearing and adding the sums stays a small
    /// part of the pass. The default, `dim`, says that every item touches every
    /// parameter (64 items a sum).
    #[inline]
    fn row_width(&self) -> usize {
        self.dim()
    }

    /// `log p(θ)` up to a constant, in f64.
    fn log_prior(&self, theta: &[f32]) -> f64;

    /// `Σ_{i ∈ batch} log p(xᵢ|θ)` up to a constant, in f64.
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64;

    /// [`add_log_lik_grad`](Self::add_log_lik_grad) and, returned,
    /// [`log_lik`](Self::log_lik) over the same batch: what an exact sampler needs at
    /// each proposal. The same values bit for bit as the two calls, which the default
    /// makes; a model whose terms share work (a logistic row's margin) overrides it to
    /// read each row once.
    #[inline]
    fn add_log_lik_grad_and_value(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) -> f64 {
        self.add_log_lik_grad(theta, batch, grad);
        self.log_lik(theta, batch)
    }

    /// The most points [`add_log_lik_grads_interleaved`](Self::add_log_lik_grads_interleaved)
    /// takes at once: 0 where the model has no such pass (the default).
    #[inline]
    fn interleaved_points(&self) -> usize {
        0
    }

    /// [`add_log_lik_grad_and_value`](Self::add_log_lik_grad_and_value) at `k` points
    /// at once, interleaved: `thetas[j·k + c]` is coordinate `j` of point `c`, and
    /// `grads[j·k + c] += ∂/∂θⱼ Σ_{i ∈ batch} log p(xᵢ|θ_c)`, `values[c] += Σ log p(xᵢ|θ_c)`.
    /// One read of each row serves every point: chains run in lockstep share it. An
    /// empty `values` asks for the gradients alone. Returns `false`, having added
    /// nothing, where `k` is not in `1..=`
    /// [`interleaved_points`](Self::interleaved_points) (the default has no such pass)
    /// or the lengths are not `d·k`, `d·k` and `k` (or 0).
    #[inline]
    fn add_log_lik_grads_interleaved(
        &self,
        thetas: &[f32],
        k: usize,
        batch: &[usize],
        grads: &mut [f32],
        values: &mut [f64],
    ) -> bool {
        let _ = (thetas, k, batch, grads, values);
        false
    }
}

impl<M: Model + ?Sized> Model for &M {
    fn dim(&self) -> usize {
        (**self).dim()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        (**self).add_log_prior_grad(theta, grad)
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        (**self).add_log_lik_grad(theta, batch, grad)
    }
    #[inline]
    fn interleaved_points(&self) -> usize {
        (**self).interleaved_points()
    }
    #[inline]
    fn add_log_lik_grads_interleaved(
        &self,
        thetas: &[f32],
        k: usize,
        batch: &[usize],
        grads: &mut [f32],
        values: &mut [f64],
    ) -> bool {
        (**self).add_log_lik_grads_interleaved(thetas, k, batch, grads, values)
    }
    #[inline]
    fn scaled_grad(&self, theta: &[f32], batch: &[usize], s: f32, grad: &mut [f32]) {
        (**self).scaled_grad(theta, batch, s, grad)
    }
    #[inline]
    fn scaled_grad_overlapped(
        &self,
        theta: &[f32],
        batch: &[usize],
        s: f32,
        grad: &mut [f32],
        side: &mut dyn FnMut(),
    ) {
        (**self).scaled_grad_overlapped(theta, batch, s, grad, side)
    }
    #[inline]
    fn prefetch(&self, batch: &[usize]) {
        (**self).prefetch(batch)
    }
    #[inline]
    fn row_width(&self) -> usize {
        (**self).row_width()
    }
    fn log_lik_grad_difference(
        &self,
        theta: &[f32],
        centre: &[f32],
        batch: &[usize],
        out: &mut [f32],
    ) {
        (**self).log_lik_grad_difference(theta, centre, batch, out)
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        (**self).log_prior(theta)
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        (**self).log_lik(theta, batch)
    }
    #[inline]
    fn add_log_lik_grad_and_value(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) -> f64 {
        (**self).add_log_lik_grad_and_value(theta, batch, grad)
    }
}

/// The points and gradients of an interleaved pass as `d` rows of `K`, and the `K` log
/// likelihoods (`None` where `values` is empty: not wanted); `None` where the lengths
/// are not `d·K`, `d·K` and `K` or 0.
#[allow(clippy::type_complexity)]
pub(crate) fn interleaved_parts<'a, const K: usize>(
    d: usize,
    thetas: &'a [f32],
    grads: &'a mut [f32],
    values: &'a mut [f64],
) -> Option<(&'a [[f32; K]], &'a mut [[f32; K]], Option<&'a mut [f64; K]>)> {
    let (th, th_rest) = thetas.as_chunks::<K>();
    let (g, g_rest) = grads.as_chunks_mut::<K>();
    let values = match values.len() {
        0 => None,
        _ => Some(<&mut [f64; K]>::try_from(values).ok()?),
    };
    let fits = th.len() == d && g.len() == d && th_rest.is_empty() && g_rest.is_empty();
    fits.then_some((th, g, values))
}

/// Checks a row-major `rows × cols` matrix: length and finiteness.
pub(crate) fn check_matrix(
    what: &'static str,
    data: &[f32],
    rows: usize,
    cols: usize,
) -> Result<(), crate::Error> {
    let expected = rows
        .checked_mul(cols)
        .ok_or(crate::Error::InvalidParameter {
            what: "matrix dimensions overflow usize",
        })?;
    crate::error::check_len(what, expected, data.len())?;
    crate::error::check_finite(what, data)
}

/// Checks binary labels: every one `−1` or `+1` (`what` says whose, in the error).
pub(crate) fn check_labels(y: &[f32], what: &'static str) -> Result<(), crate::Error> {
    if y.iter().all(|&v| v == 1.0 || v == -1.0) {
        Ok(())
    } else {
        Err(crate::Error::InvalidParameter { what })
    }
}

/// `½ ln 2π`, the Gaussian log density's constant.
pub(crate) const HALF_LN_TAU: f64 = 0.918_938_533_204_672_7;
