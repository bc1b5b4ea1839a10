//! Bayesian linear regression with the Normal–inverse-gamma prior, sampled in
//! `w = (β, γ)` with `γ = log σ²` (Karagiannis, handout 6, §4):
//!
//! `yᵢ | β, γ ~ N(xᵢᵀβ, e^γ)`, `β | γ ~ N(0, e^γ·v·I)`, `σ² = e^γ ~ IG(φ, ψ)` (shape φ,
//! scale ψ), with the Jacobian `e^γ` of the change of variables.
//!
//! Per-example gradient (handout eq. 4.1), with `rᵢ = yᵢ − xᵢᵀβ`:
//! `∇_β = rᵢ e^{−γ} xᵢ`, `∂_γ = −½ + ½ rᵢ² e^{−γ}`.
//!
//! Prior gradient (handout eq. 4.2; the handout prints `+d/2` where the derivative of
//! `−(d/2)γ` gives `−d/2`, and its `−(φ+1) + 1` is written here as `−φ`):
//! `∇_β = −e^{−γ} β / v`, `∂_γ = −d/2 + ½ e^{−γ} βᵀβ / v − φ + ψ e^{−γ}`.

use super::{Model, check_matrix};
use crate::error::{Error, check_finite, check_positive};
use crate::kernels::imp;

/// The Normal–inverse-gamma linear regression; parameters `(β₁, …, β_d, log σ²)`.
#[derive(Debug, Clone, Copy)]
pub struct LinearRegression<'a> {
    x: &'a [f32],
    y: &'a [f32],
    d: usize,
    v: f32,
    phi: f32,
    psi: f32,
}

impl<'a> LinearRegression<'a> {
    /// `x` is `N × d` row-major, `y` has `N` responses; prior `β|σ² ~ N(0, σ² v I)`,
    /// `σ² ~ IG(φ, ψ)`, with `v, φ, ψ` finite and positive.
    pub fn new(
        x: &'a [f32],
        y: &'a [f32],
        d: usize,
        v: f32,
        phi: f32,
        psi: f32,
    ) -> Result<Self, Error> {
        if y.is_empty() {
            return Err(Error::Empty { what: "data set" });
        }
        if d == 0 {
            return Err(Error::Empty {
                what: "feature dimension",
            });
        }
        check_matrix("x", x, y.len(), d)?;
        check_finite("y", y)?;
        check_positive("prior scale v must be finite and > 0", v as f64)?;
        check_positive("inverse-gamma shape phi must be finite and > 0", phi as f64)?;
        check_positive("inverse-gamma scale psi must be finite and > 0", psi as f64)?;
        Ok(Self {
            x,
            y,
            d,
            v,
            phi,
            psi,
        })
    }

    /// Number of regression coefficients `d` (the model has `d + 1` parameters).
    pub fn n_features(&self) -> usize {
        self.d
    }

    fn row(&self, i: usize) -> &'a [f32] {
        i.checked_mul(self.d)
            .and_then(|a| self.x.get(a..a.checked_add(self.d)?))
            .unwrap_or(&[])
    }

    /// The prediction `xᵢᵀβ` for row `i`.
    pub fn predict(&self, theta: &[f32], i: usize) -> f32 {
        imp::dot(self.row(i), theta.get(..self.d).unwrap_or(&[]))
    }
}

impl Model for LinearRegression<'_> {
    fn dim(&self) -> usize {
        self.d + 1
    }
    fn len(&self) -> usize {
        self.y.len()
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        let (Some((&gamma, beta)), Some((g_gamma, g_beta))) =
            (theta.split_last(), grad.split_last_mut())
        else {
            return;
        };
        let e = libm::expf(-gamma);
        imp::axpy(-e / self.v, beta, g_beta);
        let bb = imp::dot(beta, beta);
        *g_gamma += -0.5 * self.d as f32 + 0.5 * e * bb / self.v - self.phi + self.psi * e;
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        let (Some((&gamma, beta)), Some((g_gamma, g_beta))) =
            (theta.split_last(), grad.split_last_mut())
        else {
            return;
        };
        let e = libm::expf(-gamma);
        let mut sum_r2 = 0.0f32;
        let mut count = 0.0f32;
        for &i in batch {
            let Some(&yi) = self.y.get(i) else { continue };
            let row = self.row(i);
            let r = yi - imp::dot(row, beta);
            imp::axpy(r * e, row, g_beta);
            sum_r2 += r * r;
            count += 1.0;
        }
        *g_gamma += -0.5 * count + 0.5 * sum_r2 * e;
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        let Some((&gamma, beta)) = theta.split_last() else {
            return 0.0;
        };
        let (g, v, phi, psi) = (
            gamma as f64,
            self.v as f64,
            self.phi as f64,
            self.psi as f64,
        );
        let d = self.d as f64;
        let bb: f64 = beta.iter().map(|&b| (b as f64) * (b as f64)).sum();
        let e = libm::exp(-g);
        let log_beta =
            -0.5 * d * libm::log(core::f64::consts::TAU * v) - 0.5 * d * g - 0.5 * e * bb / v;
        let log_gamma = phi * libm::log(psi) - libm::lgamma(phi) - phi * g - psi * e;
        log_beta + log_gamma
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        let Some((&gamma, beta)) = theta.split_last() else {
            return 0.0;
        };
        let g = gamma as f64;
        let e = libm::exp(-g);
        let c = -0.5 * libm::log(core::f64::consts::TAU) - 0.5 * g;
        batch
            .iter()
            .filter_map(|&i| {
                let yi = *self.y.get(i)? as f64;
                let r = yi - imp::dot(self.row(i), beta) as f64;
                Some(c - 0.5 * r * r * e)
            })
            .sum()
    }
}
