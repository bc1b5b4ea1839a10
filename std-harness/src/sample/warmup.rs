//! Stage 3, warm-up: the mode and its Laplace approximation, the chains' dispersed
//! starts, the estimator (mini-batch or control variates) and the step size that puts
//! the sampling threshold α of eq. 10 at `--alpha` in the preconditioned coordinates.

use rand_core::SeedableRng;
use sgld::estimate::{sampling_threshold, threshold_scratch_len};
use sgld::gradient::sample_batch;
use sgld::noise::{DefaultRng, fill_normal};

use super::metric_store::{self, MetricStore};
use super::mode::{self, Mode};
use super::options::SampleOptions;
use super::problem::ModelSync;
pub use super::records::WarmupSummary;
use super::seeds::Stream;
use crate::spec::InitSpec;

/// The largest adapted step in the preconditioned coordinates. Its Gaussian-exact noise
/// adds no variance where the metric is the posterior's covariance; where the metric's
/// whitened precision is `λ` instead of 1 the variance is `(1 − ε/4)/(1 − λε/4)` of the
/// posterior's, which 0.1 keeps within 2.5% below 1 for any `λ < 1` and within 3% above
/// it up to `λ = 2`; a larger step would buy nothing: with mini-batches the batch that
/// holds α grows with the step, so the gradients per unit of ε stay the same.
pub const MAX_WHITE_STEP: f64 = 0.1;

/// The largest adapted step on large data ([`mode::subsampled`]) under a dense Laplace
/// metric and a target without kinks away from the prior's. There the Laplace
/// approximation is the posterior up to `O(1/√N)` (Bernstein–von Mises), so the whitened
/// precisions `λ` lie near 1, and at 0.4 the variance stays within 1.1% of the
/// posterior's for `λ ∈ [0.9, 1.1]`. The Gaussian-exact step's autocorrelation time,
/// `4/ε − 1` steps on a Gaussian, falls from 39 to 9: the batch that holds α grows four
/// times, so an effective draw costs as many gradients in a quarter of the steps. The
/// bias check ([`super::bias`]) still shrinks it where the full data say the Gaussian is
/// not close enough.
pub const MAX_WHITE_STEP_LARGE: f64 = 0.4;

/// The largest adapted step for `n` rows under `metric`: [`MAX_WHITE_STEP_LARGE`] on
/// large data under a dense metric where the target is `smooth` (or kinked only by a
/// Laplace prior), [`MAX_WHITE_STEP`] otherwise.
pub fn max_white_step(n: usize, metric: &MetricStore, smooth: bool) -> f64 {
    let dense = matches!(metric, MetricStore::Cholesky(_));
    if smooth && dense && mode::subsampled(n) {
        MAX_WHITE_STEP_LARGE
    } else {
        MAX_WHITE_STEP
    }
}

/// Starts lie this many Laplace sds from the mode (overdispersed).
pub const START_SPREAD: f64 = 2.0;

/// The Laplace approximation at the mode.
#[derive(Debug, Clone)]
pub struct Laplace {
    /// The mode search's result.
    pub mode: Mode,
    /// The covariance `M = P⁻¹` as a preconditioner.
    pub metric: MetricStore,
    /// The Cholesky factor of `P` (dense only): MALA's precision factor.
    pub precision_factor: Option<Vec<f32>>,
    /// `√Mⱼⱼ`.
    pub sds: Vec<f64>,
    /// The largest diagonal entry of `P` (a lower bound on its largest eigenvalue).
    pub max_precision: f64,
}

impl Laplace {
    /// The same approximation with a diagonal metric: its marginal variances `Mⱼⱼ`
    /// (not `1/Pⱼⱼ`, which correlations shrink).
    pub fn diagonal(&self) -> Laplace {
        Laplace {
            mode: self.mode.clone(),
            metric: MetricStore::Diagonal(self.sds.iter().map(|s| (s * s) as f32).collect()),
            precision_factor: None,
            sds: self.sds.clone(),
            max_precision: self.max_precision,
        }
    }

    /// The mode plus `spread` times a draw from the approximation: `θ̂ + spread·M^½ z`.
    pub fn draw(&self, rng: &mut DefaultRng, spread: f64) -> Vec<f32> {
        let mut z = vec![0.0f32; self.mode.theta.len()];
        fill_normal(rng, &mut z);
        let z: Vec<f64> = z.iter().map(|&v| spread * v as f64).collect();
        let dz = self.metric.sqrt_times(&z);
        self.mode
            .theta
            .iter()
            .zip(&dz)
            .map(|(&m, &v)| (m as f64 + v) as f32)
            .collect()
    }

