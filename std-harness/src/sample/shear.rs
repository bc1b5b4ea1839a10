//! A shear that lets a diagonal metric fit a posterior whose intercept is correlated
//! with every other coefficient.
//!
//! In a regression on sparse features with an intercept `θ_b`, the likelihood pins down
//! the mean linear predictor `θ_b + Σⱼ μⱼθⱼ` (`μⱼ` the weighted share of rows that hold
//! feature `j`) far better than `θ_b` alone: where every row holds as many features, the
//! likelihood does not change at all along `θ_b += k c, θⱼ −= c`. A diagonal metric then
//! has to take the intercept's conditional sd for its step and its marginal sd for its
//! trajectory: at 20,000 rows × 50,000 features, a ratio of about 30.
//!
//! The shear `z_b = θ_b + Σⱼ μⱼθⱼ` (`zⱼ = θⱼ` otherwise) has unit Jacobian, so a
//! sampler may move in `z` with the posterior unchanged. With `μⱼ = P_bj/P_bb` from the
//! precision `P` at the mode, `z_b` is uncorrelated with the rest in the Laplace
//! approximation (`θᵀPθ = P_bb z_b² + θᵀ(P − P_·b P_b· /P_bb)θ` over the others), and its
//! variance is the intercept's conditional one, `1/P_bb`: what the diagonal metric holds.

use super::dense::dot;
use super::mode::{Rows, fold_row_grads};
use super::problem::ModelSync;

/// The intercept shear: `z_hub = θ_hub + Σⱼ μⱼθⱼ`, every other coordinate unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct Shear {
    /// The coordinate the others are sheared into (the intercept).
    pub hub: usize,
    /// `μⱼ` (0 at the hub).
    pub mu: Vec<f64>,
}

/// Rows whose gradients' non-zero entries find the hub.
pub const HUB_PROBE_ROWS: usize = 256;

/// The hub's row gradients are non-zero in at least this share of the probed rows.
pub const HUB_MIN_SHARE: f64 = 0.9;

/// The hub's row gradients are non-zero in at least this many times as many rows as
/// the average coordinate's: in dense data every coordinate is in every row, and there
/// is no hub.
pub const HUB_MIN_LEAD: f64 = 4.0;

impl Shear {
    /// `z_hub` at `theta`.
    pub fn hub_z(&self, theta: &[f32]) -> f64 {
        theta[self.hub] as f64 + dot(&self.mu, theta)
    }

    /// `θ_hub` at `z`.
    pub fn hub_theta(&self, z: &[f64]) -> f64 {
        z[self.hub] - dot(&self.mu, z)
    }

    /// A gradient in `θ` taken to `z` (`Sᵀg` for `θ = Sz`): `gⱼ − μⱼ g_hub`.
    pub fn grad_to_z(&self, g: &mut [f64]) {
        let gh = g[self.hub];
        for (gj, m) in g.iter_mut().zip(&self.mu) {
            *gj -= m * gh;
        }
    }

