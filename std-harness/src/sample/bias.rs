//! The discretisation bias of a mini-batch run, measured: the Metropolis acceptance that
//! the step's Langevin proposal `θ + (ε/2)M∇log p + N(0, ε(1 − ε/4)τM)` (Gaussian-exact
//! noise, as the adapted runs inject) would have on the full data, from the chains'
//! warm-up states. An unadjusted chain is biased by the drift's
//! error over a step; the acceptance of its proposal says how large that error is beside
//! the step's noise (near 1: negligible; well below: the step outruns the curvature).
//! Above [`MAX_ROWS`] training rows the full data is stood for by evenly spaced rows,
//! their likelihood scaled by `N/m`: the same curvature at a fixed cost.

use rand_core::SeedableRng;
use sgld::models::Model;
use sgld::noise::DefaultRng;
use sgld::sampler::Mala;

use super::metric_store::MetricStore;
use super::options::SampleOptions;
use super::problem::ModelSync;
use super::seeds::Stream;

/// With mini-batches the step is shrunk until the full-data Metropolis acceptance of its
/// Langevin proposal, averaged over the chains' states, is at least this: the drift's
/// error over one step is then small beside its noise, so the discretisation bias is too
/// (on a Gaussian whitened by the metric 0.9 holds up to ε ≈ 0.2 in 124 dimensions and
/// binds only where the curvature outgrows the metric).
pub const BIAS_ACCEPTANCE: f64 = 0.9;

/// The least fraction of the warm-up's step the bias check shrinks it to.
pub const MIN_STEP_FRACTION: f64 = 1.0 / 64.0;

/// The halvings the bias check made at most when it halved the step.
#[deprecated(note = "the step shrinks by what the acceptance asks, to MIN_STEP_FRACTION of it")]
pub const MAX_BIAS_HALVINGS: u32 = 6;

/// The step of [`bounded_step`] and what to say about it.
pub struct Bounded {
    /// The step, shrunk until the test passed or to its floor.
    pub eps: f64,
    /// The mean acceptance at that step.
    pub acceptance: f64,
    /// A note for the table when the step was shrunk.
    pub note: Option<String>,
    /// A warning when the test still failed at the floor.
    pub warning: Option<String>,
}

/// Shrinks `eps` until [`acceptance`] at `points` reaches [`BIAS_ACCEPTANCE`], each time
/// by what its acceptance asks (the rejection grows as `ε^{3/2}`), down to
/// [`MIN_STEP_FRACTION`] of it.
pub fn bounded_step(
    model: &dyn ModelSync,
    metric: &MetricStore,
    mut eps: f64,
    points: &[Vec<f32>],
    cfg: &SampleOptions,
) -> Result<Bounded, String> {
    let floor = eps * MIN_STEP_FRACTION;
    let mut shrinks = 0;
    loop {
        let a = acceptance(model, metric, eps, points, cfg)?;
        let warning = (a < BIAS_ACCEPTANCE && eps <= floor).then(|| {
            format!(
                "the step {eps:.3e} is still too coarse for this posterior's curvature: a full-data Metropolis test would accept {:.0}% of its moves (wanted {:.0}%), so the draws carry a discretisation bias; give --batch N (the whole data set makes the run exact) or a smaller --step-size",
                100.0 * a,
                100.0 * BIAS_ACCEPTANCE
            )
        });
        if a >= BIAS_ACCEPTANCE || warning.is_some() {
            let note = (shrinks > 0).then(|| {
                let times = match shrinks {
                    1 => "once".to_string(),
                    k => format!("{k} times"),
                };
                format!(
                    "warm-up: the step shrank {times} to {eps:.3e} for a full-data Metropolis acceptance of {a:.2} (discretisation bias bounded)"
                )
            });
            return Ok(Bounded {
                eps,
                acceptance: a,
                note,
                warning,
            });
        }
        eps = (eps * shrink_factor(a)).max(floor);
        shrinks += 1;
    }
}

/// What a step whose proposal is accepted with probability `a` is multiplied by: a
/// Langevin proposal's rejection grows as `ε^{3/2}` for small steps (Roberts & Rosenthal
/// 1998, MALA's `1 − a ∝ ℓ³` with `ε = ℓ²`), so the factor aims the rejection at 3/4 of
/// the allowed `1 − BIAS_ACCEPTANCE`, a margin for the test's Monte Carlo error; at
/// least 1/2 (a step far too coarse is halved, as the expansion no longer holds) and
/// below 0.83 whenever the test failed (1/2 for a NaN).
fn shrink_factor(a: f64) -> f64 {
    if a.is_nan() {
        return 0.5;
    }
    let wanted = 0.75 * (1.0 - BIAS_ACCEPTANCE);
    (wanted / (1.0 - a).max(f64::MIN_POSITIVE))
        .powf(2.0 / 3.0)
        .clamp(0.5, 0.9)
}