    /// A stand-in when no mode was found: `start` with unit variances.
    pub fn at(start: &[f32]) -> Laplace {
        let d = start.len();
        Laplace {
            mode: Mode {
                theta: start.to_vec(),
                log_post: f64::NAN,
                iterations: 0,
                passes: 0.0,
                log_lik_grad: None,
            },
            metric: MetricStore::Diagonal(vec![1.0; d]),
            precision_factor: None,
            sds: vec![1.0; d],
            max_precision: f64::NAN,
        }
    }
}

pub use super::mode::PriorDiagonal;

/// The mode (L-BFGS from `start`) and the Laplace approximation there.
/// `prior_precision(θ)`, when given, is the diagonal of the prior's precision at θ, and
/// the precision is the empirical Fisher information plus it. Without it (a model of
/// the user's, whose prior the harness cannot see) the precision is the negative
/// Hessian of the log posterior by central differences of its gradient (prior
/// included) where that is positive definite, up to [`mode::MAX_DENSE_METRIC`]
/// parameters; otherwise the Fisher information plus the Hessian's positive diagonal.
pub fn laplace(
    prior_precision: Option<PriorDiagonal<'_>>,
    model: &dyn ModelSync,
    start: &[f32],
) -> Result<Laplace, String> {
    let mode = mode::find_mode_with_prior(model, start, prior_precision)?;
    let d = model.dim();
    let p = match prior_precision {
        Some(prior) => mode::precision(model, &mode.theta, &prior(&mode.theta)),
        None => match mode::hessian_precision(model, &mode.theta) {
            Some(h) if sgld::linalg::cholesky(&mut h.clone(), d).is_ok() => h,
            Some(h) => {
                let diag: Vec<f64> = (0..d).map(|j| h[j * d + j].max(0.0)).collect();
                mode::precision(model, &mode.theta, &diag)
            }
            None => mode::precision(model, &mode.theta, &vec![0.0; d]),
        },
    };
    let max_precision = if p.len() == d * d {
        (0..d).map(|j| p[j * d + j]).fold(0.0, f64::max)
    } else {
        p.iter().copied().fold(0.0, f64::max)
    };
    let (metric, precision_factor) = metric_store::covariance(&p, d);
    let sds = metric.sds();
    Ok(Laplace {
        mode,
        metric,
        precision_factor,
        sds,
        max_precision,
    })
}

/// The start of the mode search: the first `--init` row, or zeros.
pub fn search_start(init: Option<&[Vec<f32>]>, d: usize) -> Vec<f32> {
    init.map_or_else(|| vec![0.0; d], |rows| rows[0].clone())
}

/// The `--init` rows, checked against the parameter names, if given.
pub fn init_rows(cfg: &SampleOptions, names: &[String]) -> Result<Option<Vec<Vec<f32>>>, String> {
    let d = names.len();
    let rows: Vec<Vec<f64>> = match &cfg.init {
        None => return Ok(None),
        Some(InitSpec::Values(v)) => vec![v.clone()],
        Some(InitSpec::File(path)) => {
            let (header, values) = crate::data::csv_table::read_columns(path)
                .map_err(|e| format!("--init {}: {e}", path.display()))?;
            if header != names {
                return Err(format!(
                    "--init {}: the header must name the {d} parameters in order ({}…)",
                    path.display(),
                    names.iter().take(3).cloned().collect::<Vec<_>>().join(",")
                ));
            }
            values
                .chunks_exact(d)
                .map(|r| r.iter().map(|&v| v as f64).collect())
                .collect()
        }
    };
    if let Some(r) = rows.iter().find(|r| r.len() != d) {
        return Err(format!(
            "--init gives {} values; the model has {d} parameters ({})",
            r.len(),
            names.join(",")
        ));
    }
    if rows.is_empty() {
        return Err("--init: the file has no rows".into());
    }
    if rows.len() != 1 && rows.len() != cfg.chains {
        return Err(format!(
            "--init has {} rows: give one (every chain) or one per chain ({})",
            rows.len(),
            cfg.chains
        ));
    }
    if rows.iter().flatten().any(|v| !v.is_finite()) {
        return Err("--init values must be finite".into());
    }
    Ok(Some(
        rows.iter()
            .map(|r| r.iter().map(|&v| v as f32).collect())
            .collect(),
    ))
}

/// Each chain's start: the `--init` rows as given (one row: every chain), or the mode
/// plus a draw from the Laplace approximation widened [`START_SPREAD`] times (each
/// chain its own stream).
pub fn starts(cfg: &SampleOptions, lap: &Laplace, init: Option<&[Vec<f32>]>) -> Vec<Vec<f32>> {
    match init {
        Some(rows) => (0..cfg.chains)
            .map(|c| rows[c.min(rows.len() - 1)].clone())
            .collect(),
        None => (0..cfg.chains)
            .map(|c| {
                let seed = Stream::Start(c).seed(cfg.seed);
                lap.draw(&mut DefaultRng::seed_from_u64(seed), START_SPREAD)
            })
            .collect(),
    }
}

