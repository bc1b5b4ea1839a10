//! `--step-size auto`: where the estimator is the whole data set, the exact path
//! ([`exact`]); otherwise preconditioned SGLD (the Laplace covariance as metric, control
//! variates where they pay) at the
//! step that puts α at `--alpha`, shrunk until a full-data Metropolis test would accept
//! its moves ([`bias::BIAS_ACCEPTANCE`]); warm-up until chains from dispersed starts agree
//! (restarted at a smaller step when a chain goes non-finite), then sampling in blocks
//! until every parameter reaches the target ESS with R̂ ≤ 1.01.

use std::time::Instant;

use rand_core::SeedableRng;
use rayon::prelude::*;
use sgld::noise::DefaultRng;
use sgld::sampler::PrecondSgld;
use sgld::schedule::Constant;

use super::adapt;
use super::bias;
use super::blocks::{WARMUP_RHAT, sample_to_target};
use super::chains::{self, Chain, Estimator, Sampled, Stretch, advance_all};
use super::config::{SampleConfig, SamplerKind};
use super::diagnose;
use super::exact;
use super::mode::MetricStore;
use super::problem::ModelSync;
use super::progress::Bars;
use super::seeds::Stream;
use super::warmup::{self, Laplace, MAX_WHITE_STEP, WarmupSummary};
use crate::spec::{BurnIn, Thin};

/// The step is set for α at this fraction of `--alpha`, so that α at any one state stays
/// below it.
pub const ALPHA_MARGIN: f64 = 0.5;

/// Restarts of the warm-up, each at a quarter of the step, after a chain went
/// non-finite before the run gives up.
pub const MAX_RESTARTS: u32 = 3;

/// The unadjusted path replaces the Laplace metric by the warm-up draws' only when a
/// whitened variance is off by more than this either way (an sd off by 3×): its draws
/// carry the step's own inflation, and on a9a (whose Laplace prior's kinks the
/// approximation smooths over) variance ratios up to 5 come with draws that match NUTS.
pub const ULA_MAX_VARIANCE_RATIO: f64 = 10.0;

/// Replacements of the unadjusted path's metric by its warm-up draws, at most.
const MAX_METRIC_UPDATES: u32 = 4;

/// What the exact path can make of a target's log density.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Smooth: MALA.
    Smooth,
    /// Smooth but for a Laplace prior of this scale on every coordinate, whose kinks HMC
    /// follows exactly ([`exact::Integrator::Hmc`]).
    Laplace(f32),
    /// Kinked where the sampler does not know: the unadjusted step.
    Kinked,
}

