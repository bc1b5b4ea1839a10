//! The priors people use, one coordinate at a time: [`Dist`] holds the family and its
//! parameters, and gives the log density, its gradient and its curvature (the warm-up's
//! precision) at a point; as a [`Prior`] it is the same distribution on every coordinate,
//! and [`PerBlock`] gives each block of coordinates its own.
//!
//! The positive families (exponential, gamma, inverse-gamma, log-normal, half-normal,
//! half-Cauchy, half-Student-t) and the beta are densities on their support: outside it
//! the log density is −∞ and the gradient and curvature are 0. Sample such a parameter on
//! the unconstrained scale (the harness's constrained models add the log-Jacobian).
//!
//! ```
//! use sgld::models::{Dist, PerBlock, Prior};
//!
//! let tau = Dist::half_cauchy(5.0)?;
//! assert!((tau.log_pdf(0.0) - (2.0 / (core::f64::consts::PI * 5.0)).ln()).abs() < 1e-12);
//! // μ ~ N(0, 5²), τ ~ half-Cauchy(5), eight θ̃ ~ N(0, 1).
//! let blocks = [(Dist::normal(0.0, 5.0)?, 1), (tau, 1), (Dist::normal(0.0, 1.0)?, 8)];
//! let prior = PerBlock::new(&blocks);
//! let theta = [1.0f32; 10];
//! let mut grad = [0.0f32; 10];
//! prior.add_grad(&theta, &mut grad);
//! assert!((grad[0] + 1.0 / 25.0).abs() < 1e-7 && (grad[2] + 1.0).abs() < 1e-7);
//! # Ok::<(), sgld::Error>(())
//! ```

use core::f64::consts::{LN_2, PI};

use super::prior::Prior;
use crate::error::Error;

/// `ln √(2π)`.
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// A univariate distribution used as a prior.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Dist {
    /// `N(μ, σ²)`.
    Normal {
        /// Mean.
        mu: f64,
        /// Standard deviation.
        sigma: f64,
    },
    /// Student-t with `ν` degrees of freedom, location `μ` and scale `σ` (Cauchy at ν = 1).
    StudentT {
        /// Degrees of freedom.
        nu: f64,
        /// Location.
        mu: f64,
        /// Scale.
        sigma: f64,
    },
    /// Laplace (double exponential) with location `μ` and scale `b`.
    Laplace {
        /// Location.
        mu: f64,
        /// Scale.
        b: f64,
    },
    /// Exponential with rate `λ` on `x ≥ 0`.
    Exponential {
        /// Rate.
        rate: f64,
    },
    /// Gamma with shape `α` and rate `β` on `x > 0`.
    Gamma {
        /// Shape.
        shape: f64,
        /// Rate.
        rate: f64,
    },
    /// Inverse-gamma with shape `α` and scale `β` on `x > 0`.
    InvGamma {
        /// Shape.
        shape: f64,
        /// Scale.
        scale: f64,
    },
    /// Log-normal: `ln x ~ N(μ, σ²)` on `x > 0`.
    LogNormal {
        /// Mean of `ln x`.
        mu: f64,
        /// Standard deviation of `ln x`.
        sigma: f64,
    },
    /// Beta(α, β) on `0 < x < 1`.
    Beta {
        /// First shape.
        a: f64,
        /// Second shape.
        b: f64,
    },
    /// The half-Student-t (half-normal as ν → ∞, half-Cauchy at ν = 1) of scale `σ` on
    /// `x ≥ 0`; `nu = ∞` is the half-normal.
    HalfStudentT {
        /// Degrees of freedom (`f64::INFINITY`: half-normal).
        nu: f64,
        /// Scale.
        sigma: f64,
    },
}

fn positive(what: &'static str, x: f64) -> Result<f64, Error> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(Error::InvalidParameter { what })
    }
}

fn finite(what: &'static str, x: f64) -> Result<f64, Error> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(Error::InvalidParameter { what })
    }
}

/// `ln Γ(x)`.
fn ln_gamma(x: f64) -> f64 {
    libm::lgamma(x)
}

/// The log normaliser of a Student-t of `ν` degrees of freedom and scale `σ`.
fn student_norm(nu: f64, sigma: f64) -> f64 {
    ln_gamma(0.5 * (nu + 1.0)) - ln_gamma(0.5 * nu) - 0.5 * libm::log(nu * PI) - libm::log(sigma)
}

