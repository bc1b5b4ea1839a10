//! A given schedule (`--step-size SPEC`), or a sampler with its own default schedule:
//! every chain runs `--steps` steps from its dispersed start, and burn-in is a number of
//! steps or, with `--burn-in auto`, the step where eq. 10's threshold falls below α.

use std::time::Instant;

use rand_core::SeedableRng;
use sgld::gradient::{GradientEstimator, MiniBatch, sample_batch};
use sgld::noise::DefaultRng;
use sgld::schedule::Schedule;

use super::chains::{self, Chain, Estimator, Sampled, Stretch};
use super::config::SampleConfig;
use super::metric_store::MetricStore;
use super::mode;
use super::options::{DEFAULT_STEPS, auto_thin};
use super::options::{SampleOptions, SamplerKind, cv_applies};
use super::problem::{ModelSync, Problem, with_model};
use super::progress::Bars;
use super::samplers;
use super::seeds::Stream;
use super::warmup::{self, Laplace, WarmupSummary};
use crate::spec::{BurnIn, StepSpec, Thin};

/// The given schedule, or the default of a sampler that does not adapt (or of `precond`/`sgld`
/// without `auto`): `range:ε₀,ε₀/100,0.55` with `ε₀ = 1/N`, capped at a tenth of the
/// Laplace approximation's smallest variance, scaled for pSGLD; `1.5·d^{-1/3}` for MALA.
fn step_spec(cfg: &SampleOptions, model: &dyn ModelSync, lap: &Laplace) -> StepSpec {
    let n = model.len() as f64;
    if let Some(given) = cfg.given_step() {
        return given;
    }
    match cfg.sampler {
        // pSGLD's preconditioner G ≈ 1/|ĝ| shrinks SGLD's default step by orders of
        // magnitude: scale it so that the two move alike.
        SamplerKind::Psgld => {
            let start = scale_at(model, &lap.mode.theta, cfg) * curvature_capped(1.0 / n, lap);
            StepSpec::Range {
                start,
                end: 0.01 * start,
                gamma: 0.55,
            }
        }
        SamplerKind::Mala => StepSpec::Const(1.5 / (model.dim() as f64).cbrt()),
        _ => {
            let start = curvature_capped(1.0 / n, lap);
            StepSpec::Range {
                start,
                end: 0.01 * start,
                gamma: 0.55,
            }
        }
    }
}

/// `eps`, or a tenth of the Laplace approximation's smallest variance where that is
/// smaller: a step whose noise (sd `√ε`) is a third of the posterior's narrowest sd,
/// inside the curvature that the checks warn beyond (`2σ²_min`).
fn curvature_capped(eps: f64, lap: &Laplace) -> f64 {
    let var_min = lap
        .sds
        .iter()
        .filter(|s| s.is_finite() && **s > 0.0)
        .map(|s| s * s)
        .fold(f64::INFINITY, f64::min);
    eps.min(0.1 * var_min)
}

/// Runs the chains on the given (or default) schedule.
pub fn run(
    cfg: &SampleOptions,
    model: &dyn ModelSync,
    lap: &Laplace,
    starts: &[Vec<f32>],
    bars: &Bars,
) -> Result<Sampled, String> {
    let (d, n) = (model.dim(), model.len());
    let steps = cfg.steps.unwrap_or(DEFAULT_STEPS);
    let spec = step_spec(cfg, model, lap);
    let schedule = spec
        .schedule(steps)
        .map_err(|e| format!("--step-size {spec}: {e}"))?;
    let use_cv = cv_applies(cfg.sampler, cfg.cv);
    let mut cv_buf = Vec::new();
    let centre = use_cv.then_some(lap.mode.theta.as_slice());
    let estimator = Estimator::at_mode(model, use_cv.then_some(&lap.mode), &mut cv_buf)?;
    let est = estimator.shared();
    // precond and sghd: the Laplace covariance scaled to mean variance 1, so that a step
    // ε moves every direction as SGLD's ε moves one of the mean variance.
    let mean_var = lap.sds.iter().map(|s| s * s).sum::<f64>() / d.max(1) as f64;
    let scaled = lap.metric.scaled(1.0 / mean_var.max(f64::MIN_POSITIVE));
    let thin = thin_for(cfg, steps);
    let stretch = Stretch::given(cfg, &schedule, steps, thin);
    let mut chains = chains::from_starts(starts, cfg.seed, Some(&cfg.out))?;
    chains::select(&mut chains, cfg.chain_ids.as_ref());
    bars.extend(steps);
    let started = Instant::now();
    let inputs = samplers::Inputs::laplace(model, &scaled, lap);
    let advance = samplers::Advance {
        chains: &mut chains,
        model,
        est,
        stretch: &stretch,
        bars: &bars.bars,
    };
    let grads = match samplers::build(cfg, &inputs, advance)? {
        // MALA's proposal and its test evaluate the whole data set.
        _ if cfg.sampler == SamplerKind::Mala => n as f64 / cfg.batch_or_default() as f64,
        g => g,
    };
    let seconds = started.elapsed().as_secs_f64();
    let (burn_in, notes, warnings) = burn_in(cfg, &chains, steps, n);
    let last_eps = schedule.step_size(steps.saturating_sub(1)) as f64;
    // Every schedule takes its largest step first (a cyclical one at each cycle's start).
    let max_eps = schedule.step_size(0) as f64;
    let alpha = end_alpha(cfg, model, &chains, &scaled, centre, last_eps)?;
    let stability = match cfg.sampler {
        SamplerKind::Sgld | SamplerKind::Sghmc | SamplerKind::Sgnht => {
            Some((max_eps, lap.max_precision))
        }
        // M = Σ/s: the curvature in the metric's coordinates is about 1/s.
        SamplerKind::Precond | SamplerKind::Sghd => Some((max_eps, 1.0 / mean_var)),
        _ => None,
    };
    Ok(Sampled {
        chains,
        burn_in,
        total_steps: steps,
        warmup: WarmupSummary {
            cv: use_cv,
            alpha: alpha.unwrap_or(f64::NAN),
            steps: burn_in,
            ..record(cfg, lap, last_eps)
        },
        thin,
        batch: cfg.batch_or_default(),
        step_label: spec.to_string(),
        grad_evals_per_step: grads * cfg.batch_or_default() as f64,
        seconds,
        sampling: (seconds, steps),
        constant_step: matches!(spec, StepSpec::Const(_)),
        notes,
        warnings,
        alpha,
        stability,
        acceptance: None,
        divergent: None,
    })
}

