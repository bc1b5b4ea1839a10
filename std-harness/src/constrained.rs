//! A model written on its parameters' own scale — σ > 0, p in (0, 1), ordered cut points
//! — sampled on the unconstrained scale: [`Constrained`] wraps it with a [`Support`] per
//! block of parameters ([`sgld::transform`]), and [`Target::constrained`] reports the
//! draws, summaries, R̂, ESS and the CmdStan files on the model's scale again.
//!
//! [`Target::constrained`]: crate::sample::Target::constrained

use std::cell::Cell;

use sgld::models::Model;
pub use sgld::transform::Support;
use sgld::transform::{add_log_jacobian_grad, check, constrain, log_jacobian, pull_back};

/// `model` of parameters θ, as a model of `u` with `θ = T(u)`: the log prior gains
/// `ln |det J_T(u)|` and every gradient is pulled back by `J_Tᵀ`. The wrapped model's
/// methods see θ inside its support; it needs no transform or Jacobian of its own.
pub struct Constrained<'a, M: ?Sized> {
    model: &'a M,
    blocks: Vec<(Support, usize)>,
}

impl<'a, M: Model + ?Sized> Constrained<'a, M> {
    /// `model` with `blocks[k] = (support, len)` covering its parameters in order, or
    /// the error naming what does not fit.
    pub fn new(model: &'a M, blocks: Vec<(Support, usize)>) -> Result<Self, String> {
        check(&blocks, model.dim()).map_err(|e| format!("constrained parameters: {e}"))?;
        Ok(Self { model, blocks })
    }

    /// The blocks and their supports.
    pub fn blocks(&self) -> &[(Support, usize)] {
        &self.blocks
    }

    /// The wrapped model.
    pub fn inner(&self) -> &'a M {
        self.model
    }

    /// `θ = T(u)`.
    pub fn constrain(&self, u: &[f32]) -> Vec<f32> {
        let mut theta = vec![0.0; u.len()];
        constrain(&self.blocks, u, &mut theta);
        theta
    }

    /// `f(θ, g)` with `θ = T(u)` and `g` a zeroed gradient in θ, both in this thread's
    /// scratch (no allocation a gradient once it has grown; a nested call takes a
    /// buffer of its own).
    fn at<R>(&self, u: &[f32], f: impl FnOnce(&[f32], &mut [f32]) -> R) -> R {
        thread_local! {
            static SCRATCH: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
        }
        let mut buf = SCRATCH.take();
        buf.clear();
        buf.resize(2 * u.len(), 0.0);
        let (theta, g) = buf.split_at_mut(u.len());
        constrain(&self.blocks, u, theta);
        let out = f(theta, g);
        SCRATCH.set(buf);
        out
    }
}

/// The names of the sampler's coordinates for parameters called `names`: `log(tau)` for
/// a positive `tau`, `logit(p)` on an interval, `log(c[2]-c[1])` within an ordered block.
pub fn unconstrained_names(blocks: &[(Support, usize)], names: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(names.len());
    let mut rest = names;
    for &(s, len) in blocks {
        let (block, tail) = rest.split_at(len.min(rest.len()));
        rest = tail;
        for (k, n) in block.iter().enumerate() {
            out.push(match s {
                Support::Positive => format!("log({n})"),
                Support::Lower(a) => format!("log({n}-{a})"),
                Support::Upper(b) => format!("log({b}-{n})"),
                Support::Interval(a, b) => format!("logit(({n}-{a})/({b}-{a}))"),
                Support::Ordered if k > 0 => format!("log({n}-{})", block[k - 1]),
                _ => n.clone(),
            });
        }
    }
    out.extend(rest.iter().cloned());
    out
}