impl Dist {
    /// `N(μ, σ²)`: `μ` finite, `σ` finite and > 0.
    pub fn normal(mu: f64, sigma: f64) -> Result<Self, Error> {
        Ok(Self::Normal {
            mu: finite("normal mean must be finite", mu)?,
            sigma: positive("normal sd must be finite and > 0", sigma)?,
        })
    }

    /// Student-t(ν, μ, σ): `ν` and `σ` finite and > 0.
    pub fn student_t(nu: f64, mu: f64, sigma: f64) -> Result<Self, Error> {
        Ok(Self::StudentT {
            nu: positive("Student-t degrees of freedom must be finite and > 0", nu)?,
            mu: finite("Student-t location must be finite", mu)?,
            sigma: positive("Student-t scale must be finite and > 0", sigma)?,
        })
    }

    /// Cauchy(μ, σ), the Student-t with one degree of freedom.
    pub fn cauchy(mu: f64, sigma: f64) -> Result<Self, Error> {
        Self::student_t(1.0, mu, sigma)
    }

    /// Laplace(μ, b).
    pub fn laplace(mu: f64, b: f64) -> Result<Self, Error> {
        Ok(Self::Laplace {
            mu: finite("Laplace location must be finite", mu)?,
            b: positive("Laplace scale must be finite and > 0", b)?,
        })
    }

    /// Exponential(λ), mean `1/λ`.
    pub fn exponential(rate: f64) -> Result<Self, Error> {
        Ok(Self::Exponential {
            rate: positive("exponential rate must be finite and > 0", rate)?,
        })
    }

    /// Gamma(α, β) with shape `α` and rate `β` (mean `α/β`).
    pub fn gamma(shape: f64, rate: f64) -> Result<Self, Error> {
        Ok(Self::Gamma {
            shape: positive("gamma shape must be finite and > 0", shape)?,
            rate: positive("gamma rate must be finite and > 0", rate)?,
        })
    }

    /// Inverse-gamma(α, β) with shape `α` and scale `β` (mean `β/(α − 1)` for α > 1).
    pub fn inv_gamma(shape: f64, scale: f64) -> Result<Self, Error> {
        Ok(Self::InvGamma {
            shape: positive("inverse-gamma shape must be finite and > 0", shape)?,
            scale: positive("inverse-gamma scale must be finite and > 0", scale)?,
        })
    }

    /// Log-normal: `ln x ~ N(μ, σ²)`.
    pub fn log_normal(mu: f64, sigma: f64) -> Result<Self, Error> {
        Ok(Self::LogNormal {
            mu: finite("log-normal mu must be finite", mu)?,
            sigma: positive("log-normal sigma must be finite and > 0", sigma)?,
        })
    }

    /// Beta(α, β).
    pub fn beta(a: f64, b: f64) -> Result<Self, Error> {
        Ok(Self::Beta {
            a: positive("beta shape a must be finite and > 0", a)?,
            b: positive("beta shape b must be finite and > 0", b)?,
        })
    }

    /// The half-normal of scale `σ` (the normal `N(0, σ²)` folded onto `x ≥ 0`).
    pub fn half_normal(sigma: f64) -> Result<Self, Error> {
        Ok(Self::HalfStudentT {
            nu: f64::INFINITY,
            sigma: positive("half-normal scale must be finite and > 0", sigma)?,
        })
    }

    /// The half-Cauchy of scale `σ`.
    pub fn half_cauchy(sigma: f64) -> Result<Self, Error> {
        Self::half_student_t(1.0, sigma)
    }

    /// The half-Student-t of `ν` degrees of freedom and scale `σ`.
    pub fn half_student_t(nu: f64, sigma: f64) -> Result<Self, Error> {
        Ok(Self::HalfStudentT {
            nu: positive(
                "half-Student-t degrees of freedom must be finite and > 0",
                nu,
            )?,
            sigma: positive("half-Student-t scale must be finite and > 0", sigma)?,
        })
    }

    /// Whether `x` lies in the support (where the density is positive or at its edge).
    pub fn contains(&self, x: f64) -> bool {
        match *self {
            Self::Exponential { .. } | Self::HalfStudentT { .. } => x >= 0.0,
            Self::Gamma { .. } | Self::InvGamma { .. } | Self::LogNormal { .. } => x > 0.0,
            Self::Beta { .. } => x > 0.0 && x < 1.0,
            _ => !x.is_nan(),
        }
    }