/// Rows the full data is stood for by, at most.
pub const MAX_ROWS: usize = 4096;

/// Proposals from each point.
pub const PROPOSALS: usize = 16;

/// `m` evenly spaced rows of a model, their likelihood scaled by `N/m`.
struct Subset<'a> {
    model: &'a dyn ModelSync,
    rows: Vec<usize>,
    scale: f64,
}

impl<'a> Subset<'a> {
    fn new(model: &'a dyn ModelSync, m: usize) -> Self {
        let n = model.len();
        let m = m.clamp(1, n.max(1));
        Self {
            model,
            rows: (0..m).map(|k| k * n / m).collect(),
            scale: n as f64 / m as f64,
        }
    }

    fn map(&self, batch: &[usize]) -> Vec<usize> {
        batch
            .iter()
            .filter_map(|&i| self.rows.get(i).copied())
            .collect()
    }
}

impl Model for Subset<'_> {
    fn dim(&self) -> usize {
        self.model.dim()
    }
    fn len(&self) -> usize {
        self.rows.len()
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        self.model.add_log_prior_grad(theta, grad);
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        let mut g = vec![0.0f32; grad.len()];
        self.model.add_log_lik_grad(theta, &self.map(batch), &mut g);
        for (a, b) in grad.iter_mut().zip(&g) {
            *a += (self.scale * *b as f64) as f32;
        }
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        self.model.log_prior(theta)
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        self.scale * self.model.log_lik(theta, &self.map(batch))
    }
}