/// `λ_max` of the covariance of the per-example contributions to the gradient estimate
/// in the whitened coordinates (`(M^½)ᵀ(∇log p(xᵢ|θ) − ∇log p(xᵢ|θ̂))` with control
/// variates around `centre`, without them `(M^½)ᵀ∇log p(xᵢ|θ)`), over `rows`. Eq. 10
/// then gives `α = ε N² λ / (4n)` for batch size `n`. 0 from fewer than two rows (every
/// batch is then the whole data set).
pub fn noise_lambda(
    model: &dyn ModelSync,
    metric: &MetricStore,
    theta: &[f32],
    centre: Option<&[f32]>,
    rows: &[usize],
) -> Result<f64, String> {
    let d = model.dim();
    let m = rows.len();
    if m < 2 {
        // One row: every batch is the whole data set, whose gradient has no noise.
        return Ok(0.0);
    }
    let mut scores = vec![0.0f32; m * d];
    let (mut g, mut gc) = (vec![0.0f32; d], vec![0.0f32; d]);
    for (row, &i) in scores.chunks_exact_mut(d).zip(rows) {
        g.fill(0.0);
        model.add_log_lik_grad(theta, &[i], &mut g);
        if let Some(c) = centre {
            gc.fill(0.0);
            model.add_log_lik_grad(c, &[i], &mut gc);
            for (a, b) in g.iter_mut().zip(&gc) {
                *a -= b;
            }
        }
        metric.whiten_grad(&g, row);
    }
    if m.min(d) > FORMED_SPECTRUM {
        return Ok(super::spectrum::covariance_lambda_max(&scores, m, d));
    }
    let mut scratch = vec![0.0f64; threshold_scratch_len(m, d)];
    sampling_threshold(&scores, m, d, 1.0, model.len().max(m), None, &mut scratch)
        .map(|t| t.lambda_max)
        .map_err(|e| format!("the sampling threshold: {e}"))
}

/// The most per-example gradient entries one noise probe holds (64 MB of f32).
pub const MAX_SCORE_VALUES: usize = 1 << 24;

/// Up to this `min(rows, d)` the noise's covariance is formed and decomposed (eq. 10 as
/// the core computes it); above, its largest eigenvalue comes from Lanczos
/// ([`super::spectrum`]), whose cost grows like `rows × d`, not cubically.
const FORMED_SPECTRUM: usize = 128;

/// The rows the noise is measured on: `min(N, max(1000, 4d))` drawn with `rng`, and no
/// more than keep [`MAX_SCORE_VALUES`] gradient entries (at least 100 rows): with tens of
/// thousands of parameters a probe's per-example gradients would otherwise take
/// gigabytes. Fewer rows than parameters overstate `λ_max` a little, which errs towards
/// a smaller step.
pub fn noise_rows(model: &dyn ModelSync, rng: &mut DefaultRng) -> Vec<usize> {
    let n = model.len();
    let d = model.dim().max(1);
    let m = n
        .min(1000.max(4 * d))
        .min((MAX_SCORE_VALUES / d).max(100))
        .max(2);
    let mut rows = vec![0usize; m];
    if m >= n {
        rows = (0..n).collect();
    } else if sample_batch(rng, n, &mut rows).is_err() {
        rows = (0..m).collect();
    }
    rows
}

/// The adapted step size for noise `λ` (eq. 10 solved for ε at α = `alpha`, batch
/// `n`), at most `max_step` ([`max_white_step`]).
pub fn step_for(
    lambda: f64,
    alpha: f64,
    batch: usize,
    n_data: usize,
    temperature: f32,
    max_step: f64,
) -> f64 {
    let per_unit = alpha_at(
        1.0,
        lambda.max(f64::MIN_POSITIVE),
        batch,
        n_data,
        temperature,
    );
    (alpha / per_unit).min(max_step)
}

/// α of eq. 10 at step `eps` for noise `λ`: `ε N² λ / (4 n τ)` (the injected noise of
/// temperature τ is ετ; τ = 0 counts as 1).
pub fn alpha_at(eps: f64, lambda: f64, batch: usize, n_data: usize, temperature: f32) -> f64 {
    let nd = n_data as f64;
    let tau = if temperature > 0.0 {
        temperature as f64
    } else {
        1.0
    };
    eps * nd * nd * lambda / (4.0 * batch as f64 * tau)
}
