//! The tied-means mixture of §5.1: `θ₁ ~ N(0, σ₁²)`, `θ₂ ~ N(0, σ₂²)`,
//! `xᵢ ~ ½ N(θ₁, σₓ²) + ½ N(θ₁ + θ₂, σₓ²)`.
//!
//! With `aᵢ = −(xᵢ − θ₁)²/2σₓ²`, `bᵢ = −(xᵢ − θ₁ − θ₂)²/2σₓ²` and the responsibility
//! `rᵢ = σ(bᵢ − aᵢ)` of the second component:
//! `∂/∂θ₁ log p(xᵢ|θ) = [(1 − rᵢ)(xᵢ − θ₁) + rᵢ(xᵢ − θ₁ − θ₂)]/σₓ²` and
//! `∂/∂θ₂ log p(xᵢ|θ) = rᵢ(xᵢ − θ₁ − θ₂)/σₓ²`.

use super::Model;
use crate::error::{Error, check_finite, check_positive};
use crate::math::{log_add_exp, sigmoid};

/// The tied-means two-component mixture of §5.1 over scalar data.
#[derive(Debug, Clone, Copy)]
pub struct TiedMixture<'a> {
    x: &'a [f32],
    var1: f32,
    var2: f32,
    var_x: f32,
}

impl<'a> TiedMixture<'a> {
    /// The model with prior variances `σ₁², σ₂²` and component variance `σₓ²`.
    pub fn new(x: &'a [f32], var1: f32, var2: f32, var_x: f32) -> Result<Self, Error> {
        if x.is_empty() {
            return Err(Error::Empty { what: "data set" });
        }
        check_finite("x", x)?;
        check_positive("sigma1^2 must be finite and > 0", var1 as f64)?;
        check_positive("sigma2^2 must be finite and > 0", var2 as f64)?;
        check_positive("sigma_x^2 must be finite and > 0", var_x as f64)?;
        Ok(Self {
            x,
            var1,
            var2,
            var_x,
        })
    }

    /// The paper's setting: `σ₁² = 10`, `σ₂² = 1`, `σₓ² = 2`.
    pub fn paper(x: &'a [f32]) -> Result<Self, Error> {
        Self::new(x, 10.0, 1.0, 2.0)
    }

    /// The two component log-kernels `(aᵢ, bᵢ)` of one datum, in f64.
    fn kernels(&self, xi: f64, t1: f64, t2: f64) -> (f64, f64) {
        let vx = self.var_x as f64;
        let d1 = xi - t1;
        let d2 = xi - t1 - t2;
        (-0.5 * d1 * d1 / vx, -0.5 * d2 * d2 / vx)
    }
}

impl Model for TiedMixture<'_> {
    fn dim(&self) -> usize {
        2
    }
    fn len(&self) -> usize {
        self.x.len()
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        if let ([t1, t2, ..], [g1, g2, ..]) = (theta, grad) {
            *g1 -= t1 / self.var1;
            *g2 -= t2 / self.var2;
        }
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        let (&[t1, t2, ..], [g1, g2, ..]) = (theta, grad) else {
            return;
        };
        let inv = 1.0 / self.var_x;
        let (mut s1, mut s2) = (0.0f32, 0.0f32);
        for &i in batch {
            let Some(&xi) = self.x.get(i) else { continue };
            let d1 = xi - t1;
            let d2 = d1 - t2;
            // r = σ(b − a) with b − a = (d1² − d2²)/(2σₓ²) = t2·(d1 + d2)/(2σₓ²) (the
            // factored form does not cancel when t2 is small, and is a shorter chain).
            let r = sigmoid(0.5 * inv * (t2 * (d1 + d2)));
            // (1 − r)·d1 + r·d2 = d1 − r·t2.
            s1 += d1 - r * t2;
            s2 += r * d2;
        }
        *g1 += s1 * inv;
        *g2 += s2 * inv;
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        let [t1, t2, ..] = theta else { return 0.0 };
        let (v1, v2) = (self.var1 as f64, self.var2 as f64);
        let tau = core::f64::consts::TAU;
        let (t1, t2) = (*t1 as f64, *t2 as f64);
        -0.5 * (t1 * t1 / v1 + t2 * t2 / v2) - 0.5 * libm::log(tau * v1) - 0.5 * libm::log(tau * v2)
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        let [t1, t2, ..] = theta else { return 0.0 };
        let c =
            -core::f64::consts::LN_2 - 0.5 * libm::log(core::f64::consts::TAU * self.var_x as f64);
        batch
            .iter()
            .filter_map(|&i| {
                let xi = *self.x.get(i)? as f64;
                let (a, b) = self.kernels(xi, *t1 as f64, *t2 as f64);
                Some(log_add_exp(a, b) + c)
            })
            .sum()
    }
}
