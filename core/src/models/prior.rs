//! Priors as values: independent Laplace or Gaussian coordinates, or flat; the other
//! families, and a prior per block, are in [`super::dist`].

use crate::error::{Error, check_positive};

/// A prior over (some of) the parameters, applied coordinate-wise.
pub trait Prior {
    /// `grad += ∇ log p(θ)` over the coordinates of `theta`.
    fn add_grad(&self, theta: &[f32], grad: &mut [f32]);
    /// `grad = ∇ log p(θ)`, overwriting `grad` (the default clears it, then adds).
    #[inline]
    fn write_grad(&self, theta: &[f32], grad: &mut [f32]) {
        crate::kernels::zero(grad);
        self.add_grad(theta, grad);
    }
    /// `log p(θ)` including its normalising constant, in f64.
    fn log_density(&self, theta: &[f32]) -> f64;
    /// `out[j] += −∂² log p(θ)/∂θⱼ²` where positive: the prior's precision that the
    /// warm-up's Laplace approximation adds to the likelihood's (the default adds
    /// nothing, a flat prior's).
    #[inline]
    fn add_curvature(&self, theta: &[f32], out: &mut [f64]) {
        let _ = (theta, out);
    }
}

/// Independent Laplace coordinates `p(θⱼ) = e^{−|θⱼ|/b} / 2b` (§5.2 uses `b = 1`).
///
/// The gradient is `−sign(θⱼ)/b`, with the subgradient `0` at `θⱼ = 0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Laplace {
    scale: f32,
}

impl Laplace {
    /// A Laplace prior of scale `b` (finite, positive, and with `1/b` finite in f32).
    pub fn new(scale: f32) -> Result<Self, Error> {
        check_positive("Laplace scale must be finite and > 0", scale as f64)?;
        check_positive(
            "Laplace scale is too small: 1/scale overflows f32",
            (1.0 / scale) as f64,
        )?;
        Ok(Self { scale })
    }

    /// `−sign(θⱼ)/b` (0 at `θⱼ = 0` and for NaN). Without an FPU a float compare is a
    /// library call, and the sign is read from the bits instead.
    #[inline(always)]
    fn grad_at(inv: f32, t: f32) -> f32 {
        if cfg!(sgld_soft_float) {
            Self::grad_from_bits(inv, t)
        } else {
            Self::grad_by_compare(inv, t)
        }
    }

    /// [`Laplace::grad_at`] by float compares.
    #[inline(always)]
    fn grad_by_compare(inv: f32, t: f32) -> f32 {
        if t > 0.0 {
            -inv
        } else if t < 0.0 {
            inv
        } else {
            0.0
        }
    }
}

impl Laplace {
    /// [`Laplace::grad_at`] by integer tests of `t`'s bits: its sign bit, and a
    /// magnitude of 0 (±0) or above infinity's (NaN).
    #[inline(always)]
    fn grad_from_bits(inv: f32, t: f32) -> f32 {
        let bits = t.to_bits();
        let magnitude = bits & 0x7fff_ffff;
        if magnitude == 0 || magnitude > 0x7f80_0000 {
            0.0
        } else if bits >> 31 == 0 {
            -inv
        } else {
            inv
        }
    }
}

impl Prior for Laplace {
    #[inline]
    fn add_grad(&self, theta: &[f32], grad: &mut [f32]) {
        let inv = 1.0 / self.scale;
        for (g, &t) in grad.iter_mut().zip(theta) {
            // Every element written (a zero added where θⱼ = 0 or is NaN): the loop is
            // plain vector loads, blends and stores. Updating only the elements with
            // θⱼ ≠ 0 compiles to masked loads and stores, which wait for the gradient's
            // own stores to reach the cache instead of taking their values on the way.
            *g += Self::grad_at(inv, t);
        }
    }

    #[inline]
    fn write_grad(&self, theta: &[f32], grad: &mut [f32]) {
        let inv = 1.0 / self.scale;
        for (g, &t) in grad.iter_mut().zip(theta) {
            *g = Self::grad_at(inv, t);
        }
    }

    fn log_density(&self, theta: &[f32]) -> f64 {
        let b = self.scale as f64;
        let norm = libm::log(2.0 * b);
        theta.iter().map(|&t| -(t as f64).abs() / b - norm).sum()
    }

    /// `1/(2b²)`, the precision of the Gaussian of the same variance (the density has no
    /// second derivative).
    fn add_curvature(&self, theta: &[f32], out: &mut [f64]) {
        let b = self.scale as f64;
        for o in out.iter_mut().take(theta.len()) {
            *o += 1.0 / (2.0 * b * b);
        }
    }
}

/// Independent Gaussian coordinates `θⱼ ~ N(0, σ²)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gaussian {
    variance: f32,
}

impl Gaussian {
    /// A zero-mean Gaussian prior of variance `σ²` (finite, positive).
    pub fn new(variance: f32) -> Result<Self, Error> {
        check_positive(
            "Gaussian prior variance must be finite and > 0",
            variance as f64,
        )?;
        check_positive(
            "Gaussian prior variance is too small: 1/variance overflows f32",
            (1.0 / variance) as f64,
        )?;
        Ok(Self { variance })
    }
}

impl Prior for Gaussian {
    #[inline]
    fn add_grad(&self, theta: &[f32], grad: &mut [f32]) {
        crate::kernels::imp::axpy(-1.0 / self.variance, theta, grad);
    }

    fn log_density(&self, theta: &[f32]) -> f64 {
        let v = self.variance as f64;
        let norm = 0.5 * libm::log(core::f64::consts::TAU * v);
        theta
            .iter()
            .map(|&t| -0.5 * (t as f64) * (t as f64) / v - norm)
            .sum()
    }

    fn add_curvature(&self, theta: &[f32], out: &mut [f64]) {
        for o in out.iter_mut().take(theta.len()) {
            *o += 1.0 / self.variance as f64;
        }
    }
}

/// The improper flat prior: gradient zero, log density zero.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Flat;

impl Prior for Flat {
    fn add_grad(&self, _theta: &[f32], _grad: &mut [f32]) {}
    fn log_density(&self, _theta: &[f32]) -> f64 {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bits give what the float compares give, at every kind of value.
    #[test]
    fn the_sign_from_the_bits_is_the_compare() {
        let inv = 0.5f32;
        let values = [
            0.0,
            -0.0,
            f32::from_bits(1),
            -f32::from_bits(1),
            f32::MIN_POSITIVE,
            1.0,
            -1.0,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_0001),
        ];
        for t in values {
            let (a, b) = (
                Laplace::grad_from_bits(inv, t),
                Laplace::grad_by_compare(inv, t),
            );
            assert_eq!(a.to_bits(), b.to_bits(), "{t}");
            assert_eq!(Laplace::grad_at(inv, t).to_bits(), b.to_bits(), "{t}");
        }
    }
}
