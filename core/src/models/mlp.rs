//! A one-hidden-layer ReLU network for regression (Nado et al., §4: width 50 on Boston
//! housing), with a Gaussian likelihood and Gaussian priors on the weights.
//!
//! `f(x) = w₂ᵀ relu(W₁x + b₁) + b₂`, `y ~ N(f(x), 1/λ)`, each layer's weights and
//! biases `~ N(0, σ²_w / fan-in)` with fan-in `D + 1` for the hidden layer and `H + 1` for
//! the output (the scaling that keeps the prior over functions of order 1 whatever the
//! width, and PBP's initial scale).
//! The noise precision `λ` is fixed, or learned as `γ = log λ` with a `Gamma(a, b)` prior
//! on `λ` (the prior of probabilistic backpropagation uses `a = b = 6`). For binary
//! classification the output is a logit instead: `p(y|x) = σ(y f(x))`, `y ∈ {−1, +1}`.
//!
//! Parameters, in order: `W₁` row by row with each hidden unit's bias after its weights
//! (`H × (D + 1)`), then `w₂` (`H`), `b₂`, and `γ` when the precision is learned.
//!
//! The passes keep no activations: the output is one pass over the hidden units (a dot
//! product each), and the backward pass recomputes each unit's pre-activation as it
//! goes, so the model needs no buffer at all — any width, no allocation.

use super::{Model, check_matrix};
use crate::error::{Error, check_finite, check_positive};
use crate::kernels::imp;

/// The observation model of [`Mlp`]: Gaussian noise on `f(x)`, or binary labels through
/// a logistic output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// A fixed precision `λ > 0`.
    Fixed(f32),
    /// `γ = log λ` is the last parameter, with a `Gamma(shape, rate)` prior on `λ`.
    Learned {
        /// Gamma shape `a > 0`.
        shape: f32,
        /// Gamma rate `b > 0`.
        rate: f32,
    },
    /// Binary classification: labels `±1`, `p(y|x) = σ(y f(x))`, no noise parameter.
    Bernoulli,
}

/// The network and its data (`N × D` inputs row-major, `N` targets), borrowed.
#[derive(Debug, Clone, Copy)]
pub struct Mlp<'a> {
    x: &'a [f32],
    y: &'a [f32],
    d_in: usize,
    width: usize,
    prior_var: f32,
    noise: Noise,
}

impl<'a> Mlp<'a> {
    /// A network with `width ≥ 1` hidden units on inputs `x` (`N × d_in`, finite) and
    /// targets `y` (finite; `±1` for [`Noise::Bernoulli`]), weight prior variance
    /// `prior_var > 0`.
    ///
    /// ```
    /// use sgld::models::{Mlp, Model, Noise};
    /// let x = [0.0, 1.0, 2.0];
    /// let y = [0.5, 1.0, 2.5];
    /// let m = Mlp::new(&x, &y, 1, 4, 1.0, Noise::Learned { shape: 6.0, rate: 6.0 })?;
    /// assert_eq!(m.dim(), 4 * 2 + 4 + 1 + 1);
    /// # Ok::<(), sgld::Error>(())
    /// ```
    pub fn new(
        x: &'a [f32],
        y: &'a [f32],
        d_in: usize,
        width: usize,
        prior_var: f32,
        noise: Noise,
    ) -> Result<Self, Error> {
        if d_in == 0 || width == 0 {
            return Err(Error::InvalidParameter {
                what: "the network needs at least one input and one hidden unit",
            });
        }
        if y.is_empty() {
            return Err(Error::Empty { what: "data set" });
        }
        check_matrix("x", x, y.len(), d_in)?;
        check_finite("y", y)?;
        check_positive(
            "weight prior variance must be finite and > 0",
            prior_var as f64,
        )?;
        if !((d_in.max(width) + 1) as f32 / prior_var).is_finite() {
            return Err(Error::InvalidParameter {
                what: "weight prior variance is too small",
            });
        }
        match noise {
            Noise::Fixed(l) => check_positive("noise precision must be finite and > 0", l as f64)?,
            Noise::Learned { shape, rate } => {
                check_positive("Gamma shape must be finite and > 0", shape as f64)?;
                check_positive("Gamma rate must be finite and > 0", rate as f64)?;
            }
            Noise::Bernoulli => {
                super::check_labels(y, "classification labels must be -1 or +1")?;
            }
        }
        width
            .checked_mul(d_in + 2)
            .and_then(|v| v.checked_add(2))
            .ok_or(Error::InvalidParameter {
                what: "network size overflows usize",
            })?;
        Ok(Self {
            x,
            y,
            d_in,
            width,
            prior_var,
            noise,
        })
    }

