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
use sgld::schedule::Constant;

use super::adapt;
use super::bias;
use super::blocks::{Blocks, WARMUP_RHAT, sample_to_target};
use super::chains::{self, Chain, Estimator, Sampled, SharedEstimator, Stretch};
use super::diagnose;
use super::exact;
use super::metric_store::MetricStore;
use super::mode::MAX_DENSE_METRIC;
use super::options::{SampleOptions, SamplerKind};
use super::problem::ModelSync;
use super::progress::Bars;
use super::samplers::{self, Advance, Inputs};
use super::seeds::Stream;
use super::warmup::{self, Laplace, WarmupSummary};
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

/// The Laplace approximation with a diagonal metric where `lap`'s is dense above
/// [`MAX_DENSE_METRIC`]: with mini-batches a dense metric's `O(d²)` a step would cost
/// more than the batch's gradient. Its marginal variances stay.
fn for_mini_batches(lap: &Laplace) -> Option<Laplace> {
    let dense = matches!(lap.metric, MetricStore::Cholesky(_));
    (dense && lap.mode.theta.len() > MAX_DENSE_METRIC).then(|| lap.diagonal())
}

/// Runs the adapted warm-up and sampling: the exact path ([`exact::run`]) where the
/// estimator is the whole data set and the target's `shape` allows, preconditioned
/// SGLD otherwise.
pub fn run(
    cfg: &SampleOptions,
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
    let (mut noise, mut choice) = measure(cfg, model, lap, shape, bars)?;
    if let Some(i) = exact_integrator(cfg, shape, choice) {
        return exact::run(cfg, model, lap, starts, i, bars);
    }
    let diagonal = for_mini_batches(lap);
    if let Some(diagonal) = &diagonal {
        (noise, choice) = measure(cfg, model, diagonal, shape, bars)?;
    }
    let lap = diagonal.as_ref().unwrap_or(lap);
    let centre = choice.cv.then_some(lap.mode.theta.as_slice());
    let mut cv_buf = Vec::new();
    let estimator = Estimator::at_mode(model, choice.cv.then_some(&lap.mode), &mut cv_buf)?;
    let ula = Ula {
        cfg,
        precond: with_precond(cfg),
        model,
        est: estimator.shared(),
        choice,
        centre,
        rows: &noise.rows,
        bars,
    };
    let first_eps = ula.step(if choice.cv { noise.cv } else { noise.plain });
    bars.stage("warm-up: rounds of SGLD until the chains agree");
    let started = Instant::now();
    let mut w = warm_up(&ula, lap, starts, first_eps)?;
    let bias_acceptance = end_warmup(&ula, &mut w, &lap.mode.theta, estimator.centre_grad())?;
    for c in w.chains.iter_mut() {
        c.clear_draws()?;
    }
    // With --chain-ids, every chain warmed up (the step and the warm-up's end depend on
    // all of them) and only the selected ones sample.
    chains::select(&mut w.chains, cfg.chain_ids.as_ref());
    let sampling_started = Instant::now();
    let (thin, sampled) = sample(&ula, &mut w)?;
    let seconds = started.elapsed().as_secs_f64();
    let sampling_seconds = sampling_started.elapsed().as_secs_f64();
    let alpha = ula.end_alpha(&w)?;
    let warmup = WarmupSummary {
        alpha,
        bias_acceptance,
        ..record(&ula, lap, &w)
    };
    Ok(Sampled {
        burn_in: w.steps,
        total_steps: w.steps + sampled,
        warmup,
        thin,
        step_label: "auto".into(),
        grad_evals_per_step: (if choice.cv { 2 } else { 1 } * choice.batch) as f64,
        batch: choice.batch,
        seconds,
        sampling: (sampling_seconds, sampled),
        constant_step: true,
        notes: w.notes,
        warnings: w.warnings,
        alpha: Some(alpha),
        // In the whitened coordinates the posterior's curvature is about 1.
        stability: Some((w.eps, 1.0)),
        acceptance: None,
        divergent: None,
        chains: w.chains,
    })
}