/// Runs the adapted warm-up and sampling: the exact path ([`exact::run`]) where the
/// estimator is the whole data set and the target's `shape` allows, preconditioned
/// SGLD otherwise.
pub fn run(
    cfg: &SampleConfig,
    model: &dyn ModelSync,
    lap: &Laplace,
    starts: &[Vec<f32>],
    shape: Shape,
    bars: &Bars,
) -> Result<Sampled, String> {
    if cfg.sampler == SamplerKind::Mala {
        // MALA asked for by name: the exact path, whatever the data's size.
        return exact::run(cfg, model, lap, starts, exact::Integrator::Mala, bars);
    }
    // Sampled exactly where the whole data set is taken.
    let smooth = shape != Shape::Kinked;
    let d = model.dim();
    let n = model.len();
    let mode = &lap.mode.theta;
    let mut metric = lap.metric.clone();
    let mut rng = DefaultRng::seed_from_u64(Stream::NoiseRows.seed(cfg.seed));
    let rows = warmup::noise_rows(model, &mut rng);
    // The noise of both estimators at four draws from the Laplace approximation.
    let probes: Vec<Vec<f32>> = (0..4).map(|_| lap.draw(&mut rng, 1.0)).collect();
    // α varies from point to point: the mean over the points, with the step set for
    // half the target.
    let lambda_of = |metric: &MetricStore,
                     points: &[Vec<f32>],
                     centre: Option<&[f32]>|
     -> Result<f64, String> {
        let each: Vec<f64> = points
            .par_iter()
            .map(|p| warmup::noise_lambda(model, metric, p, centre, &rows))
            .collect::<Result<_, _>>()?;
        Ok(each.iter().sum::<f64>() / points.len().max(1) as f64)
    };
    // Up to EXACT_ROWS rows the whole data set is taken without measuring the noise
    // (which needs two rows at least).
    let always_full = smooth && cfg.batch.is_none() && !cfg.cv && n <= EXACT_ROWS;
    let (lam_plain, lam_cv) = if always_full {
        (0.0, 0.0)
    } else {
        bars.stage("warm-up: the gradient noise of mini-batches at four points");
        let (plain, cv) = rayon::join(
            || lambda_of(&metric, &probes, None),
            || lambda_of(&metric, &probes, Some(mode)),
        );
        (plain?, cv?)
    };
    let worth = match shape {
        Shape::Smooth => Some(EXACT_WORTH),
        Shape::Laplace(_) => Some(HMC_WORTH),
        Shape::Kinked => None,
    };
    let Choice { batch, cv, full } = choose(cfg, n, lam_plain, lam_cv, worth);
    if full && cfg.temperature > 0.0 {
        let integrator = match shape {
            Shape::Smooth => Some(exact::Integrator::Mala),
            Shape::Laplace(b) => Some(exact::Integrator::Hmc { laplace: Some(b) }),
            Shape::Kinked => None,
        };
        if let Some(i) = integrator {
            return exact::run(cfg, model, lap, starts, i, bars);
        }
    }
    let step = |lambda: f64| {
        if full {
            MAX_WHITE_STEP
        } else {
            warmup::step_for(lambda, ALPHA_MARGIN * cfg.alpha, batch, n, cfg.temperature)
        }
    };
    let centre = cv.then_some(mode.as_slice());
    let first_eps = step(if cv { lam_cv } else { lam_plain });
    bars.stage("warm-up: rounds of SGLD until the chains agree");

    let mut cv_buf = Vec::new();
    let estimator = Estimator::new(model, centre, &mut cv_buf)?;
    let est = estimator.shared();
    let thin_for = |eps: f64| match cfg.thin {
        Thin::Every(k) => k,
        // About eight draws per autocorrelation time (≈ 4/ε steps in the whitened
        // coordinates).
        Thin::Auto => ((0.5 / eps).round() as u64).max(1),
    };
    let started = Instant::now();
    let run_stretch = |chains: &mut [Chain],
                       metric: &MetricStore,
                       eps: f64,
                       steps: u64,
                       thin: u64|
     -> Result<(), String> {
        let bad = |what: &'static str| move |e: sgld::Error| format!("{what}: {e}");
        let sampler = PrecondSgld::new(metric.metric(), d).map_err(bad("the metric"))?;
        let sampler = super::config::with_options!(sampler, cfg);
        let schedule = Constant::new(eps as f32).map_err(|e| format!("step size {eps:e}: {e}"))?;
        let stretch = Stretch {
            schedule: &schedule,
            steps,
            total: steps,
            batch,
            full,
            burn_in: BurnIn::Steps(0),
            alpha: cfg.alpha,
            temperature: cfg.temperature,
            thin,
            count_moves: false,
        };
        bars.extend(steps);
        advance_all(chains, model, est, &sampler, &stretch, &bars.bars);
        Ok(())
    };
    let end_lambda = |metric: &MetricStore, chains: &[Chain]| -> Result<f64, String> {
        if full {
            // No gradient noise: the step is MAX_WHITE_STEP and α is 0.
            return Ok(0.0);
        }
        let points: Vec<Vec<f32>> = chains
            .iter()
            .filter(|c| c.failure.is_none())
            .map(|c| c.theta.clone())
            .collect();
        lambda_of(metric, &points, centre)
    };
    let failed = |chains: &[Chain]| chains.iter().any(|c| c.failure.is_some());

    // Warm-up, restarted from the starts at a quarter of the step after a chain went
    // non-finite.
    let warm_max = cfg.max_steps / 2;
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    let mut restarts = 0u32;
    let mut metric_source = "laplace";
    let mut updates = 0u32;
    let mut disagreement = None;
    let mut shrink = 1.0f64;
    let (mut chains, mut eps, mut warm, mut converged, mut rhat, mut rate);
    loop {
        chains = chains::from_starts(starts, cfg.seed, Some(&cfg.out))?;
        eps = first_eps * shrink;
        warm = 0u64;
        (converged, rhat, rate) = (false, f64::NAN, None);
        match cfg.burn_in {
            BurnIn::Steps(b) => {
                if b > 0 {
                    run_stretch(&mut chains, &metric, eps, b, thin_for(eps))?;
                    warm = b;
                }
            }
            BurnIn::Auto => loop {
                let len = if warm == 0 {
                    (50.0 / eps).ceil() as u64
                } else {
                    warm / 2
                }
                .clamp(1, warm_max.saturating_sub(warm).max(1));
                let from: Vec<usize> = chains.iter().map(Chain::kept).collect();
                run_stretch(&mut chains, &metric, eps, len, thin_for(eps))?;
                warm += len;
                if failed(&chains) {
                    break;
                }
                let half = chains.iter().map(Chain::kept).min().unwrap_or(0) / 2;
                if let Some(s) = diagnose::scan(&chains, d, half) {
                    rhat = s.max_rhat;
                    rate = Some(s.min_bulk.min(s.min_tail) / (warm / 2).max(1) as f64);
                    if s.max_rhat <= WARMUP_RHAT {
                        converged = true;
                    }
                }
                // A metric far from the stretch's draws (an sd off by more than 3×: the
                // Laplace approximation of a misspecified model, say) is replaced by
                // them, the step reset, and refined by later stretches while it is still
                // off by more than MAX_VARIANCE_RATIO, at most MAX_METRIC_UPDATES times.
                // Not with --clip: clipped steps do not follow the posterior's tails,
                // so their draws cannot tell its spread.
                if cfg.clip.is_none()
                    && updates < MAX_METRIC_UPDATES
                    && let Some(m) = adapt::window_moments(&chains, &from)?
                    && m.n >= 4 * d.max(25)
                {
                    let (v, o) = adapt::disagreement(&metric, mode, &m);
                    let limit = if metric_source == "draws" {
                        adapt::MAX_VARIANCE_RATIO
                    } else {
                        ULA_MAX_VARIANCE_RATIO
                    };
                    if v > limit
                        && let Some(new) = adapt::metric_from(&m, &metric)
                    {
                        updates += 1;
                        if metric_source == "laplace" {
                            disagreement = Some([v, o]);
                            metric_source = "draws";
                            shrink = 1.0;
                        }
                        metric = new;
                        converged = converged && v <= adapt::MAX_VARIANCE_RATIO;
                    }
                }
                // The chains' states are now draws of the posterior (or nearer to it than
                // the probes were): set the step from the noise there.
                eps = step(end_lambda(&metric, &chains)?) * shrink;
                if converged || warm >= warm_max {
                    break;
                }
            },
        }
        // A signal's stop is not a step too large: no restart.
        if !failed(&chains) || restarts == MAX_RESTARTS || crate::interrupt::requested() {
            break;
        }
        let why = chains
            .iter()
            .find_map(|c| {
                c.failure
                    .as_ref()
                    .map(|(s, w)| format!("chain {} at step {s}: {w}", c.id))
            })
            .unwrap_or_default();
        notes.push(format!(
            "warm-up restarted at a quarter of the step ({why})"
        ));
        restarts += 1;
        shrink *= 0.25;
    }
    if matches!(cfg.burn_in, BurnIn::Auto) && !converged && !failed(&chains) {
        warnings.push(format!(
            "warm-up ended at --max-steps/2 = {warm} steps without the chains agreeing (split R̂ {rhat:.3} over its second half): the draws may still remember their starts"
        ));
    }
    // The discretisation bias: the step shrinks until its proposal would pass a
    // full-data Metropolis test.
    let mut bias_acceptance = None;
    if !full && !failed(&chains) && cfg.temperature > 0.0 {
        let points: Vec<Vec<f32>> = chains.iter().map(|c| c.theta.clone()).collect();
        let checked = bias::bounded_step(model, &metric, eps, &points, cfg)?;
        (eps, bias_acceptance) = (checked.eps, Some(checked.acceptance));
        notes.extend(checked.note);
        warnings.extend(checked.warning);
    }
    for c in chains.iter_mut() {
        c.clear_draws()?;
    }
    // With --chain-ids, every chain warmed up (the step and the warm-up's end depend on
    // all of them) and only the selected ones sample.
    chains::select(&mut chains, cfg.chain_ids.as_ref());
    let sampling_started = Instant::now();

    // Sampling: with --steps, at most AUTO_DRAWS draws per chain under --thin auto (the
    // ESS-driven length keeps about eight per autocorrelation time of its target).
    let thin = match (cfg.thin, cfg.steps) {
        (Thin::Auto, Some(s)) => thin_for(eps).max(super::config::auto_thin(s)),
        _ => thin_for(eps),
    };
    let budget = cfg.max_steps.saturating_sub(warm).max(1);
    let mut sampled = 0u64;
    if !failed(&chains) {
        // The first block from the warm-up's ESS per step (pessimistic: its window held
        // the end of the transient), at most the warm-up's length.
        let min_block = (20.0 / eps).ceil() as u64;
        let first = match rate {
            Some(r) if r > 0.0 && r.is_finite() => (1.2 * cfg.target_ess / r).ceil() as u64,
            _ => (400.0 / eps).ceil() as u64,
        }
        .min(warm.max(min_block))
        .max(min_block);
        let mut run = |chains: &mut [Chain], len: u64| run_stretch(chains, &metric, eps, len, thin);
        bars.stage("sampling to the target ESS");
        let (s, more) = sample_to_target(cfg, &mut chains, d, first, min_block, budget, &mut run)?;
        sampled = s;
        notes.extend(more);
    }
    let seconds = started.elapsed().as_secs_f64();
    let sampling_seconds = sampling_started.elapsed().as_secs_f64();
    let alpha = if failed(&chains) {
        f64::NAN
    } else if full {
        0.0
    } else {
        warmup::alpha_at(
            eps,
            end_lambda(&metric, &chains)?,
            batch,
            n,
            cfg.temperature,
        )
    };
    Ok(Sampled {
        chains,
        burn_in: warm,
        total_steps: warm + sampled,
        warmup: WarmupSummary {
            adapted: true,
            sampler: "precond".into(),
            preconditioner: metric.kind().into(),
            cv,
            batch,
            full_batch: full,
            step_size: eps,
            alpha,
            mode_iterations: lap.mode.iterations,
            mode_passes: lap.mode.passes,
            mode_log_posterior: lap.mode.log_post,
            steps: warm,
            converged,
            rhat,
            metric: metric_source.into(),
            metric_disagreement: disagreement,
            target_acceptance: None,
            restarts,
            bias_acceptance,
        },
        thin,
        step_label: "auto".into(),
        grad_evals_per_step: (if cv { 2 } else { 1 } * batch) as f64,
        batch,
        seconds,
        sampling: (sampling_seconds, sampled),
        constant_step: true,
        notes,
        warnings,
        alpha: Some(alpha),
        // In the whitened coordinates the posterior's curvature is about 1.
        stability: Some((eps, 1.0)),
        acceptance: None,
        divergent: None,
    })
}