impl<M: Model + ?Sized> Model for Constrained<'_, M> {
    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn len(&self) -> usize {
        self.model.len()
    }

    fn row_width(&self) -> usize {
        self.model.row_width()
    }

    fn add_log_prior_grad(&self, u: &[f32], grad: &mut [f32]) {
        self.at(u, |theta, g| {
            self.model.add_log_prior_grad(theta, g);
            pull_back(&self.blocks, u, g, grad);
        });
        add_log_jacobian_grad(&self.blocks, u, grad);
    }

    fn add_log_lik_grad(&self, u: &[f32], batch: &[usize], grad: &mut [f32]) {
        self.at(u, |theta, g| {
            self.model.add_log_lik_grad(theta, batch, g);
            pull_back(&self.blocks, u, g, grad);
        });
    }

    /// One transform for the whole estimate: the model's own `scaled_grad` in θ, pulled
    /// back, plus the Jacobian's gradient.
    fn scaled_grad(&self, u: &[f32], batch: &[usize], s: f32, grad: &mut [f32]) {
        self.at(u, |theta, g| {
            self.model.scaled_grad(theta, batch, s, g);
            grad.fill(0.0);
            pull_back(&self.blocks, u, g, grad);
        });
        add_log_jacobian_grad(&self.blocks, u, grad);
    }

    fn prefetch(&self, batch: &[usize]) {
        self.model.prefetch(batch);
    }

    fn log_prior(&self, u: &[f32]) -> f64 {
        self.at(u, |theta, _| self.model.log_prior(theta)) + log_jacobian(&self.blocks, u)
    }

    fn log_lik(&self, u: &[f32], batch: &[usize]) -> f64 {
        self.at(u, |theta, _| self.model.log_lik(theta, batch))
    }

    fn add_log_lik_grad_and_value(&self, u: &[f32], batch: &[usize], grad: &mut [f32]) -> f64 {
        self.at(u, |theta, g| {
            let value = self.model.add_log_lik_grad_and_value(theta, batch, g);
            pull_back(&self.blocks, u, g, grad);
            value
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgld::models::{Dist, Prior};

    /// σ ~ half-normal(1) and one observation y ~ N(0, σ²), written on σ.
    struct Scale;
    impl Model for Scale {
        fn dim(&self) -> usize {
            1
        }
        fn len(&self) -> usize {
            1
        }
        fn add_log_prior_grad(&self, t: &[f32], g: &mut [f32]) {
            Dist::half_normal(1.0).unwrap().add_grad(t, g);
        }
        fn add_log_lik_grad(&self, t: &[f32], _: &[usize], g: &mut [f32]) {
            let s = t[0] as f64;
            g[0] += (-1.0 / s + 0.25 / (s * s * s)) as f32; // y = 0.5
        }
        fn log_prior(&self, t: &[f32]) -> f64 {
            Dist::half_normal(1.0).unwrap().log_density(t)
        }
        fn log_lik(&self, t: &[f32], _: &[usize]) -> f64 {
            let s = t[0] as f64;
            -s.ln() - 0.125 / (s * s)
        }
    }

    /// The wrapped model's log density is the model's at `eᵘ` plus `u`, and its gradients
    /// are that density's derivatives.
    #[test]
    fn the_log_density_gains_the_jacobian_and_the_gradients_follow() {
        let m = Constrained::new(&Scale, vec![(Support::Positive, 1)]).unwrap();
        let u = [0.3f32];
        let lp = |u: f32| m.log_prior(&[u]) + m.log_lik(&[u], &[0]);
        let want = Scale.log_prior(&[0.3f32.exp()]) + Scale.log_lik(&[0.3f32.exp()], &[0]) + 0.3;
        assert!((lp(0.3) - want).abs() < 1e-6);
        let h = 1e-3;
        let fd = (lp(0.3 + h) - lp(0.3 - h)) / (2.0 * h as f64);
        let mut g = [0.0f32];
        m.add_log_prior_grad(&u, &mut g);
        m.add_log_lik_grad(&u, &[0], &mut g);
        assert!((g[0] as f64 - fd).abs() < 1e-3, "{} vs {fd}", g[0]);
        let mut s = [9.0f32];
        m.scaled_grad(&u, &[0], 1.0, &mut s);
        assert!((s[0] - g[0]).abs() < 1e-6);
        // A wrapped model wrapped again (the inner call takes a scratch of its own).
        let outer = Constrained::new(&m, vec![(Support::Real, 1)]).unwrap();
        let mut g2 = [0.0f32];
        outer.add_log_prior_grad(&u, &mut g2);
        outer.add_log_lik_grad(&u, &[0], &mut g2);
        assert_eq!(g2, g);
        assert_eq!(outer.log_lik(&u, &[0]), m.log_lik(&u, &[0]));
        assert!(Constrained::new(&Scale, vec![(Support::Positive, 2)]).is_err());
    }

    #[test]
    fn names_say_the_transform() {
        let names: Vec<String> = ["mu", "tau", "c[1]", "c[2]", "p"]
            .map(String::from)
            .to_vec();
        let blocks = [
            (Support::Real, 1),
            (Support::Positive, 1),
            (Support::Ordered, 2),
            (Support::Interval(0.0, 1.0), 1),
        ];
        assert_eq!(
            unconstrained_names(&blocks, &names),
            [
                "mu",
                "log(tau)",
                "c[1]",
                "log(c[2]-c[1])",
                "logit((p-0)/(1-0))"
            ]
        );
    }
}