/// The mini-batch noise measured before the choice: the rows it is measured on, and
/// its `λ` for plain mini-batches and for control variates.
struct Noise {
    rows: Vec<usize>,
    plain: f64,
    cv: f64,
}

/// The noise of both estimators at four draws from the Laplace approximation (none up
/// to [`EXACT_ROWS`] rows of a smooth target, where the whole data set is taken), and
/// the estimator and batch it chooses.
fn measure(
    cfg: &SampleOptions,
    model: &dyn ModelSync,
    lap: &Laplace,
    shape: Shape,
    bars: &Bars,
) -> Result<(Noise, Choice), String> {
    let n = model.len();
    let mut rng = DefaultRng::seed_from_u64(Stream::NoiseRows.seed(cfg.seed));
    let rows = warmup::noise_rows(model, &mut rng);
    let probes: Vec<Vec<f32>> = (0..4).map(|_| lap.draw(&mut rng, 1.0)).collect();
    // The noise needs two rows at least; the kinked shape is never sampled exactly.
    let smooth = shape != Shape::Kinked;
    let always_full = smooth && cfg.batch.is_none() && !cfg.cv && n <= EXACT_ROWS;
    let (plain, cv) = if always_full {
        (0.0, 0.0)
    } else {
        bars.stage("warm-up: the gradient noise of mini-batches at four points");
        let mode = Some(lap.mode.theta.as_slice());
        let (plain, cv) = rayon::join(
            || lambda_of(model, &lap.metric, &probes, None, &rows),
            || lambda_of(model, &lap.metric, &probes, mode, &rows),
        );
        (plain?, cv?)
    };
    let worth = match shape {
        Shape::Smooth => Some(EXACT_WORTH),
        Shape::Laplace(_) => Some(HMC_WORTH),
        Shape::Kinked => None,
    };
    let max_step = warmup::max_white_step(n, &lap.metric, shape != Shape::Kinked);
    let choice = choose(cfg, n, plain, cv, worth, max_step);
    Ok((Noise { rows, plain, cv }, choice))
}

/// The exact path's sampler where the whole data set is taken and the shape allows
/// one (not for a tempered optimiser, `--temperature 0`).
fn exact_integrator(
    cfg: &SampleOptions,
    shape: Shape,
    choice: Choice,
) -> Option<exact::Integrator> {
    if !choice.full || cfg.temperature <= 0.0 {
        return None;
    }
    match shape {
        Shape::Smooth => Some(exact::Integrator::Mala),
        Shape::Laplace(b) => Some(exact::Integrator::Hmc { laplace: Some(b) }),
        Shape::Kinked => None,
    }
}

/// Whether a chain stopped.
fn failed(chains: &[Chain]) -> bool {
    chains.iter().any(|c| c.failure.is_some())
}

/// The mean over `points` of the largest eigenvalue `λ` of the mini-batch noise in the
/// metric's coordinates (α varies from point to point: the step is set for half the
/// target at the mean).
fn lambda_of(
    model: &dyn ModelSync,
    metric: &MetricStore,
    points: &[Vec<f32>],
    centre: Option<&[f32]>,
    rows: &[usize],
) -> Result<f64, String> {
    let each: Vec<f64> = points
        .par_iter()
        .map(|p| warmup::noise_lambda(model, metric, p, centre, rows))
        .collect::<Result<_, _>>()?;
    Ok(each.iter().sum::<f64>() / points.len().max(1) as f64)
}

/// The unadjusted path as chosen: the model, its estimator (control variates around
/// `centre` or plain mini-batches), the batch, and the rows its noise is measured on.
struct Ula<'a> {
    cfg: &'a SampleOptions,
    /// The options the stretches are built from ([`with_precond`]), made once.
    precond: SampleOptions,
    model: &'a dyn ModelSync,
    est: &'a SharedEstimator<'a>,
    choice: Choice,
    centre: Option<&'a [f32]>,
    rows: &'a [usize],
    bars: &'a Bars,
}

