//! The discretisation bias of a mini-batch run, measured: the Metropolis acceptance that
//! the step's Langevin proposal `θ + (ε/2)M∇log p + N(0, ε(1 − ε/4)τM)` (Gaussian-exact
//! noise, as the adapted runs inject) would have on the full data, from the chains'
//! warm-up states. An unadjusted chain is biased by the drift's
//! error over a step; the acceptance of its proposal says how large that error is beside
//! the step's noise (near 1: negligible; well below: the step outruns the curvature).
//! Above [`MAX_ROWS`] training rows the full data is stood for by evenly spaced rows
//! corrected to the full data's first-order expansion at the mode (Quiroz et al. 2019's
//! difference estimator): the same curvature, centred where the chains are, at a fixed
//! cost.

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
/// [`MIN_STEP_FRACTION`] of it. Above [`MAX_ROWS`] rows the test stands on rows
/// corrected to the full data's expansion at `centre`, whose full-data log-likelihood
/// gradient `full_grad` is (computed when `None`).
pub fn bounded_step(
    model: &dyn ModelSync,
    metric: &MetricStore,
    mut eps: f64,
    points: &[Vec<f32>],
    centre: &[f32],
    full_grad: Option<&[f32]>,
    cfg: &SampleOptions,
) -> Result<Bounded, String> {
    let surrogate = stand_in(model, centre, full_grad)?;
    let whole = surrogate.as_ref().map_or(model, |s| s as &dyn ModelSync);
    let floor = eps * MIN_STEP_FRACTION;
    let mut shrinks = 0;
    loop {
        let a = acceptance_on(whole, metric, eps, points, cfg)?;
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

/// `m` evenly spaced rows standing for the full data near a centre `θ̂` (the mode): the
/// full data's log likelihood relative to `θ̂`, estimated by its gradient there plus
/// `N/m` times the rows' departures from their own first-order expansion (the
/// difference estimator of Quiroz, Kohn, Villani & Tran 2019, eq. 9):
/// `ℓ̃(θ) = ∇ℓ(θ̂)·Δ + (N/m)·Σ_S [ℓᵢ(θ) − ℓᵢ(θ̂) − ∇ℓᵢ(θ̂)·Δ]`, `Δ = θ − θ̂`, which
/// stands for `ℓ(θ) − ℓ(θ̂)` (a constant of the log density does not change a
/// Metropolis test). Its curvature is the rows' scaled, and its gradient at `θ̂` the
/// full data's; the scaled rows alone would centre their posterior `O(√(N/m))`
/// posterior sds away from the one the chains sample, and the test would measure the
/// proposal there.
struct Surrogate<'a> {
    model: &'a dyn ModelSync,
    rows: Vec<usize>,
    scale: f64,
    centre: Vec<f32>,
    /// `−(N/m)·Σ_S ℓᵢ(θ̂)`.
    offset: f64,
    /// `∇ℓ(θ̂) − (N/m)·Σ_S ∇ℓᵢ(θ̂)`.
    slope: Vec<f64>,
}

impl<'a> Surrogate<'a> {
    /// The surrogate around `centre`, given the full data's log-likelihood gradient there
    /// (the control variates' `centre_grad`) or computing it (one pass over the data).
    fn new(model: &'a dyn ModelSync, m: usize, centre: &[f32], full_grad: Option<&[f32]>) -> Self {
        let (n, d) = (model.len(), model.dim());
        let m = m.clamp(1, n.max(1));
        let rows: Vec<usize> = (0..m).map(|k| k * n / m).collect();
        let scale = n as f64 / m as f64;
        let full_grad: Vec<f64> = match full_grad {
            Some(g) if g.len() == d => g.iter().map(|&v| v as f64).collect(),
            _ => {
                let mut prior = vec![0.0f32; d];
                model.add_log_prior_grad(centre, &mut prior);
                let posterior = super::mode::grad_log_posterior(model, centre);
                posterior
                    .iter()
                    .zip(&prior)
                    .map(|(&g, &p)| g - p as f64)
                    .collect()
            }
        };
        let mut rows_grad = vec![0.0f32; d];
        let rows_value = model.add_log_lik_grad_and_value(centre, &rows, &mut rows_grad);
        let slope = full_grad
            .iter()
            .zip(&rows_grad)
            .map(|(&g, &r)| g - scale * r as f64)
            .collect();
        Self {
            model,
            rows,
            scale,
            centre: centre.to_vec(),
            offset: -scale * rows_value,
            slope,
        }
    }

    fn map(&self, batch: &[usize]) -> Vec<usize> {
        batch
            .iter()
            .filter_map(|&i| self.rows.get(i).copied())
            .collect()
    }

    /// The share of the expansion's terms that `batch` carries: all of them over the
    /// `m` rows, as an exact test sums.
    fn share(&self, batch: &[usize]) -> f64 {
        batch.len() as f64 / self.rows.len() as f64
    }

    /// `offset + slope·(θ − θ̂)`.
    fn linear(&self, theta: &[f32]) -> f64 {
        let tilt: f64 = (self.slope.iter().zip(theta).zip(&self.centre))
            .map(|((&s, &t), &c)| s * (t as f64 - c as f64))
            .sum();
        self.offset + tilt
    }

    /// `grad += (N/m)·g + share·slope`.
    fn add_scaled(&self, g: &[f32], share: f64, grad: &mut [f32]) {
        for ((a, &b), &s) in grad.iter_mut().zip(g).zip(&self.slope) {
            *a += (self.scale * b as f64 + share * s) as f32;
        }
    }
}

impl Model for Surrogate<'_> {
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
        self.add_scaled(&g, self.share(batch), grad);
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        self.model.log_prior(theta)
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        let rows = self.model.log_lik(theta, &self.map(batch));
        self.scale * rows + self.share(batch) * self.linear(theta)
    }
    fn add_log_lik_grad_and_value(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) -> f64 {
        let mut g = vec![0.0f32; grad.len()];
        let rows = self
            .model
            .add_log_lik_grad_and_value(theta, &self.map(batch), &mut g);
        let share = self.share(batch);
        self.add_scaled(&g, share, grad);
        self.scale * rows + share * self.linear(theta)
    }
}