/// `--thin`, or what keeps at most [`super::options::AUTO_DRAWS`] of the kept steps
/// (counted from where keeping can start: after the burn-in, or halfway at the latest).
fn thin_for(cfg: &SampleOptions, steps: u64) -> u64 {
    match (cfg.thin, cfg.burn_in) {
        (Thin::Every(k), _) => k,
        (Thin::Auto, BurnIn::Steps(b)) => auto_thin(steps.saturating_sub(b)),
        (Thin::Auto, BurnIn::Auto) => auto_thin(steps),
    }
}

/// The warm-up record of a given schedule: the sampler, its batch and last step, the
/// mode search, and the Laplace metric where the sampler uses it.
fn record(cfg: &SampleOptions, lap: &Laplace, last_eps: f64) -> WarmupSummary {
    let laplace = matches!(
        cfg.sampler,
        SamplerKind::Precond | SamplerKind::Sghd | SamplerKind::Mala
    );
    WarmupSummary {
        preconditioner: if laplace { lap.metric.kind() } else { "none" }.into(),
        metric: if laplace { "laplace" } else { "none" }.into(),
        ..WarmupSummary::given(cfg.sampler.name(), cfg.batch_or_default(), last_eps).with_mode(
            lap.mode.iterations,
            lap.mode.passes,
            lap.mode.log_post,
        )
    }
}

/// α of eq. 10 at the chains' ends (the noise's largest `λ` over them) and the last
/// step, for the samplers whose step it describes (SGLD, and `precond` in its metric);
/// none for the others or where a chain failed.
fn end_alpha(
    cfg: &SampleOptions,
    model: &dyn ModelSync,
    chains: &[Chain],
    scaled: &MetricStore,
    centre: Option<&[f32]>,
    last_eps: f64,
) -> Result<Option<f64>, String> {
    let measured = matches!(cfg.sampler, SamplerKind::Sgld | SamplerKind::Precond);
    if !measured || chains.iter().any(|c| c.failure.is_some()) {
        return Ok(None);
    }
    let identity = MetricStore::Diagonal(vec![1.0; model.dim()]);
    let metric = if cfg.sampler == SamplerKind::Sgld {
        &identity
    } else {
        scaled
    };
    let mut rng = DefaultRng::seed_from_u64(Stream::NoiseRows.seed(cfg.seed));
    let rows = warmup::noise_rows(model, &mut rng);
    let mut worst = 0.0f64;
    for c in chains {
        worst = worst.max(warmup::noise_lambda(
            model, metric, &c.theta, centre, &rows,
        )?);
    }
    let batch = cfg.batch_or_default();
    Ok(Some(warmup::alpha_at(
        last_eps,
        worst,
        batch,
        model.len(),
        cfg.temperature,
    )))
}

