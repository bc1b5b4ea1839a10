//! Constrained parameters sampled on the unconstrained scale, as Stan does: each block of
//! coordinates declares its [`Support`], the sampler moves `u ∈ ℝᵈ`, and the model sees
//! `θ = T(u)`. The density of `u` is `p(T(u)) |det J_T(u)|`, so the log-Jacobian joins
//! the log prior ([`log_jacobian`], [`add_log_jacobian_grad`]) and a gradient in θ is
//! pulled back to u by `Jᵀ` ([`pull_back`]).
//!
//! | support | `θ = T(u)` | `ln |det J|` |
//! |---|---|---|
//! | real | `u` | 0 |
//! | positive | `eᵘ` | `u` |
//! | lower bound `a` | `a + eᵘ` | `u` |
//! | upper bound `b` | `b − eᵘ` | `u` |
//! | interval `(a, b)` | `a + (b − a) σ(u)` | `ln(b − a) + ln σ(u) + ln σ(−u)` |
//! | ordered | `θ₁ = u₁`, `θₖ = θₖ₋₁ + e^{uₖ}` | `Σₖ₌₂ uₖ` |
//!
//! Blocks are `(support, len)` pairs covering the coordinates in order. Every function
//! works in f64 and stops at the shorter of its slices: mismatched lengths are caught
//! once by [`check`], never by a panic.
//!
//! ```
//! use sgld::transform::{Support, constrain, unconstrain};
//!
//! let blocks = [(Support::Real, 1), (Support::Positive, 1), (Support::Interval(0.0, 2.0), 1)];
//! let u = [0.3f32, 0.0, 0.0];
//! let mut theta = [0.0f32; 3];
//! constrain(&blocks, &u, &mut theta);
//! assert_eq!(theta, [0.3, 1.0, 1.0]);
//! let mut back = [0.0f32; 3];
//! unconstrain(&blocks, &theta, &mut back)?;
//! assert_eq!(back, u);
//! # Ok::<(), sgld::Error>(())
//! ```

use crate::error::Error;
use crate::math::{log_sigmoid_f64, softplus_f64};

/// Where a block of parameters lives.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Support {
    /// The real line (no transform).
    Real,
    /// `θ > 0`.
    Positive,
    /// `θ > a`.
    Lower(f64),
    /// `θ < b`.
    Upper(f64),
    /// `a < θ < b`.
    Interval(f64, f64),
    /// `θ₁ < θ₂ < … < θₖ` across the block.
    Ordered,
}

impl Support {
    /// Whether `θ` lies inside (strictly; for [`Support::Ordered`], one coordinate is
    /// always inside: the order is checked across the block by [`unconstrain`]).
    pub fn contains(&self, theta: f64) -> bool {
        match *self {
            Self::Real | Self::Ordered => theta.is_finite(),
            Self::Positive => theta > 0.0 && theta.is_finite(),
            Self::Lower(a) => theta > a && theta.is_finite(),
            Self::Upper(b) => theta < b && theta.is_finite(),
            Self::Interval(a, b) => theta > a && theta < b,
        }
    }

    /// `∂θₖ/∂uₖ` at `u` for the `k`-th coordinate of a block (0-based): `±eᵘ` for the
    /// bounds, `(b − a) σ(u) σ(−u)` for an interval (exact in both tails), and for an
    /// ordered block 1 for the first coordinate and `eᵘ` for each increment after it.
    /// With the suffix sums of an ordered block ([`pull_back`]) this is the Jacobian.
    pub fn derivative(&self, k: usize, u: f64) -> f64 {
        match *self {
            Self::Positive | Self::Lower(_) => libm::exp(u),
            Self::Upper(_) => -libm::exp(u),
            Self::Interval(a, b) => (b - a) * libm::exp(-softplus_f64(u) - softplus_f64(-u)),
            Self::Ordered if k > 0 => libm::exp(u),
            Self::Real | Self::Ordered => 1.0,
        }
    }
}

fn sigmoid(u: f64) -> f64 {
    libm::exp(log_sigmoid_f64(u))
}

/// Checks that the blocks are valid and cover `d` coordinates.
pub fn check(blocks: &[(Support, usize)], d: usize) -> Result<(), Error> {
    let mut covered = 0usize;
    for &(s, len) in blocks {
        let bad = match s {
            Support::Lower(a) | Support::Upper(a) => !a.is_finite(),
            Support::Interval(a, b) => !(a.is_finite() && b.is_finite() && a < b),
            _ => false,
        };
        if bad {
            return Err(Error::InvalidParameter {
                what: "a support's bounds must be finite, and an interval's lower bound below its upper",
            });
        }
        covered = covered.saturating_add(len);
    }
    crate::error::check_len("the blocks of supports", d, covered)
}