    /// The shear of `model`'s posterior at `theta` (its mode) whose hub's precision is
    /// `hub_precision(hub)` (the diagonal metric's `1/m_hub`): the hub is a coordinate
    /// whose row gradients are non-zero in nearly every row and in many more rows than
    /// the others' ([`HUB_MIN_SHARE`], [`HUB_MIN_LEAD`]); `μⱼ = F_hub,j/P_hub` with the
    /// empirical Fisher information `F = Σᵢ gᵢgᵢᵀ` over the warm-up's rows. `None`
    /// without such a coordinate.
    pub fn at(
        model: &dyn ModelSync,
        theta: &[f32],
        hub_precision: impl Fn(usize) -> f64,
    ) -> Option<Shear> {
        let (d, n) = (model.dim(), model.len());
        if d < 2 || n == 0 {
            return None;
        }
        let probe = Rows::sample(n, HUB_PROBE_ROWS);
        let counts = fold_row_grads(model, theta, &probe, d, |g, c| {
            for (c, v) in c.iter_mut().zip(g) {
                *c += f64::from(u8::from(*v != 0.0));
            }
        });
        let (hub, &top) = counts
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))?;
        let mean = counts.iter().sum::<f64>() / d as f64;
        // The counts are scaled to all rows, as the share is.
        if top < HUB_MIN_SHARE * n as f64 || top < HUB_MIN_LEAD * mean {
            return None;
        }
        let p_hub = hub_precision(hub);
        if !(p_hub.is_finite() && p_hub > 0.0) {
            return None;
        }
        // `F_hub,j = Σᵢ gᵢ,hub gᵢⱼ` (a zero `gᵢⱼ` adds nothing: no branch per entry).
        let mut mu = fold_row_grads(model, theta, &Rows::warmup(n), d, |g, f| {
            let gh = g[hub] as f64;
            if gh != 0.0 {
                for (fj, &gj) in f.iter_mut().zip(g) {
                    *fj += gh * gj as f64;
                }
            }
        });
        let c = 1.0 / p_hub;
        for m in mu.iter_mut() {
            *m *= c;
        }
        mu[hub] = 0.0;
        mu.iter()
            .all(|m| m.is_finite())
            .then_some(Shear { hub, mu })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgld::models::Model;

    /// Logistic regression on rows of `k` of `m` binary features and an intercept (the
    /// last coordinate), or on dense rows (every feature in every row).
    struct Rows01 {
        rows: Vec<Vec<usize>>,
        y: Vec<f32>,
        m: usize,
    }

    impl Rows01 {
        fn sparse(n: usize, m: usize, k: usize) -> Self {
            let rows: Vec<Vec<usize>> = (0..n)
                .map(|i| (0..k).map(|c| (i * 7 + c * 13) % m).collect())
                .collect();
            let y = (0..n).map(|i| (i % 3 == 0) as u8 as f32).collect();
            Self { rows, y, m }
        }

        fn eta(&self, theta: &[f32], i: usize) -> f64 {
            let s: f64 = self.rows[i].iter().map(|&j| theta[j] as f64).sum();
            s + theta[self.m] as f64
        }

        /// `∂ log p(yᵢ|θ)/∂η`.
        fn residual(&self, theta: &[f32], i: usize) -> f64 {
            self.y[i] as f64 - 1.0 / (1.0 + (-self.eta(theta, i)).exp())
        }
    }

    impl Model for Rows01 {
        fn dim(&self) -> usize {
            self.m + 1
        }
        fn len(&self) -> usize {
            self.rows.len()
        }
        fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
            for (g, t) in grad.iter_mut().zip(theta) {
                *g -= t;
            }
        }
        fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
            for &i in batch {
                let r = self.residual(theta, i) as f32;
                for &j in &self.rows[i] {
                    grad[j] += r;
                }
                grad[self.m] += r;
            }
        }
        fn log_prior(&self, theta: &[f32]) -> f64 {
            -0.5 * theta.iter().map(|&t| (t as f64).powi(2)).sum::<f64>()
        }
        fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
            batch
                .iter()
                .map(|&i| {
                    let e = self.eta(theta, i);
                    let p = 1.0 / (1.0 + (-e).exp());
                    if self.y[i] > 0.5 {
                        p.ln()
                    } else {
                        (1.0 - p).ln()
                    }
                })
                .sum()
        }
    }

    /// The intercept is the hub, `μⱼ = F_bj/P_b` exactly, and since every row holds `k`
    /// features, `Σⱼ μⱼ = k F_bb/P_b`: the shear holds the mean linear predictor.
    #[test]
    fn the_intercept_of_sparse_rows_is_the_hub_and_mu_its_fisher_row() {
        let (n, m, k) = (3_000, 400, 5);
        let model = Rows01::sparse(n, m, k);
        let theta: Vec<f32> = (0..=m).map(|j| 0.01 * (j % 5) as f32 - 0.02).collect();
        let p_hub = 900.0;
        let sh = Shear::at(&model, &theta, |_| p_hub).expect("a hub");
        assert_eq!(sh.hub, m);
        assert_eq!(sh.mu[m], 0.0);
        let mut f = vec![0.0f64; m + 1];
        for i in 0..n {
            let r = model.residual(&theta, i);
            for &j in &model.rows[i] {
                f[j] += r * r;
            }
            f[m] += r * r;
        }
        for (j, (mu, fj)) in sh.mu.iter().zip(&f).take(m).enumerate() {
            let want = fj / p_hub;
            assert!((mu - want).abs() <= 1e-5 * want.abs().max(1e-3), "μ{j}");
        }
        let sum: f64 = sh.mu.iter().sum();
        let want = k as f64 * f[m] / p_hub;
        assert!((sum / want - 1.0).abs() < 1e-5, "{sum} against {want}");
        // θ ↔ z and the gradient's map are the shear's.
        let z_hub = sh.hub_z(&theta);
        let mut z: Vec<f64> = theta.iter().map(|&t| t as f64).collect();
        z[m] = z_hub;
        assert!((sh.hub_theta(&z) - theta[m] as f64).abs() < 1e-6);
        let mut g = vec![1.0f64; m + 1];
        g[m] = 2.0;
        sh.grad_to_z(&mut g);
        assert_eq!(g[m], 2.0);
        assert!((g[3] - (1.0 - 2.0 * sh.mu[3])).abs() < 1e-12);
    }

    /// Dense rows (every feature in every row) have no hub; nor has a hub precision
    /// that is not positive, or a model without rows.
    #[test]
    fn dense_rows_and_bad_precisions_have_no_shear() {
        let dense = Rows01::sparse(500, 6, 6);
        assert!(dense.rows.iter().all(|r| {
            let mut r = r.clone();
            r.sort_unstable();
            r.dedup();
            r.len() == 6
        }));
        let theta = vec![0.0f32; 7];
        assert_eq!(Shear::at(&dense, &theta, |_| 1.0), None);
        let sparse = Rows01::sparse(500, 100, 3);
        let theta = vec![0.0f32; 101];
        assert!(Shear::at(&sparse, &theta, |_| 1.0).is_some());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(Shear::at(&sparse, &theta, |_| bad), None, "{bad}");
        }
        let empty = Rows01::sparse(0, 100, 3);
        assert_eq!(Shear::at(&empty, &theta, |_| 1.0), None);
    }
}