    /// Inputs per example.
    pub fn d_in(&self) -> usize {
        self.d_in
    }

    /// Hidden units.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The noise model.
    pub fn noise(&self) -> Noise {
        self.noise
    }

    /// The weight prior scale `σ²_w` (each layer's variance is `σ²_w / fan-in`).
    pub fn prior_var(&self) -> f32 {
        self.prior_var
    }

    /// The prior precisions of the hidden and the output layer: `fan-in / σ²_w`.
    pub fn layer_precisions(&self) -> (f32, f32) {
        (
            (self.d_in + 1) as f32 / self.prior_var,
            (self.width + 1) as f32 / self.prior_var,
        )
    }

    /// The inputs (`N × D`, row-major) and targets.
    pub fn data(&self) -> (&'a [f32], &'a [f32]) {
        (self.x, self.y)
    }

    /// The noise precision `λ` at `theta` (1 for [`Noise::Bernoulli`], whose Fisher
    /// weights `σ(f)(1 − σ(f))` are per example).
    pub fn precision(&self, theta: &[f32]) -> f32 {
        match self.noise {
            Noise::Fixed(l) => l,
            Noise::Bernoulli => 1.0,
            Noise::Learned { .. } => libm::expf(theta.get(self.dim() - 1).copied().unwrap_or(0.0)),
        }
    }

    fn row(&self, i: usize) -> &'a [f32] {
        self.x
            .get(i * self.d_in..(i + 1) * self.d_in)
            .unwrap_or(&[])
    }

    /// Unit `h`'s weights and bias.
    fn unit<'t>(&self, theta: &'t [f32], h: usize) -> (&'t [f32], f32) {
        let k = self.d_in + 1;
        let w = &theta[h * k..(h + 1) * k];
        (&w[..self.d_in], w[self.d_in])
    }

    fn out_offset(&self) -> usize {
        self.width * (self.d_in + 1)
    }

    /// The network's output `f(x)` for one input row (trusted lengths).
    pub fn predict(&self, theta: &[f32], x: &[f32]) -> f32 {
        let o = self.out_offset();
        let mut f = theta[o + self.width];
        for h in 0..self.width {
            let (w, b) = self.unit(theta, h);
            let s = imp::dot(w, x) + b;
            if s > 0.0 {
                f += theta[o + h] * s;
            }
        }
        f
    }

    /// `f(x)` in f64 (for log densities).
    pub fn predict_f64(&self, theta: &[f32], x: &[f32]) -> f64 {
        let o = self.out_offset();
        let mut f = theta[o + self.width] as f64;
        for h in 0..self.width {
            let (w, b) = self.unit(theta, h);
            let s: f64 = w
                .iter()
                .zip(x)
                .map(|(&a, &c)| a as f64 * c as f64)
                .sum::<f64>()
                + b as f64;
            if s > 0.0 {
                f += theta[o + h] as f64 * s;
            }
        }
        f
    }

    /// `(log λ, λ)` at `theta`, for [`Mlp::output_log_lik`] (`(0, 1)` for
    /// [`Noise::Bernoulli`], which has no noise precision).
    pub fn log_precision(&self, theta: &[f32]) -> (f64, f64) {
        let lambda = self.precision(theta) as f64;
        match self.noise {
            Noise::Learned { .. } => (
                theta.get(self.dim() - 1).map_or(f64::NAN, |&g| g as f64),
                lambda,
            ),
            Noise::Fixed(_) => (libm::log(lambda), lambda),
            Noise::Bernoulli => (0.0, 1.0),
        }
    }

    /// `log p(y | f)` for an output `f = f(x)`, with `(log λ, λ)` from
    /// [`Mlp::log_precision`]: the term [`Model::log_lik`] sums, for a caller that has
    /// `f` already.
    pub fn output_log_lik(&self, f: f64, y: f32, (log_lambda, lambda): (f64, f64)) -> f64 {
        if self.noise == Noise::Bernoulli {
            return crate::math::log_sigmoid_f64(y as f64 * f);
        }
        let r = y as f64 - f;
        0.5 * log_lambda - super::HALF_LN_TAU - 0.5 * lambda * r * r
    }

    fn fits(&self, theta: &[f32], grad_len: usize) -> bool {
        theta.len() == self.dim() && grad_len == self.dim()
    }
}