/// Each block's support with its stretch of `xs` and of `ys` (cut at the shorter).
fn blocks_of<'x, 'y, X, Y>(
    blocks: &[(Support, usize)],
    xs: &'x [X],
    ys: &'y mut [Y],
) -> impl Iterator<Item = (Support, &'x [X], &'y mut [Y])> {
    let n = xs.len().min(ys.len());
    let (mut xs, mut ys) = (&xs[..n], &mut ys[..n]);
    blocks.iter().map(move |&(s, len)| {
        let k = len.min(xs.len());
        let (x, xr) = xs.split_at(k);
        let (y, yr) = core::mem::take(&mut ys).split_at_mut(k);
        (xs, ys) = (xr, yr);
        (s, x, y)
    })
}

/// `θ = T(u)`.
pub fn constrain(blocks: &[(Support, usize)], u: &[f32], theta: &mut [f32]) {
    for (s, u, t) in blocks_of(blocks, u, theta) {
        if s == Support::Ordered {
            let mut acc = 0.0f64;
            for (k, (t, &v)) in t.iter_mut().zip(u).enumerate() {
                acc = if k == 0 {
                    v as f64
                } else {
                    acc + libm::exp(v as f64)
                };
                *t = acc as f32;
            }
            continue;
        }
        for (t, &v) in t.iter_mut().zip(u) {
            let v = v as f64;
            *t = match s {
                Support::Positive => libm::exp(v),
                Support::Lower(a) => a + libm::exp(v),
                Support::Upper(b) => b - libm::exp(v),
                Support::Interval(a, b) => a + (b - a) * sigmoid(v),
                _ => v,
            } as f32;
        }
    }
}

/// `u = T⁻¹(θ)`, or an error when θ is outside its support (or not ordered).
pub fn unconstrain(blocks: &[(Support, usize)], theta: &[f32], u: &mut [f32]) -> Result<(), Error> {
    let outside = Error::InvalidParameter {
        what: "a value outside its parameter's support",
    };
    for (s, t, u) in blocks_of(blocks, theta, u) {
        let mut prev = f64::NEG_INFINITY;
        for (k, (u, &t)) in u.iter_mut().zip(t).enumerate() {
            let t = t as f64;
            if !s.contains(t) || (s == Support::Ordered && t <= prev) {
                return Err(outside);
            }
            *u = match s {
                Support::Positive => libm::log(t),
                Support::Lower(a) => libm::log(t - a),
                Support::Upper(b) => libm::log(b - t),
                Support::Interval(a, b) => {
                    let p = (t - a) / (b - a);
                    libm::log(p) - libm::log1p(-p)
                }
                Support::Ordered if k > 0 => libm::log(t - prev),
                _ => t,
            } as f32;
            prev = t;
        }
    }
    Ok(())
}

/// `ln |det J_T(u)|`.
pub fn log_jacobian(blocks: &[(Support, usize)], u: &[f32]) -> f64 {
    let mut sum = 0.0;
    let mut at = 0usize;
    for &(s, len) in blocks {
        let part = u
            .get(at..at.saturating_add(len).min(u.len()))
            .unwrap_or(&[]);
        at = at.saturating_add(len);
        sum += match s {
            Support::Real => 0.0,
            Support::Positive | Support::Lower(_) | Support::Upper(_) => {
                part.iter().map(|&v| v as f64).sum()
            }
            Support::Interval(a, b) => part
                .iter()
                .map(|&v| {
                    let v = v as f64;
                    libm::log(b - a) + log_sigmoid_f64(v) + log_sigmoid_f64(-v)
                })
                .sum(),
            Support::Ordered => part.iter().skip(1).map(|&v| v as f64).sum(),
        };
    }
    sum
}

/// `grad += ∇ᵤ ln |det J_T(u)|`.
pub fn add_log_jacobian_grad(blocks: &[(Support, usize)], u: &[f32], grad: &mut [f32]) {
    for (s, u, g) in blocks_of(blocks, u, grad) {
        for (k, (g, &v)) in g.iter_mut().zip(u).enumerate() {
            *g += match s {
                Support::Real => 0.0,
                Support::Ordered if k == 0 => 0.0,
                Support::Interval(..) => (1.0 - 2.0 * sigmoid(v as f64)) as f32,
                _ => 1.0,
            };
        }
    }
}