/// `cfg` with the sampler the stretches run: SGLD preconditioned by the metric.
fn with_precond(cfg: &SampleOptions) -> SampleOptions {
    SampleOptions {
        sampler: SamplerKind::Precond,
        ..cfg.clone()
    }
}

impl Ula<'_> {
    /// The step for noise `λ` (eq. 10 at α = half of `--alpha`), or the largest whitened
    /// step where the whole data set is taken.
    fn step(&self, lambda: f64) -> f64 {
        let Choice {
            batch, max_step, ..
        } = self.choice;
        if self.choice.full {
            return max_step;
        }
        let (cfg, n) = (self.cfg, self.model.len());
        warmup::step_for(
            lambda,
            ALPHA_MARGIN * cfg.alpha,
            batch,
            n,
            cfg.temperature,
            max_step,
        )
    }

    /// `--thin`, or about eight draws per autocorrelation time (≈ 4/ε steps in the
    /// whitened coordinates).
    fn thin(&self, eps: f64) -> u64 {
        match self.cfg.thin {
            Thin::Every(k) => k,
            Thin::Auto => ((0.5 / eps).round() as u64).max(1),
        }
    }

    /// `steps` steps of preconditioned SGLD on every chain at step `eps` in `metric`, its
    /// noise Gaussian-exact: the metric is the posterior's covariance as the warm-up
    /// knows it, so the step adds no variance of its own on a Gaussian posterior.
    fn stretch(
        &self,
        chains: &mut [Chain],
        metric: &MetricStore,
        eps: f64,
        steps: u64,
        thin: u64,
    ) -> Result<(), String> {
        let cfg = self.cfg;
        let schedule = Constant::new(eps as f32).map_err(|e| format!("step size {eps:e}: {e}"))?;
        let stretch = Stretch {
            burn_in: BurnIn::Steps(0),
            batch: self.choice.batch,
            full: self.choice.full,
            count_moves: false,
            ..Stretch::given(cfg, &schedule, steps, thin)
        };
        self.bars.extend(steps);
        let advance = Advance {
            chains,
            model: self.model,
            est: self.est,
            stretch: &stretch,
            bars: &self.bars.bars,
        };
        let inputs = Inputs::metric(self.model, metric).gaussian_exact();
        samplers::build(&self.precond, &inputs, advance)?;
        Ok(())
    }

    /// α of eq. 10 at the end: NaN when a chain failed, 0 on the whole data set.
    fn end_alpha(&self, w: &Warm) -> Result<f64, String> {
        if failed(&w.chains) {
            return Ok(f64::NAN);
        }
        if self.choice.full {
            return Ok(0.0);
        }
        let lambda = self.end_lambda(&w.metric, &w.chains)?;
        let n = self.model.len();
        Ok(warmup::alpha_at(
            w.eps,
            lambda,
            self.choice.batch,
            n,
            self.cfg.temperature,
        ))
    }

    /// The noise's `λ` at the chains' states (0 where the whole data set is taken: no
    /// gradient noise).
    fn end_lambda(&self, metric: &MetricStore, chains: &[Chain]) -> Result<f64, String> {
        if self.choice.full {
            return Ok(0.0);
        }
        let points: Vec<Vec<f32>> = chains
            .iter()
            .filter(|c| c.failure.is_none())
            .map(|c| c.theta.clone())
            .collect();
        lambda_of(self.model, metric, &points, self.centre, self.rows)
    }
}

/// The warm-up's state and what it found.
struct Warm {
    chains: Vec<Chain>,
    metric: MetricStore,
    /// `laplace`, or `draws` once the warm-up draws replaced it.
    metric_source: &'static str,
    /// Replacements of the metric so far, and the first one's disagreement.
    updates: u32,
    disagreement: Option<[f64; 2]>,
    /// The step's factor after restarts (a quarter each), reset by a new metric.
    shrink: f64,
    eps: f64,
    /// Warm-up steps per chain.
    steps: u64,
    converged: bool,
    rhat: f64,
    /// The bulk and tail ESS per step of the last round, where measured.
    rate: Option<f64>,
    restarts: u32,
    notes: Vec<String>,
    warnings: Vec<String>,
}