    /// `ln p(x)`, normalised; −∞ outside the support.
    pub fn log_pdf(&self, x: f64) -> f64 {
        if !self.contains(x) {
            return f64::NEG_INFINITY;
        }
        match *self {
            Self::Normal { mu, sigma } => {
                let z = (x - mu) / sigma;
                -0.5 * z * z - libm::log(sigma) - LN_SQRT_2PI
            }
            Self::StudentT { nu, mu, sigma } => {
                let z = (x - mu) / sigma;
                student_norm(nu, sigma) - 0.5 * (nu + 1.0) * libm::log1p(z * z / nu)
            }
            Self::Laplace { mu, b } => -(x - mu).abs() / b - libm::log(2.0 * b),
            Self::Exponential { rate } => libm::log(rate) - rate * x,
            Self::Gamma { shape, rate } => {
                shape * libm::log(rate) - ln_gamma(shape) + (shape - 1.0) * libm::log(x) - rate * x
            }
            Self::InvGamma { shape, scale } => {
                shape * libm::log(scale)
                    - ln_gamma(shape)
                    - (shape + 1.0) * libm::log(x)
                    - scale / x
            }
            Self::LogNormal { mu, sigma } => {
                let l = libm::log(x);
                let z = (l - mu) / sigma;
                -0.5 * z * z - l - libm::log(sigma) - LN_SQRT_2PI
            }
            Self::Beta { a, b } => {
                ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b)
                    + (a - 1.0) * libm::log(x)
                    + (b - 1.0) * libm::log1p(-x)
            }
            Self::HalfStudentT { nu, sigma } if nu.is_infinite() => {
                let z = x / sigma;
                LN_2 - 0.5 * z * z - libm::log(sigma) - LN_SQRT_2PI
            }
            Self::HalfStudentT { nu, sigma } => {
                let z = x / sigma;
                LN_2 + student_norm(nu, sigma) - 0.5 * (nu + 1.0) * libm::log1p(z * z / nu)
            }
        }
    }

    /// `d ln p(x)/dx`; 0 outside the support (and at a Laplace's kink).
    pub fn grad_log_pdf(&self, x: f64) -> f64 {
        if !self.contains(x) {
            return 0.0;
        }
        match *self {
            Self::Normal { mu, sigma } => -(x - mu) / (sigma * sigma),
            Self::StudentT { nu, mu, sigma } => {
                let r = x - mu;
                -(nu + 1.0) * r / (nu * sigma * sigma + r * r)
            }
            Self::Laplace { mu, b } if x > mu => -1.0 / b,
            Self::Laplace { mu, b } if x < mu => 1.0 / b,
            Self::Laplace { .. } => 0.0,
            Self::Exponential { rate } => -rate,
            Self::Gamma { shape, rate } => (shape - 1.0) / x - rate,
            Self::InvGamma { shape, scale } => (scale / x - (shape + 1.0)) / x,
            Self::LogNormal { mu, sigma } => -(1.0 + (libm::log(x) - mu) / (sigma * sigma)) / x,
            Self::Beta { a, b } => (a - 1.0) / x - (b - 1.0) / (1.0 - x),
            Self::HalfStudentT { nu, sigma } if nu.is_infinite() => -x / (sigma * sigma),
            Self::HalfStudentT { nu, sigma } => -(nu + 1.0) * x / (nu * sigma * sigma + x * x),
        }
    }

    /// `−d² ln p(x)/dx²`, the curvature the warm-up's Laplace approximation adds; for the
    /// Laplace family (no second derivative) `1/(2b²)`, the precision of the normal of
    /// the same variance. It can be negative (a Student-t's tails, a gamma below shape 1):
    /// as a [`Prior`], [`Prior::add_curvature`] adds its positive part.
    pub fn curvature(&self, x: f64) -> f64 {
        if !self.contains(x) {
            return 0.0;
        }
        match *self {
            Self::Normal { sigma, .. } => 1.0 / (sigma * sigma),
            Self::StudentT { nu, mu, sigma } => student_curvature(nu, sigma, x - mu),
            Self::Laplace { b, .. } => 1.0 / (2.0 * b * b),
            Self::Exponential { .. } => 0.0,
            Self::Gamma { shape, .. } => (shape - 1.0) / (x * x),
            Self::InvGamma { shape, scale } => (2.0 * scale / x - (shape + 1.0)) / (x * x),
            Self::LogNormal { mu, sigma } => {
                ((1.0 - (libm::log(x) - mu)) / (sigma * sigma) - 1.0) / (x * x)
            }
            Self::Beta { a, b } => (a - 1.0) / (x * x) + (b - 1.0) / ((1.0 - x) * (1.0 - x)),
            Self::HalfStudentT { nu, sigma } if nu.is_infinite() => 1.0 / (sigma * sigma),
            Self::HalfStudentT { nu, sigma } => student_curvature(nu, sigma, x),
        }
    }
}

