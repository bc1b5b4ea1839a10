//! The mean of a Gaussian with known covariance: an exact test target.
//!
//! `xᵢ ~ N(θ, Λ⁻¹)` with known precision `Λ`, prior `θ ~ N(μ₀, P₀⁻¹)`. The posterior is
//! Gaussian with precision `P₀ + NΛ` and mean `(P₀ + NΛ)⁻¹(P₀μ₀ + Λ Σᵢ xᵢ)`.
//!
//! Gradients: `∇ log p(xᵢ|θ) = Λ(xᵢ − θ)`, `∇ log p(θ) = −P₀(θ − μ₀)`.

use super::{Model, check_matrix};
use crate::error::{Error, check_finite, check_len};
use crate::kernels::imp;

/// The Gaussian-mean model with known likelihood precision and a Gaussian prior.
#[derive(Debug, Clone, Copy)]
pub struct GaussianMean<'a> {
    x: &'a [f32],
    d: usize,
    lik_precision: &'a [f32],
    prior_mean: &'a [f32],
    prior_precision: &'a [f32],
}

fn check_symmetric(what: &'static str, a: &[f32], d: usize) -> Result<(), Error> {
    for j in 0..d {
        if a[j * d + j] <= 0.0 {
            return Err(Error::InvalidParameter { what });
        }
        for k in 0..j {
            let (p, q) = (a[j * d + k], a[k * d + j]);
            if (p - q).abs() > 1e-5 * (p.abs() + q.abs()) {
                return Err(Error::InvalidParameter { what });
            }
        }
    }
    Ok(())
}

impl<'a> GaussianMean<'a> {
    /// `x` is `N × d` row-major; `lik_precision` (`Λ`) and `prior_precision` (`P₀`) are
    /// `d × d` row-major, symmetric (to relative 10⁻⁵) with positive diagonals (positive
    /// definiteness is the caller's promise); `prior_mean` has length `d`.
    pub fn new(
        x: &'a [f32],
        d: usize,
        lik_precision: &'a [f32],
        prior_mean: &'a [f32],
        prior_precision: &'a [f32],
    ) -> Result<Self, Error> {
        if d == 0 {
            return Err(Error::Empty { what: "dimension" });
        }
        if x.is_empty() {
            return Err(Error::Empty { what: "data set" });
        }
        check_matrix("x", x, x.len() / d, d)?;
        check_matrix("likelihood precision", lik_precision, d, d)?;
        check_matrix("prior precision", prior_precision, d, d)?;
        check_len("prior mean", d, prior_mean.len())?;
        check_finite("prior mean", prior_mean)?;
        check_symmetric(
            "likelihood precision must be symmetric with a positive diagonal",
            lik_precision,
            d,
        )?;
        check_symmetric(
            "prior precision must be symmetric with a positive diagonal",
            prior_precision,
            d,
        )?;
        Ok(Self {
            x,
            d,
            lik_precision,
            prior_mean,
            prior_precision,
        })
    }

    fn row(&self, i: usize) -> &'a [f32] {
        i.checked_mul(self.d)
            .and_then(|a| self.x.get(a..a.checked_add(self.d)?))
            .unwrap_or(&[])
    }
}

impl Model for GaussianMean<'_> {
    fn dim(&self) -> usize {
        self.d
    }
    fn len(&self) -> usize {
        self.x.len() / self.d
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        for (g, p) in grad
            .iter_mut()
            .zip(self.prior_precision.chunks_exact(self.d))
        {
            *g -= imp::dot(p, theta) - imp::dot(p, self.prior_mean);
        }
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        let n = batch.iter().filter(|&&i| i < self.len()).count() as f32;
        for (g, l) in grad.iter_mut().zip(self.lik_precision.chunks_exact(self.d)) {
            let mut s = -n * imp::dot(l, theta);
            for &i in batch {
                s += imp::dot(l, self.row(i));
            }
            *g += s;
        }
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        -0.5 * quad_form(self.prior_precision, theta, self.prior_mean, self.d)
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        batch
            .iter()
            .filter(|&&i| i < self.len())
            .map(|&i| -0.5 * quad_form(self.lik_precision, self.row(i), theta, self.d))
            .sum()
    }
}

/// `(a − b)ᵀ M (a − b)` in f64.
fn quad_form(m: &[f32], a: &[f32], b: &[f32], d: usize) -> f64 {
    let mut s = 0.0f64;
    for (j, row) in m.chunks_exact(d).enumerate() {
        let (Some(&aj), Some(&bj)) = (a.get(j), b.get(j)) else {
            break;
        };
        let dj = aj as f64 - bj as f64;
        let inner: f64 = row
            .iter()
            .zip(a.iter().zip(b))
            .map(|(&mjk, (&ak, &bk))| mjk as f64 * (ak as f64 - bk as f64))
            .sum();
        s += dj * inner;
    }
    s
}