/// The mean Metropolis acceptance probability of [`PROPOSALS`] Langevin proposals of
/// step `eps` on `metric` from each of `points` (each chained from the last accepted,
/// as a short exact run would), on the full data or [`MAX_ROWS`] of it. Points where the
/// density is not finite count as rejections.
pub fn acceptance(
    model: &dyn ModelSync,
    metric: &MetricStore,
    eps: f64,
    points: &[Vec<f32>],
    cfg: &SampleOptions,
) -> Result<f64, String> {
    let subset;
    let whole: &dyn ModelSync = if model.len() > MAX_ROWS {
        subset = Subset::new(model, MAX_ROWS);
        &subset
    } else {
        model
    };
    let mala = metric
        .mala(whole)
        .map_err(|e| format!("the bias check's metric: {e}"))?
        .gaussian_exact();
    let mala = super::options::with_options!(mala, cfg);
    let d = model.dim();
    let mut sum = 0.0f64;
    let mut count = 0usize;
    for (k, p) in points.iter().enumerate() {
        let mut theta = p.clone();
        let mut scratch = vec![0.0f32; Mala::<()>::scratch_len(d)];
        let mut rng = DefaultRng::seed_from_u64(Stream::BiasCheck(k).seed(cfg.seed));
        count += PROPOSALS;
        let Ok(mut state) = mala.init(&mut theta, &mut scratch) else {
            continue;
        };
        for _ in 0..PROPOSALS {
            if let Ok(info) = mala.step(&mut state, eps as f32, &mut rng) {
                sum += info.accept_prob;
            }
        }
    }
    Ok(sum / count.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgld::models::{Gaussian, LogisticDense};

    /// A step that just fails is shrunk by a little, one that fails by far is halved;
    /// the factor aims the rejection, growing as ε^{3/2}, below the allowed 10%.
    #[test]
    fn the_step_shrinks_by_what_the_acceptance_asks() {
        let near = shrink_factor(0.89);
        assert!((0.7..0.83).contains(&near), "{near}");
        let rejection = (1.0 - 0.89) * near.powf(1.5);
        assert!(rejection < 1.0 - BIAS_ACCEPTANCE, "{rejection}");
        assert_eq!(shrink_factor(0.3), 0.5);
        assert_eq!(shrink_factor(f64::NAN), 0.5);
        assert!(shrink_factor(0.0) == 0.5 && shrink_factor(0.8999) < 0.83);
    }

    /// On a Gaussian target whitened by its metric, 0.1 is accepted almost always; a
    /// metric four times too wide in every direction makes the same step outrun the
    /// curvature, and the acceptance says so.
    #[test]
    fn the_acceptance_sees_a_step_that_outruns_the_curvature() {
        // A logistic regression on one feature and a bias, 400 rows: near Gaussian.
        let n = 400;
        let x: Vec<f32> = (0..n)
            .flat_map(|i| [((i % 17) as f32 - 8.0) / 8.0, 1.0])
            .collect();
        let y: Vec<f32> = (0..n)
            .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        let m = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0).unwrap()).unwrap();
        let mode = crate::sample::mode::find_mode(&m, &[0.0, 0.0]).unwrap();
        let h = crate::sample::mode::hessian_precision(&m, &mode.theta).unwrap();
        let (metric, _) = crate::sample::metric_store::covariance(&h, 2);
        let cfg = SampleOptions::new("unused".into());
        let points = vec![mode.theta.clone(); 4];
        let good = acceptance(&m, &metric, 0.1, &points, &cfg).unwrap();
        assert!(good > 0.95, "{good}");
        let wide = metric.scaled(400.0);
        let bad = acceptance(&m, &wide, 0.1, &points, &cfg).unwrap();
        assert!(bad < 0.5, "{bad}");
    }

    /// On a Gaussian posterior whose covariance is the metric the step's proposal is
    /// Gaussian-exact: the check accepts every move even at a step of 1 in 20
    /// correlated dimensions, where the Euler proposal would fail the check.
    #[test]
    fn the_check_sees_no_bias_in_the_gaussian_exact_step_on_a_gaussian() {
        let d = 20;
        let lik: Vec<f32> = (0..d * d)
            .map(|k| {
                let (i, j) = (k / d, k % d);
                if i == j { 1.0 + i as f32 } else { 0.3 }
            })
            .collect();
        let prior: Vec<f32> = (0..d * d)
            .map(|k| if k / d == k % d { 1.0 } else { 0.0 })
            .collect();
        let mu0 = vec![0.5f32; d];
        let x: Vec<f32> = (0..3 * d).map(|k| (k % 7) as f32 * 0.2 - 0.5).collect();
        let m = sgld::models::GaussianMean::new(&x, d, &lik, &mu0, &prior).unwrap();
        // The posterior precision: P₀ + nΛ, n = 3 rows.
        let p: Vec<f64> = (0..d * d)
            .map(|k| prior[k] as f64 + 3.0 * lik[k] as f64)
            .collect();
        let (metric, _) = crate::sample::metric_store::covariance(&p, d);
        assert_eq!(metric.kind(), "dense");
        let cfg = SampleOptions::new("unused".into());
        let points = vec![vec![0.0f32; d], vec![1.0f32; d]];
        let a = acceptance(&m, &metric, 1.0, &points, &cfg).unwrap();
        assert!(a > 0.99, "{a}");
        let euler = metric.mala(&m).unwrap();
        let (mut theta, mut scratch) = (vec![0.0f32; d], vec![0.0f32; Mala::<()>::scratch_len(d)]);
        let mut state = euler.init(&mut theta, &mut scratch).unwrap();
        let mut rng = DefaultRng::seed_from_u64(1);
        let mean = (0..100)
            .map(|_| euler.step(&mut state, 1.0, &mut rng).unwrap().accept_prob)
            .sum::<f64>()
            / 100.0;
        assert!(mean < BIAS_ACCEPTANCE, "{mean}");
    }

    /// The subset's log likelihood and gradient are `N/m` times those of its rows.
    #[test]
    fn a_subset_scales_its_rows() {
        let n = 10;
        let x: Vec<f32> = (0..2 * n).map(|i| (i % 7) as f32 * 0.3 - 1.0).collect();
        let y: Vec<f32> = (0..n)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let m = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0).unwrap()).unwrap();
        let s = Subset::new(&m, 5);
        assert_eq!(s.rows, vec![0, 2, 4, 6, 8]);
        let theta = [0.3f32, -0.2];
        let want = 2.0 * m.log_lik(&theta, &[0, 2, 4, 6, 8]);
        assert!((s.log_lik(&theta, &[0, 1, 2, 3, 4]) - want).abs() < 1e-9);
        let (mut a, mut b) = ([0.0f32; 2], [0.0f32; 2]);
        s.add_log_lik_grad(&theta, &[0, 1, 2, 3, 4], &mut a);
        m.add_log_lik_grad(&theta, &[0, 2, 4, 6, 8], &mut b);
        for (u, v) in a.iter().zip(&b) {
            assert!((u - 2.0 * v).abs() < 1e-5);
        }
        // Indices past the subset are skipped, never read out of bounds.
        assert!(s.log_lik(&theta, &[99]).abs() < 1e-12);
    }
}