/// The mean Metropolis acceptance probability of [`PROPOSALS`] Langevin proposals of
/// step `eps` on `metric` from each of `points` (each chained from the last accepted,
/// as a short exact run would), on the full data or, above [`MAX_ROWS`] rows, on
/// `MAX_ROWS` of them corrected to the full data's expansion around `centre` (the
/// mode). Points where the density is not finite count as rejections.
pub fn acceptance(
    model: &dyn ModelSync,
    metric: &MetricStore,
    eps: f64,
    points: &[Vec<f32>],
    centre: &[f32],
    cfg: &SampleOptions,
) -> Result<f64, String> {
    let surrogate = stand_in(model, centre, None)?;
    let whole = surrogate.as_ref().map_or(model, |s| s as &dyn ModelSync);
    acceptance_on(whole, metric, eps, points, cfg)
}

/// The surrogate the test runs on above [`MAX_ROWS`] rows (`None`: the full data).
fn stand_in<'a>(
    model: &'a dyn ModelSync,
    centre: &[f32],
    full_grad: Option<&[f32]>,
) -> Result<Option<Surrogate<'a>>, String> {
    if centre.len() != model.dim() {
        return Err(format!(
            "the bias check's centre has {} values for {} parameters",
            centre.len(),
            model.dim()
        ));
    }
    Ok((model.len() > MAX_ROWS).then(|| Surrogate::new(model, MAX_ROWS, centre, full_grad)))
}