/// Warm-up, restarted from the starts at a quarter of the step after a chain went
/// non-finite (not after a signal's stop, which is not a step too large).
fn warm_up(
    ula: &Ula<'_>,
    lap: &Laplace,
    starts: &[Vec<f32>],
    first_eps: f64,
) -> Result<Warm, String> {
    let cfg = ula.cfg;
    let mut w = Warm {
        chains: vec![],
        metric: lap.metric.clone(),
        metric_source: "laplace",
        updates: 0,
        disagreement: None,
        shrink: 1.0,
        eps: first_eps,
        steps: 0,
        converged: false,
        rhat: f64::NAN,
        rate: None,
        restarts: 0,
        notes: vec![],
        warnings: vec![],
    };
    loop {
        w.chains = chains::from_starts(starts, cfg.seed, Some(&cfg.out))?;
        w.eps = first_eps * w.shrink;
        w.steps = 0u64;
        (w.converged, w.rhat, w.rate) = (false, f64::NAN, None);
        match cfg.burn_in {
            BurnIn::Steps(b) => {
                if b > 0 {
                    ula.stretch(&mut w.chains, &w.metric, w.eps, b, ula.thin(w.eps))?;
                    w.steps = b;
                }
            }
            BurnIn::Auto => rounds(ula, lap, &mut w)?,
        }
        if !failed(&w.chains) || w.restarts == MAX_RESTARTS || crate::interrupt::requested() {
            return Ok(w);
        }
        let why = w
            .chains
            .iter()
            .find_map(|c| {
                c.failure
                    .as_ref()
                    .map(|(s, why)| format!("chain {} at step {s}: {why}", c.id))
            })
            .unwrap_or_default();
        w.notes.push(format!(
            "warm-up restarted at a quarter of the step ({why})"
        ));
        w.restarts += 1;
        w.shrink *= 0.25;
    }
}

/// `--burn-in auto`: rounds of half the warm-up so far until the chains agree (split R̂
/// over each round's second half), the metric checked against each round's draws and
/// the step reset from the noise at the chains' states.
fn rounds(ula: &Ula<'_>, lap: &Laplace, w: &mut Warm) -> Result<(), String> {
    let (cfg, d) = (ula.cfg, ula.model.dim());
    let warm_max = cfg.max_steps / 2;
    loop {
        let len = if w.steps == 0 {
            (50.0 / w.eps).ceil() as u64
        } else {
            w.steps / 2
        }
        .clamp(1, warm_max.saturating_sub(w.steps).max(1));
        let from: Vec<usize> = w.chains.iter().map(Chain::kept).collect();
        ula.stretch(&mut w.chains, &w.metric, w.eps, len, ula.thin(w.eps))?;
        w.steps += len;
        if failed(&w.chains) {
            return Ok(());
        }
        let half = w.chains.iter().map(Chain::kept).min().unwrap_or(0) / 2;
        if let Some(s) = diagnose::scan(&w.chains, d, half)? {
            w.rhat = s.max_rhat;
            w.rate = Some(s.min_bulk.min(s.min_tail) / (w.steps / 2).max(1) as f64);
            // The fixed threshold: each round also sets the step from the noise where
            // the chains are, which a round ended early would leave coarser.
            if s.max_rhat <= WARMUP_RHAT {
                w.converged = true;
            }
        }
        check_metric(cfg, lap, w, &from)?;
        // The chains' states are now draws of the posterior (or nearer to it than
        // the probes were): set the step from the noise there.
        w.eps = ula.step(ula.end_lambda(&w.metric, &w.chains)?) * w.shrink;
        if w.converged || w.steps >= warm_max {
            return Ok(());
        }
    }
}