/// `−d²/dr² ln(1 + r²/(νσ²))^{−(ν+1)/2} = (ν+1)(νσ² − r²)/(νσ² + r²)²`.
fn student_curvature(nu: f64, sigma: f64, r: f64) -> f64 {
    let s = nu * sigma * sigma;
    (nu + 1.0) * (s - r * r) / ((s + r * r) * (s + r * r))
}

/// The same distribution on every coordinate.
impl Prior for Dist {
    fn add_grad(&self, theta: &[f32], grad: &mut [f32]) {
        for (g, &t) in grad.iter_mut().zip(theta) {
            *g += self.grad_log_pdf(t as f64) as f32;
        }
    }

    fn log_density(&self, theta: &[f32]) -> f64 {
        theta.iter().map(|&t| self.log_pdf(t as f64)).sum()
    }

    fn add_curvature(&self, theta: &[f32], out: &mut [f64]) {
        for (o, &t) in out.iter_mut().zip(theta) {
            *o += self.curvature(t as f64).max(0.0);
        }
    }
}

/// A prior per block of coordinates: `blocks[k] = (dist, len)` covers the next `len`
/// coordinates; coordinates past the last block are flat.
#[derive(Debug, Clone, Copy)]
pub struct PerBlock<'a> {
    blocks: &'a [(Dist, usize)],
}

impl<'a> PerBlock<'a> {
    /// The blocks in order.
    pub fn new(blocks: &'a [(Dist, usize)]) -> Self {
        Self { blocks }
    }

    /// The coordinates the blocks cover.
    pub fn len(&self) -> usize {
        self.blocks.iter().map(|b| b.1).sum()
    }

    /// Whether the blocks cover no coordinate.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each block's distribution with its stretch of `xs` (cut short at its end).
    fn pieces<'x, T>(&self, xs: &'x [T]) -> impl Iterator<Item = (&'a Dist, &'x [T])> {
        let mut at = 0usize;
        self.blocks.iter().map(move |(d, len)| {
            let from = at.min(xs.len());
            at = at.saturating_add(*len);
            (d, &xs[from..at.min(xs.len())])
        })
    }
}