/// [`acceptance`] on `whole`, the model the test stands on.
fn acceptance_on(
    whole: &dyn ModelSync,
    metric: &MetricStore,
    eps: f64,
    points: &[Vec<f32>],
    cfg: &SampleOptions,
) -> Result<f64, String> {
    let mala = metric
        .mala(whole)
        .map_err(|e| format!("the bias check's metric: {e}"))?
        .gaussian_exact();
    let mala = super::options::with_options!(mala, cfg);
    let d = whole.dim();
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
        let good = acceptance(&m, &metric, 0.1, &points, &mode.theta, &cfg).unwrap();
        assert!(good > 0.95, "{good}");
        let wide = metric.scaled(400.0);
        let bad = acceptance(&m, &wide, 0.1, &points, &mode.theta, &cfg).unwrap();
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
        let a = acceptance(&m, &metric, 1.0, &points, &mu0, &cfg).unwrap();
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

    /// The surrogate is 0 at its centre with the full data's gradient there, and
    /// elsewhere the full data's expansion there plus `N/m` times its rows' departures
    /// from theirs; chunks of its rows add up to the whole.
    #[test]
    fn the_surrogate_is_the_full_data_s_expansion_plus_the_rows_departures() {
        let n = 10;
        let x: Vec<f32> = (0..2 * n).map(|i| (i % 7) as f32 * 0.3 - 1.0).collect();
        let y: Vec<f32> = (0..n)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let m = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0).unwrap()).unwrap();
        let centre = [0.1f32, -0.05];
        let s = Surrogate::new(&m, 5, &centre, None);
        assert_eq!(s.rows, vec![0, 2, 4, 6, 8]);
        let (all, sub, every): (Vec<usize>, _, _) =
            ((0..n).collect(), [0, 2, 4, 6, 8], [0, 1, 2, 3, 4]);
        let value_grad = |model: &dyn Model, theta: &[f32], batch: &[usize]| {
            let mut g = [0.0f32; 2];
            let v = model.add_log_lik_grad_and_value(theta, batch, &mut g);
            (v, g.map(f64::from))
        };
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * (1.0 + b.abs());
        let (v, g) = value_grad(&s, &centre, &every);
        let (_, full_grad) = value_grad(&m, &centre, &all);
        assert!(v.abs() < 1e-9, "{v}");
        assert!(
            g.iter().zip(&full_grad).all(|(&a, &b)| close(a, b)),
            "{g:?} {full_grad:?}"
        );

        let theta = [0.3f32, -0.2];
        let delta = [0.2f64, -0.15];
        let (rows_at, rows_grad_at) = value_grad(&m, &theta, &sub);
        let (rows_c, rows_grad_c) = value_grad(&m, &centre, &sub);
        let dot = |g: [f64; 2]| g[0] * delta[0] + g[1] * delta[1];
        let want = dot(full_grad) + 2.0 * (rows_at - rows_c - dot(rows_grad_c));
        let want_grad: Vec<f64> = (0..2)
            .map(|j| full_grad[j] + 2.0 * (rows_grad_at[j] - rows_grad_c[j]))
            .collect();
        let (a, ga) = value_grad(&s, &theta, &[0, 1, 2]);
        let (b, gb) = value_grad(&s, &theta, &[3, 4]);
        assert!(close(a + b, want), "{} {want}", a + b);
        for j in 0..2 {
            assert!(
                close(ga[j] + gb[j], want_grad[j]),
                "{j}: {} {}",
                ga[j] + gb[j],
                want_grad[j]
            );
        }
        assert!(close(s.log_lik(&theta, &every), want));
        let mut g = [0.0f32; 2];
        s.add_log_lik_grad(&theta, &every, &mut g);
        assert!((0..2).all(|j| close(g[j] as f64, want_grad[j])), "{g:?}");
        // Given the full data's gradient at the centre (as control variates hold it),
        // the same surrogate.
        let given = full_grad.map(|g| g as f32);
        let t = Surrogate::new(&m, 5, &centre, Some(&given));
        assert!(close(t.log_lik(&theta, &every), want));
        // Indices past the rows are skipped, never read out of bounds.
        assert!(s.log_lik(&theta, &[99]).is_finite());
    }

    /// On more rows than [`MAX_ROWS`] the test stands on the surrogate, and accepts as
    /// the full data would, from a step the Gaussian-exact proposal takes easily to
    /// metrics three and four times too wide: within 0.04 (both share their random
    /// numbers; they differ by the surrogate's error and, once a chain's decisions part,
    /// by Monte Carlo error), where the rows alone, scaled, differ by over 0.1.
    #[test]
    fn the_surrogate_accepts_as_the_full_data_does() {
        let n = 40_000;
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut x = Vec::with_capacity(3 * n);
        let mut y = Vec::with_capacity(n);
        for _ in 0..n {
            let (a, b) = (2.0 * uniform() - 1.0, 2.0 * uniform() - 1.0);
            let p = 1.0 / (1.0 + (-(1.5 * a - b + 0.5 * a * b + 0.2)).exp());
            x.extend([a as f32, b as f32, 1.0]);
            y.push(if uniform() < p { 1.0 } else { -1.0 });
        }
        let m = LogisticDense::new(&x, &y, 3, Gaussian::new(1.0).unwrap()).unwrap();
        let mode = crate::sample::mode::find_mode(&m, &[0.0; 3]).unwrap();
        let h = crate::sample::mode::hessian_precision(&m, &mode.theta).unwrap();
        let (metric, _) = crate::sample::metric_store::covariance(&h, 3);
        let sd: Vec<f32> = (0..3).map(|j| (1.0 / h[4 * j]).sqrt() as f32).collect();
        let points: Vec<Vec<f32>> = [
            [1.0f32, -1.0, 0.5],
            [-0.5, 0.8, -1.2],
            [1.5, 0.3, 0.0],
            [-1.0, -1.0, 1.0],
        ]
        .iter()
        .map(|z| (0..3).map(|j| mode.theta[j] + z[j] * sd[j]).collect())
        .collect();
        let cfg = SampleOptions::new("unused".into());
        let mut worst_plain = 0.0f64;
        for (metric, eps) in [
            (metric.clone(), 0.4),
            (metric.clone(), 1.5),
            (metric.scaled(3.0), 1.0),
            (metric.scaled(4.0), 1.0),
        ] {
            let full = acceptance_on(&m, &metric, eps, &points, &cfg).unwrap();
            let stood = acceptance(&m, &metric, eps, &points, &mode.theta, &cfg).unwrap();
            assert!(
                (full - stood).abs() < 0.04,
                "ε = {eps}: {full} on the full data, {stood} on the surrogate"
            );
            // The rows scaled without the expansion: the surrogate with it zeroed.
            let mut plain = Surrogate::new(&m, MAX_ROWS, &mode.theta, None);
            plain.offset = 0.0;
            plain.slope.fill(0.0);
            let rows = acceptance_on(&plain, &metric, eps, &points, &cfg).unwrap();
            worst_plain = worst_plain.max((full - rows).abs());
        }
        assert!(worst_plain > 0.1, "{worst_plain}");
    }
}