/// One burn-in for all chains, with the notes and warnings it gives: the given steps,
/// or the latest crossing of the threshold (a note says where; a warning and half the
/// run when some chain never crossed).
fn burn_in(
    cfg: &SampleOptions,
    chains: &[Chain],
    steps: u64,
    n: usize,
) -> (u64, Vec<String>, Vec<String>) {
    match cfg.burn_in {
        BurnIn::Steps(b) => (b, vec![], vec![]),
        BurnIn::Auto if chains.iter().all(|c| c.crossed.is_some()) => {
            let b = chains.iter().filter_map(|c| c.crossed).max().unwrap_or(0);
            let note = format!(
                "burn-in: the sampling threshold fell below alpha = {} at step {b}",
                cfg.alpha
            );
            (b, vec![note], vec![])
        }
        BurnIn::Auto => {
            let crossed = chains.iter().filter(|c| c.crossed.is_some()).count();
            let best = chains
                .iter()
                .filter(|c| c.crossed.is_none())
                .min_by(|a, b| a.min_alpha.total_cmp(&b.min_alpha));
            let (min_alpha, lambda) =
                best.map_or((f64::NAN, f64::NAN), |c| (c.min_alpha, c.lambda_at_min));
            let per_unit =
                warmup::alpha_at(1.0, lambda, cfg.batch_or_default(), n, cfg.temperature);
            let eps_star = cfg.alpha / per_unit;
            let which = if crossed == 0 {
                format!(
                    "never fell below alpha = {} (smallest alpha seen",
                    cfg.alpha
                )
            } else {
                format!(
                    "fell below alpha = {} in only {crossed} of {} chains (smallest alpha seen in the others",
                    cfg.alpha, cfg.chains
                )
            };
            (
                steps / 2,
                vec![],
                vec![format!(
                    "burn-in: the sampling threshold {which} {min_alpha:.3e}): the stochastic-gradient noise dominates the injected noise, so the spread of the draws overstates the posterior's. Eq. 10 puts alpha = {} at step size {eps_star:.3e} for plain SGLD; --step-size auto (the default) adapts the step and a preconditioner. Burn-in fell back to half the run ({} steps).",
                    cfg.alpha,
                    steps / 2
                )],
            )
        }
    }
}

/// pSGLD's step-size scale at `centre`: `1/median(G)` with `G = 1/(λ + rms(ĝ)/N)` per
/// coordinate (as the sampler computes it), from the root-mean-square of 64 mini-batch
/// gradients. A pSGLD step of `ε·scale` then moves the median coordinate like an SGLD
/// step of `ε`.
fn scale_at(model: &dyn ModelSync, centre: &[f32], cfg: &SampleOptions) -> f64 {
    let d = model.dim();
    let est = MiniBatch::new(model);
    let mut rng = DefaultRng::seed_from_u64(Stream::PsgldScale.seed(cfg.seed));
    let batch_len = cfg.batch_or_default().min(model.len()).max(1);
    let (mut batch, mut g, mut sq) = (vec![0usize; batch_len], vec![0.0f32; d], vec![0.0f64; d]);
    for _ in 0..64 {
        if sample_batch(&mut rng, model.len(), &mut batch).is_err() {
            break;
        }
        est.estimate(centre, &batch, &mut g);
        for (s, &x) in sq.iter_mut().zip(&g) {
            *s += x as f64 * x as f64 / 64.0;
        }
    }
    // The median coordinate (rare sparse features have rms ≈ 0 and G ≈ 1/λ: a mean of G
    // would be theirs alone).
    let n = model.len() as f64;
    let lambda = cfg.settings.lambda as f64;
    let mut inv_g: Vec<f64> = sq.iter().map(|s| lambda + s.sqrt() / n).collect();
    inv_g.sort_by(f64::total_cmp);
    inv_g.get(d / 2).copied().unwrap_or(1.0)
}

/// pSGLD's step-size scale (see the README) at the mode of `cfg`'s posterior.
pub fn psgld_scale(cfg: &SampleConfig) -> Result<f64, String> {
    let problem = Problem::load(cfg)?;
    let options = cfg.options();
    with_model(&problem, |model| -> Result<f64, String> {
        let init = warmup::init_rows(&options, &problem.names)?;
        let start = warmup::search_start(init.as_deref(), problem.dim());
        let prior = |theta: &[f32]| problem.prior_precision(theta);
        let m = mode::find_mode_with_prior(model, &start, Some(&prior))?;
        Ok(scale_at(model, &m.theta, &options))
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--thin k` as given; `--thin auto` keeps at most AUTO_DRAWS of the steps that can
    /// be kept: those after a given burn-in, or all of them where keeping starts at the
    /// threshold's crossing (at the latest halfway).
    #[test]
    fn thinning_keeps_at_most_auto_draws() {
        let cfg = |thin, burn_in| SampleOptions {
            thin,
            burn_in,
            ..SampleOptions::new("unused".into())
        };
        assert_eq!(thin_for(&cfg(Thin::Every(7), BurnIn::Auto), 100_000), 7);
        assert_eq!(
            thin_for(&cfg(Thin::Auto, BurnIn::Steps(20_000)), 100_000),
            20
        );
        assert_eq!(thin_for(&cfg(Thin::Auto, BurnIn::Auto), 100_000), 25);
        assert_eq!(thin_for(&cfg(Thin::Auto, BurnIn::Auto), 1_000), 1);
    }
}