impl Prior for PerBlock<'_> {
    fn add_grad(&self, theta: &[f32], grad: &mut [f32]) {
        let mut at = 0usize;
        for (d, t) in self.pieces(theta) {
            let g = grad.get_mut(at..at + t.len()).unwrap_or(&mut []);
            d.add_grad(t, g);
            at += t.len();
        }
    }

    fn log_density(&self, theta: &[f32]) -> f64 {
        self.pieces(theta).map(|(d, t)| d.log_density(t)).sum()
    }

    fn add_curvature(&self, theta: &[f32], out: &mut [f64]) {
        let mut at = 0usize;
        for (d, t) in self.pieces(theta) {
            let o = out.get_mut(at..at + t.len()).unwrap_or(&mut []);
            d.add_curvature(t, o);
            at += t.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> [(Dist, &'static str); 13] {
        [
            (Dist::normal(0.5, 2.0).unwrap(), "normal"),
            (Dist::student_t(3.0, -1.0, 1.5).unwrap(), "student-t"),
            (Dist::cauchy(0.0, 2.0).unwrap(), "cauchy"),
            (Dist::laplace(0.3, 1.2).unwrap(), "laplace"),
            (Dist::exponential(0.7).unwrap(), "exponential"),
            (Dist::gamma(2.5, 1.5).unwrap(), "gamma"),
            (Dist::inv_gamma(3.0, 2.0).unwrap(), "inverse-gamma"),
            (Dist::log_normal(0.2, 0.6).unwrap(), "log-normal"),
            (Dist::beta(2.0, 3.5).unwrap(), "beta"),
            (Dist::half_normal(1.5).unwrap(), "half-normal"),
            (Dist::half_cauchy(2.0).unwrap(), "half-Cauchy"),
            (Dist::half_student_t(4.0, 1.0).unwrap(), "half-Student-t"),
            (Dist::gamma(0.5, 2.0).unwrap(), "gamma below shape 1"),
        ]
    }

    /// `∫ p(x) dx` over the support by the midpoint rule after `x = tan(v)` (the real
    /// line and the half line) or on (0, 1): 1 to 1e-6, the tails and the edges included.
    #[test]
    fn every_density_integrates_to_one() {
        for (d, name) in families() {
            if name == "gamma below shape 1" {
                continue; // an integrable singularity at 0 that the midpoint rule misses
            }
            type Map = fn(f64) -> (f64, f64);
            let (lo, hi, map): (f64, f64, Map) = match d {
                Dist::Beta { .. } => (0.0, 1.0, |v| (v, 1.0)),
                _ if d.contains(-1.0) => (-PI / 2.0, PI / 2.0, |v| {
                    let c = libm::cos(v);
                    (libm::tan(v), 1.0 / (c * c))
                }),
                _ => (0.0, PI / 2.0, |v| {
                    let c = libm::cos(v);
                    (libm::tan(v), 1.0 / (c * c))
                }),
            };
            let n = 400_000;
            let h = (hi - lo) / n as f64;
            let total: f64 = (0..n)
                .map(|k| {
                    let (x, jac) = map(lo + (k as f64 + 0.5) * h);
                    libm::exp(d.log_pdf(x)) * jac * h
                })
                .sum();
            assert!((total - 1.0).abs() < 1e-6, "{name}: {total}");
        }
    }

    /// The gradient is the derivative of the log density and the curvature minus the
    /// derivative of the gradient, by central differences, inside each support.
    #[test]
    fn gradient_and_curvature_are_the_derivatives() {
        for (d, name) in families() {
            for x in [0.05, 0.3, 0.62, 0.9, 1.7, 4.0, -0.8, -3.0] {
                if !d.contains(x) || !d.contains(x - 1e-3) || (name == "beta" && x > 0.95) {
                    continue;
                }
                if let Dist::Laplace { mu, .. } = d
                    && (x - mu).abs() < 1e-2
                {
                    continue;
                }
                let h = 1e-5 * x.abs().max(0.1);
                let fd = (d.log_pdf(x + h) - d.log_pdf(x - h)) / (2.0 * h);
                let g = d.grad_log_pdf(x);
                assert!(
                    (g - fd).abs() < 1e-6 * g.abs().max(1.0),
                    "{name} grad at {x}: {g} vs {fd}"
                );
                if name != "laplace" {
                    let fd2 = -(d.grad_log_pdf(x + h) - d.grad_log_pdf(x - h)) / (2.0 * h);
                    let c = d.curvature(x);
                    assert!(
                        (c - fd2).abs() < 1e-5 * c.abs().max(1.0),
                        "{name} curvature at {x}: {c} vs {fd2}"
                    );
                }
            }
        }
    }

    /// Outside the support: −∞, no gradient, no curvature; a bad parameter is an error.
    #[test]
    fn outside_the_support_and_bad_parameters() {
        for (d, name) in families() {
            let x = match d {
                Dist::Beta { .. } => 1.5,
                _ if d.contains(-1.0) => continue,
                _ => -0.5,
            };
            assert_eq!(d.log_pdf(x), f64::NEG_INFINITY, "{name}");
            assert_eq!((d.grad_log_pdf(x), d.curvature(x)), (0.0, 0.0), "{name}");
        }
        assert!(Dist::normal(0.0, 0.0).is_err());
        assert!(Dist::gamma(f64::NAN, 1.0).is_err());
        assert!(Dist::student_t(1.0, f64::INFINITY, 1.0).is_err());
        assert!(Dist::beta(1.0, -2.0).is_err());
        assert_eq!(
            Dist::normal(0.0, 1.0).unwrap().log_pdf(f64::NAN),
            f64::NEG_INFINITY
        );
    }

    /// The blocks each see their own coordinates; the rest are flat; short inputs are
    /// cut, not a panic.
    #[test]
    fn per_block_gives_each_block_its_prior() {
        let blocks = [
            (Dist::normal(0.0, 2.0).unwrap(), 2),
            (Dist::gamma(3.0, 1.0).unwrap(), 1),
        ];
        let p = PerBlock::new(&blocks);
        assert_eq!(p.len(), 3);
        let theta = [1.0f32, -1.0, 2.0, 7.0];
        let mut g = [0.0f32; 4];
        p.add_grad(&theta, &mut g);
        assert_eq!(g, [-0.25, 0.25, 0.0, 0.0]);
        let mut c = [0.0f64; 4];
        p.add_curvature(&theta, &mut c);
        assert_eq!(c, [0.25, 0.25, 0.5, 0.0]);
        let lp = blocks[0].0.log_pdf(1.0) * 2.0 + blocks[1].0.log_pdf(2.0);
        assert!((Prior::log_density(&p, &theta) - lp).abs() < 1e-12);
        let mut short = [0.0f32; 1];
        p.add_grad(&theta[..1], &mut short);
        assert_eq!(short, [-0.25]);
    }
}