/// A metric far from the round's draws (an sd off by more than 3×: the Laplace
/// approximation of a misspecified model, say) is replaced by them, the step reset, and
/// refined by later rounds while it is still off by more than
/// [`adapt::MAX_VARIANCE_RATIO`], at most [`MAX_METRIC_UPDATES`] times. Not with
/// `--clip`: clipped steps do not follow the posterior's tails, so their draws cannot
/// tell its spread.
fn check_metric(
    cfg: &SampleOptions,
    lap: &Laplace,
    w: &mut Warm,
    from: &[usize],
) -> Result<(), String> {
    let d = lap.mode.theta.len();
    if cfg.clip.is_some() || w.updates >= MAX_METRIC_UPDATES {
        return Ok(());
    }
    let Some(m) = adapt::window_moments(&w.chains, from, &w.metric, None)? else {
        return Ok(());
    };
    if m.n < 4 * d.max(25) {
        return Ok(());
    }
    let (v, o) = adapt::disagreement(&w.metric, &lap.mode.theta, &m);
    let limit = if w.metric_source == "draws" {
        adapt::MAX_VARIANCE_RATIO
    } else {
        ULA_MAX_VARIANCE_RATIO
    };
    if v > limit
        && let Some(new) = adapt::metric_from(&m, &w.metric)
    {
        w.updates += 1;
        if w.metric_source == "laplace" {
            w.disagreement = Some([v, o]);
            w.metric_source = "draws";
            w.shrink = 1.0;
        }
        w.metric = new;
        w.converged = w.converged && v <= adapt::MAX_VARIANCE_RATIO;
    }
    Ok(())
}

/// The warm-up's end: a warning where the chains did not agree; then the discretisation
/// bias, the step shrunk until its proposal would pass a full-data Metropolis test (not
/// where the whole data set is taken; on large data its stand-in around `mode`, where
/// the full data's log-likelihood gradient is `full_grad` when known); that test's
/// acceptance.
fn end_warmup(
    ula: &Ula<'_>,
    w: &mut Warm,
    mode: &[f32],
    full_grad: Option<&[f32]>,
) -> Result<Option<f64>, String> {
    let cfg = ula.cfg;
    if matches!(cfg.burn_in, BurnIn::Auto) && !w.converged && !failed(&w.chains) {
        w.warnings.push(format!(
            "warm-up ended at --max-steps/2 = {} steps without the chains agreeing (split R̂ {:.3} over its second half): the draws may still remember their starts",
            w.steps, w.rhat
        ));
    }
    if ula.choice.full || failed(&w.chains) || cfg.temperature <= 0.0 {
        return Ok(None);
    }
    let points: Vec<Vec<f32>> = w.chains.iter().map(|c| c.theta.clone()).collect();
    let checked = bias::bounded_step(ula.model, &w.metric, w.eps, &points, mode, full_grad, cfg)?;
    w.eps = checked.eps;
    w.notes.extend(checked.note);
    w.warnings.extend(checked.warning);
    Ok(Some(checked.acceptance))
}

/// Sampling after the warm-up in blocks until the target ESS: the thinning (with
/// `--steps`, at most [`super::options::AUTO_DRAWS`] draws per chain under `--thin auto`)
/// and the steps sampled per chain.
fn sample(ula: &Ula<'_>, w: &mut Warm) -> Result<(u64, u64), String> {
    let (cfg, eps) = (ula.cfg, w.eps);
    let thin = match (cfg.thin, cfg.steps) {
        (Thin::Auto, Some(s)) => ula.thin(eps).max(super::options::auto_thin(s)),
        _ => ula.thin(eps),
    };
    if failed(&w.chains) {
        return Ok((thin, 0));
    }
    // The first block from the warm-up's ESS per step (pessimistic: its window held
    // the end of the transient), at most the warm-up's length.
    let min = (20.0 / eps).ceil() as u64;
    let first = match w.rate {
        Some(r) if r > 0.0 && r.is_finite() => (1.2 * cfg.target_ess / r).ceil() as u64,
        _ => (400.0 / eps).ceil() as u64,
    };
    let blocks = Blocks::new(cfg, w.steps, first.min(w.steps.max(min)), min);
    let metric = &w.metric;
    let mut run = |chains: &mut [Chain], len: u64| ula.stretch(chains, metric, eps, len, thin);
    ula.bars.stage("sampling to the target ESS");
    let d = ula.model.dim();
    let (s, more) = sample_to_target(cfg, ula.bars, &mut w.chains, d, blocks, &mut run)?;
    w.notes.extend(more);
    Ok((thin, s))
}