/// The whole data set (the exact path) is chosen while it costs at most this many times
/// the rows of the cheapest mini-batch: MALA's adapted step is 5–10 times SGLD's largest
/// in the whitened coordinates, and it has no discretisation bias.
pub const EXACT_WORTH: f64 = 4.0;

/// [`EXACT_WORTH`] for HMC (a Laplace prior): its transitions cost a few full passes
/// each, but leave little autocorrelation behind, where SGLD's largest whitened step
/// needs about 25 steps an effective draw. On a9a it reaches the target ESS in 3
/// gradients × 600 transitions, against 10,000 steps of SGLD.
pub const HMC_WORTH: f64 = 8.0;

/// Up to this many training rows the whole data set (the exact path) is always chosen:
/// a full pass costs little there, and exact draws are worth it.
pub const EXACT_ROWS: usize = 10_000;

/// The smallest batch an adapted run takes.
pub const MIN_BATCH: usize = 10;

/// The estimator and batch of an adapted run.
struct Choice {
    batch: usize,
    cv: bool,
    full: bool,
}

/// Picks the estimator and, for `--batch auto`, the batch. While α limits the step,
/// `ε ∝ n` and the gradients per unit of ε are the same for every batch, so the best
/// batch is the smallest whose step reaches [`MAX_WHITE_STEP`]:
/// `n* = ε_max N² λ / (4ατ)` (eq. 10). Control variates cost two gradients a row; the
/// whole data set (rows taken once each: no noise at all) costs `N` and, where it is
/// sampled exactly, wins up to `worth` ([`EXACT_WORTH`], [`HMC_WORTH`]) times the cost of
/// the others and always up to [`EXACT_ROWS`] rows; otherwise (a kinked target), up to
/// twice; otherwise the cheapest wins.
fn choose(cfg: &SampleConfig, n: usize, lam_plain: f64, lam_cv: f64, worth: Option<f64>) -> Choice {
    let alpha = ALPHA_MARGIN * cfg.alpha;
    let step = |lam: f64, b: usize| warmup::step_for(lam, alpha, b, n, cfg.temperature);
    if let Some(b) = cfg.batch {
        // Control variates pay when they allow a step more than twice as large.
        let cv = cfg.cv || 2.0 / step(lam_cv, b) < 1.0 / step(lam_plain, b);
        return Choice {
            batch: b,
            cv,
            full: false,
        };
    }
    let nd = n as f64;
    let need = |lam: f64| {
        // α at the largest step with a batch of one, over the target: the rows needed.
        let rows = (warmup::alpha_at(MAX_WHITE_STEP, lam, 1, n, cfg.temperature) / alpha).ceil();
        if rows.is_finite() {
            rows.max(MIN_BATCH as f64).min(usize::MAX as f64) as usize
        } else {
            usize::MAX
        }
    };
    let (n_plain, n_cv) = (need(lam_plain), need(lam_cv));
    let cost = |rows: usize, per_row: usize| {
        if rows < n {
            (rows * per_row) as f64
        } else {
            f64::INFINITY
        }
    };
    let (c_plain, c_cv, c_full) = (cost(n_plain, 1), cost(n_cv, 2), nd);
    if cfg.cv && n_cv < n {
        Choice {
            batch: n_cv,
            cv: true,
            full: false,
        }
    } else if worth.is_some_and(|w| n <= EXACT_ROWS || c_full <= w * c_plain.min(c_cv))
        || c_full <= 2.0 * c_plain.min(c_cv)
    {
        // Exact draws at MALA's larger steps are worth up to EXACT_WORTH times the rows;
        // the unadjusted step on the whole data set (a kinked prior), twice: no noise.
        Choice {
            batch: n,
            cv: false,
            full: true,
        }
    } else if c_cv < c_plain {
        Choice {
            batch: n_cv,
            cv: true,
            full: false,
        }
    } else {
        Choice {
            batch: n_plain,
            cv: false,
            full: false,
        }
    }
}