/// `grad_u += J_T(u)ᵀ grad_θ`: a gradient in θ (the model's) as a gradient in u.
pub fn pull_back(blocks: &[(Support, usize)], u: &[f32], grad_theta: &[f32], grad_u: &mut [f32]) {
    let n = grad_theta.len().min(u.len());
    let mut at = 0usize;
    for (s, u, g) in blocks_of(blocks, &u[..n], grad_u) {
        let gt = &grad_theta[at..at + u.len()];
        at += u.len();
        if s == Support::Ordered {
            // θⱼ depends on uₖ for every j ≥ k: the suffix sums of the θ-gradient.
            let mut suffix = 0.0f64;
            for k in (0..u.len()).rev() {
                suffix += gt[k] as f64;
                g[k] += (s.derivative(k, u[k] as f64) * suffix) as f32;
            }
            continue;
        }
        for ((g, &v), &gt) in g.iter_mut().zip(u).zip(gt) {
            *g += (s.derivative(0, v as f64) * gt as f64) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCKS: [(Support, usize); 6] = [
        (Support::Real, 2),
        (Support::Positive, 1),
        (Support::Lower(-1.5), 1),
        (Support::Upper(3.0), 1),
        (Support::Interval(-2.0, 5.0), 2),
        (Support::Ordered, 3),
    ];

    const U: [f32; 10] = [0.4, -1.2, 0.7, -0.3, 1.1, 0.2, -2.5, -0.6, 0.5, -1.0];

    /// The forward map lands in each support, and the inverse brings it back.
    #[test]
    fn constrain_and_unconstrain_are_inverse() {
        check(&BLOCKS, 10).unwrap();
        let mut theta = [0.0f32; 10];
        constrain(&BLOCKS, &U, &mut theta);
        assert!(theta[2] > 0.0 && theta[3] > -1.5 && theta[4] < 3.0);
        assert!(theta[5] > -2.0 && theta[6] < 5.0 && theta[7] < theta[8] && theta[8] < theta[9]);
        let mut back = [0.0f32; 10];
        unconstrain(&BLOCKS, &theta, &mut back).unwrap();
        for (a, b) in back.iter().zip(U) {
            assert!((a - b).abs() < 2e-6, "{back:?}");
        }
        let mut bad = theta;
        bad[9] = bad[8];
        assert!(unconstrain(&BLOCKS, &bad, &mut back).is_err());
        bad = theta;
        bad[2] = -1.0;
        assert!(unconstrain(&BLOCKS, &bad, &mut back).is_err());
        assert!(check(&BLOCKS, 9).is_err());
        assert!(check(&[(Support::Interval(1.0, 1.0), 1)], 1).is_err());
    }

    /// The Jacobian's log determinant and its gradient, and the pull-back `Jᵀg`, against
    /// central differences of the forward map in f64.
    #[test]
    fn jacobian_terms_match_finite_differences() {
        let h = 1e-3f32;
        // J by columns: ∂θ/∂uₖ.
        let mut jac = [[0.0f64; 10]; 10];
        for k in 0..10 {
            let (mut up, mut dn) = (U, U);
            up[k] += h;
            dn[k] -= h;
            let (mut tu, mut td) = ([0.0f32; 10], [0.0f32; 10]);
            constrain(&BLOCKS, &up, &mut tu);
            constrain(&BLOCKS, &dn, &mut td);
            for j in 0..10 {
                jac[j][k] = (tu[j] as f64 - td[j] as f64) / (2.0 * h as f64);
            }
        }
        // The map is triangular: the log determinant is the sum of the diagonal's logs.
        let logdet: f64 = (0..10).map(|j| libm::log(jac[j][j].abs())).sum();
        assert!(
            (log_jacobian(&BLOCKS, &U) - logdet).abs() < 1e-3,
            "{logdet}"
        );
        let gtheta = [0.3f32, -1.0, 2.0, 0.5, -0.7, 1.3, 0.2, -0.4, 0.9, 1.1];
        let mut gu = [0.0f32; 10];
        pull_back(&BLOCKS, &U, &gtheta, &mut gu);
        for k in 0..10 {
            let want: f64 = (0..10).map(|j| jac[j][k] * gtheta[j] as f64).sum();
            assert!(
                (gu[k] as f64 - want).abs() < 2e-3 * want.abs().max(1.0),
                "{k}: {gu:?}"
            );
        }
        let mut gj = [0.0f32; 10];
        add_log_jacobian_grad(&BLOCKS, &U, &mut gj);
        for k in 0..10 {
            let (mut up, mut dn) = (U, U);
            up[k] += h;
            dn[k] -= h;
            let fd = (log_jacobian(&BLOCKS, &up) - log_jacobian(&BLOCKS, &dn)) / (2.0 * h as f64);
            assert!((gj[k] as f64 - fd).abs() < 1e-3, "{k}: {} vs {fd}", gj[k]);
        }
    }

    /// Short or mismatched slices are cut, never a panic; extreme u stay finite where
    /// the constrained value is representable.
    #[test]
    fn short_slices_and_extremes() {
        let mut theta = [0.0f32; 3];
        constrain(&BLOCKS, &U, &mut theta);
        let mut g = [0.0f32; 4];
        pull_back(&BLOCKS, &U[..2], &[1.0; 10], &mut g);
        add_log_jacobian_grad(&BLOCKS, &U[..1], &mut g);
        assert!(log_jacobian(&BLOCKS, &U[..3]).is_finite());
        let iv = [(Support::Interval(0.0, 1.0), 2)];
        let mut t = [0.0f32; 2];
        constrain(&iv, &[-200.0, 200.0], &mut t);
        assert_eq!(t, [0.0, 1.0]);
        assert!(log_jacobian(&iv, &[-200.0, 200.0]).is_finite());
    }
}