impl Model for Mlp<'_> {
    fn dim(&self) -> usize {
        self.width * (self.d_in + 2) + 1 + usize::from(matches!(self.noise, Noise::Learned { .. }))
    }

    fn len(&self) -> usize {
        self.y.len()
    }

    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        if !self.fits(theta, grad.len()) {
            return;
        }
        let (p1, p2) = self.layer_precisions();
        let n_w = self.dim() - usize::from(matches!(self.noise, Noise::Learned { .. }));
        let o = self.out_offset();
        for (j, (g, &t)) in grad[..n_w].iter_mut().zip(&theta[..n_w]).enumerate() {
            *g -= if j < o { p1 } else { p2 } * t;
        }
        if let Noise::Learned { shape, rate } = self.noise {
            // log p(γ) = aγ − b·e^γ (the Jacobian of λ = e^γ included).
            grad[n_w] += shape - rate * libm::expf(theta[n_w]);
        }
    }

    /// `Σ ∇log N(yᵢ; f(xᵢ), 1/λ)`: per example, `∂/∂f = λr` (`r = y − f`) reaches
    /// `w₂, b₂` through the activations and `W₁, b₁` through `w₂` and the ReLU mask;
    /// `∂/∂γ = ½ − ½λr²`. For [`Noise::Bernoulli`], `∂/∂f = y σ(−y f)`.
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        if !self.fits(theta, grad.len()) {
            return;
        }
        let lambda = self.precision(theta);
        let (o, k) = (self.out_offset(), self.d_in + 1);
        for &i in batch {
            let (Some(&y), x) = (self.y.get(i), self.row(i)) else {
                continue;
            };
            let f = self.predict(theta, x);
            let r = y - f;
            let df = match self.noise {
                Noise::Bernoulli => y * crate::math::sigmoid(-y * f),
                _ => lambda * r,
            };
            for h in 0..self.width {
                let (w, b) = self.unit(theta, h);
                let s = imp::dot(w, x) + b;
                if s > 0.0 {
                    grad[o + h] += df * s;
                    let delta = df * theta[o + h];
                    let gw = &mut grad[h * k..(h + 1) * k];
                    imp::axpy(delta, x, &mut gw[..self.d_in]);
                    gw[self.d_in] += delta;
                }
            }
            grad[o + self.width] += df;
            if matches!(self.noise, Noise::Learned { .. }) {
                grad[o + self.width + 1] += 0.5 - 0.5 * lambda * r * r;
            }
        }
    }

    fn log_prior(&self, theta: &[f32]) -> f64 {
        if theta.len() != self.dim() {
            return f64::NAN;
        }
        let n_w = self.dim() - usize::from(matches!(self.noise, Noise::Learned { .. }));
        let (p1, p2) = self.layer_precisions();
        let o = self.out_offset();
        let ss = |v: &[f32]| -> f64 { v.iter().map(|&t| t as f64 * t as f64).sum() };
        let mut lp = -0.5 * (p1 as f64 * ss(&theta[..o]) + p2 as f64 * ss(&theta[o..n_w]));
        if let Noise::Learned { shape, rate } = self.noise {
            let g = theta[n_w] as f64;
            lp += shape as f64 * g - rate as f64 * libm::exp(g);
        }
        lp
    }

    /// `Σ log N(yᵢ; f(xᵢ), 1/λ)`, the normalising constant included (a test
    /// log-likelihood); `Σ log σ(yᵢ f(xᵢ))` for [`Noise::Bernoulli`].
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        if theta.len() != self.dim() {
            return f64::NAN;
        }
        let precision = self.log_precision(theta);
        batch
            .iter()
            .filter_map(|&i| Some((*self.y.get(i)?, self.row(i))))
            .map(|(y, x)| self.output_log_lik(self.predict_f64(theta, x), y, precision))
            .sum()
    }
}