/// The warm-up record of the unadjusted path (its α and bias check filled in by the
/// caller).
fn record(ula: &Ula<'_>, lap: &Laplace, w: &Warm) -> WarmupSummary {
    WarmupSummary {
        adapted: true,
        preconditioner: w.metric.kind().into(),
        cv: ula.choice.cv,
        full_batch: ula.choice.full,
        steps: w.steps,
        converged: w.converged,
        rhat: w.rhat,
        metric: w.metric_source.into(),
        metric_disagreement: w.disagreement,
        restarts: w.restarts,
        ..WarmupSummary::given("precond", ula.choice.batch, w.eps).with_mode(
            lap.mode.iterations,
            lap.mode.passes,
            lap.mode.log_post,
        )
    }
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
#[derive(Debug, Clone, Copy)]
struct Choice {
    batch: usize,
    cv: bool,
    full: bool,
    /// The largest whitened step ([`warmup::max_white_step`]).
    max_step: f64,
}

/// Picks the estimator and, for `--batch auto`, the batch. While α limits the step,
/// `ε ∝ n` and the gradients per unit of ε are the same for every batch, so the best
/// batch is the smallest whose step reaches `max_step` ([`warmup::max_white_step`]):
/// `n* = ε_max N² λ / (4ατ)` (eq. 10). Control variates cost two gradients a row; the
/// whole data set (rows taken once each: no noise at all) costs `N` and, where it is
/// sampled exactly, wins up to `worth` ([`EXACT_WORTH`], [`HMC_WORTH`]) times the cost of
/// the others and always up to [`EXACT_ROWS`] rows; otherwise (a kinked target), up to
/// twice; otherwise the cheapest wins.
fn choose(
    cfg: &SampleOptions,
    n: usize,
    lam_plain: f64,
    lam_cv: f64,
    worth: Option<f64>,
    max_step: f64,
) -> Choice {
    let alpha = ALPHA_MARGIN * cfg.alpha;
    let step = |lam: f64, b: usize| warmup::step_for(lam, alpha, b, n, cfg.temperature, max_step);
    if let Some(b) = cfg.batch {
        // Control variates pay when they allow a step more than twice as large.
        let cv = cfg.cv || 2.0 / step(lam_cv, b) < 1.0 / step(lam_plain, b);
        return Choice {
            batch: b,
            cv,
            full: false,
            max_step,
        };
    }
    let nd = n as f64;
    let need = |lam: f64| {
        // α at the largest step with a batch of one, over the target: the rows needed.
        let rows = (warmup::alpha_at(max_step, lam, 1, n, cfg.temperature) / alpha).ceil();
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
            max_step,
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
            max_step,
        }
    } else if c_cv < c_plain {
        Choice {
            batch: n_cv,
            cv: true,
            full: false,
            max_step,
        }
    } else {
        Choice {
            batch: n_plain,
            cv: false,
            full: false,
            max_step,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SampleOptions {
        SampleOptions::new("unused".into())
    }

    /// The estimator and batch of eq. 10: the rows a batch of one needs at the largest
    /// whitened step, `ε_max N² λ / (4 · α/2 · τ)` (at least [`MIN_BATCH`]); control
    /// variates where their two gradients a row cost less; the whole data set up to
    /// [`EXACT_ROWS`] rows of a smooth target, or where no batch is cheaper.
    #[test]
    fn the_estimator_and_batch_follow_eq_10() {
        let c = cfg();
        let n = 1_000_000;
        // 0.1 · 10¹² · 10⁻⁹ / 4 / 0.05 = 500 rows plain; 5 → 10 with control variates.
        let pick = choose(
            &c,
            n,
            1e-9,
            1e-11,
            Some(EXACT_WORTH),
            warmup::MAX_WHITE_STEP,
        );
        assert_eq!((pick.batch, pick.cv, pick.full), (10, true, false));
        // Noise so small that both need the minimum: plain, at half the cost.
        let pick = choose(
            &c,
            n,
            1e-12,
            1e-14,
            Some(EXACT_WORTH),
            warmup::MAX_WHITE_STEP,
        );
        assert_eq!((pick.batch, pick.cv, pick.full), (MIN_BATCH, false, false));
        // At temperature 2 the injected noise doubles: half the rows.
        let hot = SampleOptions {
            temperature: 2.0,
            ..cfg()
        };
        let pick = choose(&hot, n, 1e-9, 1.0, None, warmup::MAX_WHITE_STEP);
        assert_eq!((pick.batch, pick.cv), (250, false));
        // No batch under N rows does: the whole data set, even for a kinked target.
        let pick = choose(&c, n, 1.0, 1.0, None, warmup::MAX_WHITE_STEP);
        assert_eq!((pick.batch, pick.full), (n, true));
        // Small and smooth: exact.
        let pick = choose(
            &c,
            5_000,
            1e-3,
            1e-3,
            Some(EXACT_WORTH),
            warmup::MAX_WHITE_STEP,
        );
        assert_eq!((pick.batch, pick.full), (5_000, true));
        // --cv is honoured where its batch fits.
        let cv = SampleOptions { cv: true, ..cfg() };
        let pick = choose(
            &cv,
            n,
            1e-12,
            1e-9,
            Some(EXACT_WORTH),
            warmup::MAX_WHITE_STEP,
        );
        assert_eq!((pick.batch, pick.cv, pick.full), (500, true, false));
    }

    /// With `--batch`, control variates are taken where they allow a step more than
    /// twice the plain one's (their gradients cost twice as much).
    #[test]
    fn a_given_batch_takes_control_variates_where_they_pay() {
        let given = SampleOptions {
            batch: Some(100),
            ..cfg()
        };
        // Both steps at the largest whitened step: plain.
        assert!(
            !choose(
                &given,
                1_000_000,
                1e-15,
                1e-16,
                None,
                warmup::MAX_WHITE_STEP
            )
            .cv
        );
        // The plain step far below it, the control variates' at it: control variates.
        let pick = choose(&given, 1_000_000, 1e-6, 1e-15, None, warmup::MAX_WHITE_STEP);
        assert_eq!((pick.batch, pick.cv, pick.full), (100, true, false));
    }

    /// The step of eq. 10 at half the target α: `ε = (α/2) · 4nτ / (N²λ)`, at most the
    /// largest whitened step.
    #[test]
    fn the_step_puts_alpha_at_half_the_target() {
        let (n, batch, lambda) = (100_000, 50, 2e-7);
        let eps = warmup::step_for(
            lambda,
            ALPHA_MARGIN * 0.1,
            batch,
            n,
            1.0,
            warmup::MAX_WHITE_STEP,
        );
        let alpha = warmup::alpha_at(eps, lambda, batch, n, 1.0);
        assert!((alpha - 0.05).abs() < 1e-12, "{alpha}");
        assert_eq!(
            warmup::step_for(1e-30, 0.05, batch, n, 1.0, warmup::MAX_WHITE_STEP),
            warmup::MAX_WHITE_STEP
        );
        let hot = warmup::step_for(lambda, 0.05, batch, n, 2.0, warmup::MAX_WHITE_STEP);
        assert!((hot / eps - 2.0).abs() < 1e-12);
    }
}
