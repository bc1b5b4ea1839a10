//! `--step-size auto` where the estimator is the whole data set: the Metropolis-adjusted
//! Langevin algorithm (MALA), exact at any step, so the step is a matter of speed and
//! not of bias.
//!
//! The warm-up follows Stan's: a first stretch that adapts the step alone, then windows
//! of doubling length at whose ends the metric is checked against the window's draws,
//! then a last stretch that settles the step. The step is adapted by dual averaging
//! toward [`TARGET_ACCEPT`] ([`DualAveraging`]). The metric starts as the Laplace
//! approximation at the mode and is kept while the draws agree with it; where they do
//! not (a funnel, whose mode is not where its mass is; a skewed posterior; fewer rows
//! than parameters, where the empirical Fisher information is a poor curvature), the
//! windows' covariance replaces it. The warm-up is extended until chains from dispersed
//! starts agree; sampling then runs to the target ESS, and counts divergent transitions
//! (a proposal whose log acceptance ratio is below −1000, or whose density is not
//! finite) as Stan does.

use std::time::Instant;

use indicatif::ProgressBar;
use rayon::prelude::*;
use sgld::sampler::{ChainState, Mala, MalaInfo};

use super::adapt::{self, DualAveraging};
use super::blocks::{Blocks, sample_to_target, warmed_up};
use super::chains::{self, Chain, Sampled};
use super::diagnose;
use super::hmc::lockstep::{self, Lockstep, Slot};
use super::hmc::{Hmc, HmcState};
use super::metric_store::MetricStore;
use super::options::SampleOptions;
use super::problem::ModelSync;
use super::progress::Bars;
use super::shear::Shear;
use super::warmup::{Laplace, WarmupSummary};
use crate::spec::{BurnIn, Thin};

/// The acceptance rate the step is adapted to. MALA's optimum on a Gaussian in many
/// dimensions is 0.574 (Roberts & Rosenthal 1998); a little above it is more robust
/// where the curvature varies.
pub const TARGET_ACCEPT: f64 = 0.65;

/// The acceptance rate HMC's step is adapted to: 0.651 is the optimum in many
/// dimensions (Beskos, Pillai, Roberts, Sanz-Serna & Stuart 2013). On a9a, 0.65 takes
/// 3 leapfrog steps where Stan's 0.8 for NUTS takes 4–5 for the same draws.
pub const HMC_TARGET_ACCEPT: f64 = 0.65;

/// A transition is divergent when its log acceptance ratio is below this (Stan's energy
/// threshold) or its proposal's density is not finite.
pub const DIVERGENT_LOG_RATIO: f64 = -1000.0;

/// MALA's metric is checked on windows of at least this many steps a chain (shorter
/// ones give too noisy a variance to judge it by); HMC's nearly independent draws judge
/// it from the first window on.
const MIN_CHECKED_WINDOW: u64 = 100;

/// Warm-up steps of an adapted run at most (the windows keep doubling until then).
pub const MAX_WARMUP: u64 = 16_000;

/// Divergent transitions after warm-up are a warning above this fraction of them. A
/// single Langevin step that jumps far into a parameter's exponential tail (a log
/// scale) diverges now and then without harm, and is rejected; many of them say the
/// step cannot follow the curvature somewhere.
pub const DIVERGENT_WARN_FRACTION: f64 = 0.05;

/// A chain whose acceptance after warm-up is below this is reported as stuck.
const STUCK_ACCEPTANCE: f64 = 0.1;

/// A stretch of the warm-up.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// The step alone adapts.
    Fast(u64),
    /// A window whose draws check (or set) the metric at its end.
    Window(u64),
}

impl Phase {
    fn len(self) -> u64 {
        match self {
            Phase::Fast(n) | Phase::Window(n) => n,
        }
    }
}

/// Stan's plan for `total` warm-up steps: 15% (at most 75) adapting the step, windows
/// of 25, 50, 100, … steps (the last one stretched to fill), 10% (at most 50) at the
/// end for the step alone; under 20 steps, the step alone.
fn plan(total: u64) -> Vec<Phase> {
    if total < 20 {
        return vec![Phase::Fast(total)];
    }
    let first = (total * 15 / 100).min(75);
    let last = (total / 10).min(50);
    let mut left = total - first - last;
    let mut phases = vec![Phase::Fast(first)];
    let mut w = 25u64.min(left);
    while left > 0 {
        // A window whose successor would not fit in what is left takes the rest.
        let this = if left < w + 2 * w { left } else { w };
        phases.push(Phase::Window(this));
        left -= this;
        w *= 2;
    }
    phases.push(Phase::Fast(last));
    phases
}

/// Proposals, acceptances and divergences of a stretch of one chain.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    proposals: u64,
    accepted: u64,
    divergent: u64,
}

/// How the metric was chosen, for the table and summary.json.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    /// The Laplace approximation at the mode, confirmed by the warm-up's draws.
    Laplace,
    /// The covariance of warm-up draws; the Laplace approximation disagreed by this much.
    Draws { variance_ratio: f64, offset: f64 },
}

/// Which exact sampler a run takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Integrator {
    /// MALA: one gradient a transition, for smooth targets.
    Mala,
    /// HMC with a few leapfrog steps, following the kinks of a Laplace prior of this
    /// scale exactly ([`Hmc`]).
    Hmc {
        /// The Laplace prior's scale `b`.
        laplace: Option<f32>,
    },
}

impl Integrator {
    /// The acceptance its step adapts to.
    pub fn target_accept(self) -> f64 {
        match self {
            Integrator::Mala => TARGET_ACCEPT,
            Integrator::Hmc { .. } => HMC_TARGET_ACCEPT,
        }
    }

    /// summary.json's `sampler`.
    pub fn name(self) -> &'static str {
        match self {
            Integrator::Mala => "mala",
            Integrator::Hmc { .. } => "hmc",
        }
    }

    /// The first step tried in `d` dimensions: MALA's `ε = 1.5/d^⅓` (its leapfrog step
    /// is `√ε`).
    fn first_step(self, d: usize) -> f64 {
        let eps = 1.5 / (d.max(1) as f64).cbrt();
        match self {
            Integrator::Mala => eps,
            Integrator::Hmc { .. } => eps.sqrt(),
        }
    }

    /// Warm-up transitions before the chains are judged (`--burn-in auto`): Stan's
    /// windows over 500 MALA steps, or 300 HMC transitions of a few leapfrog steps each,
    /// whose draws are nearly independent.
    fn warmup(self) -> u64 {
        match self {
            Integrator::Mala => 500,
            Integrator::Hmc { .. } => 300,
        }
    }

    /// The shortest window whose draws check the metric: [`MIN_CHECKED_WINDOW`] steps
    /// of MALA; any of HMC's (25 transitions of 4 chains are 100 draws of little
    /// correlation, and a metric the mode misled is mended before the longer windows).
    fn min_checked_window(self) -> u64 {
        match self {
            Integrator::Mala => MIN_CHECKED_WINDOW,
            Integrator::Hmc { .. } => 1,
        }
    }

    /// Gradients a transition at step `eps`.
    fn gradients(self, eps: f64) -> usize {
        match self {
            Integrator::Mala => 1,
            Integrator::Hmc { .. } => Hmc::leapfrog_steps(eps),
        }
    }

    /// Transitions per autocorrelation time, about, at step `eps`: MALA's ≈ 4/(aε) in
    /// the whitened coordinates; HMC's trajectory leaves little correlation behind.
    fn correlation_time(self, eps: f64) -> f64 {
        match self {
            Integrator::Mala => 4.0 / (TARGET_ACCEPT * eps),
            Integrator::Hmc { .. } => 1.0,
        }
    }
}

/// A sampler of the exact path, built for one stretch.
enum Kernel<'m> {
    Mala(Mala<'m, &'m dyn ModelSync>),
    Hmc(Hmc<'m>),
}

/// `integrator` on `model`'s full data with `metric`, `cfg`'s temperature and clipping.
fn kernel<'m>(
    integrator: Integrator,
    model: &'m dyn ModelSync,
    metric: &'m MetricStore,
    shear: Option<&'m Shear>,
    cfg: &SampleOptions,
) -> Result<Kernel<'m>, String> {
    let bad = |e: sgld::Error| format!("the metric: {e}");
    Ok(match integrator {
        Integrator::Mala => {
            let m = metric.mala(model).map_err(bad)?;
            Kernel::Mala(super::options::with_options!(m, cfg))
        }
        Integrator::Hmc { laplace } => Kernel::Hmc(
            Hmc::new(model, metric, laplace, cfg.temperature as f64, cfg.clip)
                .map_err(bad)?
                .with_shear(shear),
        ),
    })
}

/// A chain's sampler state for one stretch.
trait Transition {
    fn transition(
        &mut self,
        eps: f64,
        rng: &mut sgld::noise::DefaultRng,
    ) -> Result<MalaInfo, String>;
    fn theta(&self) -> &[f32];
}

struct MalaRun<'k, 's> {
    mala: &'k Mala<'k, &'k dyn ModelSync>,
    state: sgld::sampler::MalaState<'s>,
}

impl Transition for MalaRun<'_, '_> {
    fn transition(
        &mut self,
        eps: f64,
        rng: &mut sgld::noise::DefaultRng,
    ) -> Result<MalaInfo, String> {
        self.mala
            .step(&mut self.state, eps as f32, rng)
            .map_err(|e| e.to_string())
    }
    fn theta(&self) -> &[f32] {
        self.state.theta()
    }
}

struct HmcRun<'k> {
    hmc: &'k Hmc<'k>,
    state: super::hmc::HmcState,
}

impl Transition for HmcRun<'_> {
    fn transition(
        &mut self,
        eps: f64,
        rng: &mut sgld::noise::DefaultRng,
    ) -> Result<MalaInfo, String> {
        self.hmc
            .step(&mut self.state, eps, rng)
            .map_err(|e| e.to_string())
    }
    fn theta(&self) -> &[f32] {
        self.state.theta()
    }
}

/// Advances `ch` by `steps` transitions of `kernel`, adapting the step with `da` when
/// given (else at `eps`), keeping every `thin`-th state.
#[allow(clippy::too_many_arguments)]
fn advance(
    ch: &mut Chain,
    kernel: &Kernel<'_>,
    steps: u64,
    da: Option<&mut DualAveraging>,
    eps: f64,
    thin: u64,
    counts: &mut Counts,
    bar: &ProgressBar,
) {
    if ch.failure.is_some() {
        return;
    }
    match kernel {
        Kernel::Mala(mala) => {
            let d = ch.theta.len();
            let mut scratch = vec![0.0f32; Mala::<()>::scratch_len(d)];
            let mut theta = std::mem::take(&mut ch.theta);
            match mala.init(&mut theta, &mut scratch) {
                Err(e) => ch.failure = Some((ch.steps_run, cannot_start(e))),
                Ok(state) => {
                    let mut run = MalaRun { mala, state };
                    transitions(ch, &mut run, steps, da, eps, thin, counts, bar);
                }
            }
            ch.theta = theta;
        }
        Kernel::Hmc(hmc) => {
            if let Some(state) = start_hmc(hmc, ch) {
                let mut run = HmcRun { hmc, state };
                transitions(ch, &mut run, steps, da, eps, thin, counts, bar);
                ch.theta = run.state.theta().to_vec();
            }
        }
    }
}

/// The loop of [`advance`] over one chain's `run`.
#[allow(clippy::too_many_arguments)]
fn transitions(
    ch: &mut Chain,
    run: &mut dyn Transition,
    steps: u64,
    mut da: Option<&mut DualAveraging>,
    eps: f64,
    thin: u64,
    counts: &mut Counts,
    bar: &ProgressBar,
) {
    let thin = thin.max(1);
    let tick = (steps / 100).max(1);
    for k in 0..steps {
        if crate::interrupt::requested() {
            ch.failure = Some((ch.steps_run, crate::interrupt::WHY.into()));
            break;
        }
        let e = da.as_ref().map_or(eps, |a| a.step_size());
        let info = match run.transition(e, &mut ch.rng) {
            Ok(info) => info,
            Err(err) => {
                ch.failure = Some((ch.steps_run + 1, err));
                break;
            }
        };
        if !book(ch, &info, run.theta(), da.as_deref_mut(), e, thin, counts) {
            break;
        }
        if (k + 1).is_multiple_of(tick) {
            bar.inc(tick);
        }
    }
}

/// Books a transition of `ch` at step `e` that left it at `theta`: its counts, the
/// step's adaptation, every `thin`-th state kept; `false`, with the chain's failure
/// set, where a state cannot be kept.
fn book(
    ch: &mut Chain,
    info: &MalaInfo,
    theta: &[f32],
    da: Option<&mut DualAveraging>,
    e: f64,
    thin: u64,
    counts: &mut Counts,
) -> bool {
    counts.proposals += 1;
    counts.accepted += info.accepted as u64;
    if info.log_ratio.is_nan() || info.log_ratio < DIVERGENT_LOG_RATIO {
        counts.divergent += 1;
    }
    if let Some(a) = da {
        a.update(info.accept_prob);
    }
    ch.steps_run += 1;
    if ch.steps_run.is_multiple_of(thin) {
        if let Err(err) = ch.draws.push(theta) {
            ch.failure = Some((ch.steps_run, err));
            return false;
        }
        ch.record.push(ch.steps_run, e as f32, e * thin as f64);
    }
    true
}

/// [`advance_all`] for HMC with the chains in lockstep ([`lockstep`]): each round, every
/// running chain makes one transition with its own step and random numbers, and their
/// leapfrog steps' gradients are taken together, one pass over the data for all.
#[allow(clippy::too_many_arguments)]
fn advance_lockstep(
    chains: &mut [Chain],
    das: &mut [DualAveraging],
    hmc: &Hmc<'_>,
    lock: &mut Lockstep,
    steps: u64,
    adapt: bool,
    eps: f64,
    thin: u64,
    bars: &Bars,
) -> Vec<Counts> {
    bars.extend(steps);
    let (thin, tick) = (thin.max(1), (steps / 100).max(1));
    let mut counts = vec![Counts::default(); chains.len()];
    let mut states = hmc_states(hmc, chains);
    let hidden = ProgressBar::hidden();
    for k in 0..steps {
        let interrupted = crate::interrupt::requested();
        let mut ids = Vec::with_capacity(chains.len());
        let mut slots = Vec::with_capacity(chains.len());
        for (c, ((ch, s), da)) in chains
            .iter_mut()
            .zip(&mut states)
            .zip(das.iter())
            .enumerate()
        {
            let Some(s) = s.as_mut() else { continue };
            if interrupted {
                ch.failure = Some((ch.steps_run, crate::interrupt::WHY.into()));
                ch.theta = s.theta().to_vec();
                continue;
            }
            let e = if adapt { da.step_size() } else { eps };
            ids.push((c, e));
            slots.push(Slot::new(s, &mut ch.rng, e));
        }
        if slots.is_empty() || interrupted {
            break;
        }
        let outcomes = lockstep::transitions(hmc, lock, &mut slots);
        drop(slots);
        for ((c, e), outcome) in ids.into_iter().zip(outcomes) {
            let (ch, state) = (&mut chains[c], &mut states[c]);
            let Some(s) = state.as_ref() else { continue };
            let kept = match outcome {
                Ok(info) => book(
                    ch,
                    &info,
                    s.theta(),
                    adapt.then(|| &mut das[c]),
                    e,
                    thin,
                    &mut counts[c],
                ),
                Err(err) => {
                    ch.failure = Some((ch.steps_run + 1, err.to_string()));
                    false
                }
            };
            if !kept {
                ch.theta = s.theta().to_vec();
                *state = None;
            } else if (k + 1).is_multiple_of(tick) {
                bars.bars.get(c).unwrap_or(&hidden).inc(tick);
            }
        }
    }
    for (ch, s) in chains.iter_mut().zip(states) {
        if let Some(s) = s {
            ch.theta = s.theta().to_vec();
        }
    }
    counts
}

/// Each running chain's HMC state at its θ (`None` for a chain that has stopped, or
/// cannot start there: its failure then says why).
fn hmc_states(hmc: &Hmc<'_>, chains: &mut [Chain]) -> Vec<Option<HmcState>> {
    chains
        .iter_mut()
        .map(|ch| match ch.failure {
            Some(_) => None,
            None => start_hmc(hmc, ch),
        })
        .collect()
}

/// The chain's HMC state at its θ, or `None` with the chain's failure saying why it
/// cannot start there.
fn start_hmc(hmc: &Hmc<'_>, ch: &mut Chain) -> Option<HmcState> {
    hmc.init(ch.theta.clone())
        .map_err(|e| ch.failure = Some((ch.steps_run, cannot_start(e))))
        .ok()
}

/// The failure of a chain that cannot start at its θ.
fn cannot_start(e: sgld::Error) -> String {
    format!("cannot start the chain: {e}")
}

/// Runs `steps` on every chain in parallel; returns each chain's counts.
#[allow(clippy::too_many_arguments)]
fn advance_all(
    chains: &mut [Chain],
    das: &mut [DualAveraging],
    kernel: &Kernel<'_>,
    steps: u64,
    adapt: bool,
    eps: f64,
    thin: u64,
    bars: &Bars,
) -> Vec<Counts> {
    if let Kernel::Hmc(hmc) = kernel
        && let Some(mut lock) = lockstep::workspace(hmc, chains.len())
    {
        return advance_lockstep(chains, das, hmc, &mut lock, steps, adapt, eps, thin, bars);
    }
    bars.extend(steps);
    let hidden = ProgressBar::hidden();
    chains
        .par_iter_mut()
        .zip(das.par_iter_mut())
        .enumerate()
        .map(|(c, (ch, da))| {
            let mut counts = Counts::default();
            let bar = bars.bars.get(c).unwrap_or(&hidden);
            advance(
                ch,
                kernel,
                steps,
                adapt.then_some(da),
                eps,
                thin,
                &mut counts,
                bar,
            );
            counts
        })
        .collect()
}

/// Moves each warm-up chain that accepted under [`STUCK_ACCEPTANCE`] of its proposals
/// in the stretch just run, while the best chain accepted over three times that, to
/// the state of the next chain that is not stuck, with that chain's step: the chain
/// sat where one step cannot fit (a funnel's neck, a far tail, started there by the
/// dispersed starts), and its step, adapted to that place, would keep it there. A chain
/// in another mode keeps its acceptance and is not moved, so R̂ still sees the modes.
/// Warm-up draws are never kept, so this changes no target. Returns what was done.
fn unstick(chains: &mut [Chain], das: &mut [DualAveraging], counts: &[Counts]) -> Vec<String> {
    let rate = |c: &Counts| c.accepted as f64 / c.proposals.max(1) as f64;
    let best = counts.iter().map(rate).fold(0.0, f64::max);
    if best < 3.0 * STUCK_ACCEPTANCE {
        return vec![];
    }
    let stuck: Vec<bool> = counts.iter().map(|c| rate(c) < STUCK_ACCEPTANCE).collect();
    let k = chains.len();
    let mut notes = vec![];
    for c in 0..k {
        if !stuck[c] {
            continue;
        }
        let Some(donor) = (1..k).map(|j| (c + j) % k).find(|&j| !stuck[j]) else {
            continue;
        };
        chains[c].theta = chains[donor].theta.clone();
        das[c] = das[donor].clone();
        notes.push(format!(
            "warm-up: chain {} accepted {:.1}% of its proposals (stuck where one step does not fit) and moved to chain {}'s state",
            chains[c].id,
            100.0 * rate(&counts[c]),
            chains[donor].id
        ));
    }
    notes
}

/// The step all chains sample with: the median of their adapted steps.
fn common_step(das: &[DualAveraging]) -> f64 {
    let mut logs: Vec<f64> = das.iter().map(|d| d.adapted().ln()).collect();
    logs.sort_by(f64::total_cmp);
    let k = logs.len();
    if k == 0 {
        return 1.0;
    }
    ((logs[(k - 1) / 2] + logs[k / 2]) / 2.0).exp()
}

/// Runs the exact warm-up and sampling from `starts` with `integrator`.
pub fn run(
    cfg: &SampleOptions,
    model: &dyn ModelSync,
    lap: &Laplace,
    starts: &[Vec<f32>],
    integrator: Integrator,
    bars: &Bars,
) -> Result<Sampled, String> {
    let target_accept = integrator.target_accept();
    let (d, n) = (model.dim(), model.len());
    let mut chains = chains::from_starts(starts, cfg.seed, Some(&cfg.out))?;
    let mut notes = finite_starts(&mut chains, model, lap);
    let eps0 = integrator.first_step(d);
    let mut das = vec![DualAveraging::new(eps0, target_accept); chains.len()];
    let started = Instant::now();
    let mut warm = warm_up(cfg, model, lap, integrator, &mut chains, &mut das, bars)?;
    notes.extend(std::mem::take(&mut warm.notes));
    let eps = common_step(&das);
    let failed = chains.iter().any(|c| c.failure.is_some());
    let mut warnings: Vec<String> = unconverged(cfg, &warm, failed).into_iter().collect();
    for c in chains.iter_mut() {
        c.clear_draws()?;
    }
    chains::select(&mut chains, cfg.chain_ids.as_ref());
    let sampling_started = Instant::now();

    // Sampling at the adapted step on the final metric.
    let sampler = kernel(integrator, model, &warm.metric, warm.shear.as_ref(), cfg)?;
    let tau = integrator.correlation_time(eps);
    let thin = thin_for(cfg, tau);
    let mut totals = vec![Counts::default(); chains.len()];
    let mut das_s = das.clone();
    let mut run = |chains: &mut [Chain], steps: u64| -> Result<(), String> {
        let counts = advance_all(chains, &mut das_s, &sampler, steps, false, eps, thin, bars);
        for (t, c) in totals.iter_mut().zip(counts) {
            t.proposals += c.proposals;
            t.accepted += c.accepted;
            t.divergent += c.divergent;
        }
        Ok(())
    };
    let min = ((5.0 * tau).ceil() as u64).max(50);
    let blocks = Blocks::new(cfg, warm.steps, warm.steps / 2, min);
    bars.stage("sampling to the target ESS");
    let (sampled, more) = sample_to_target(cfg, bars, &mut chains, d, blocks, &mut run)?;
    notes.extend(more);
    let seconds = started.elapsed().as_secs_f64();
    let sampling_seconds = sampling_started.elapsed().as_secs_f64();
    let total = after_warmup(
        &chains,
        &totals,
        eps,
        target_accept,
        &mut notes,
        &mut warnings,
    );
    Ok(Sampled {
        chains,
        burn_in: warm.steps,
        total_steps: warm.steps + sampled,
        warmup: record(lap, integrator, &warm, n, eps),
        thin,
        step_label: "auto".into(),
        grad_evals_per_step: (n * integrator.gradients(eps)) as f64,
        batch: n,
        seconds,
        sampling: (sampling_seconds, sampled),
        constant_step: true,
        notes,
        warnings,
        alpha: Some(0.0),
        stability: None,
        acceptance: Some(total.accepted as f64 / total.proposals.max(1) as f64),
        divergent: Some(total.divergent),
    })
}

/// HMC's shear into the intercept ([`Shear`]) where its metric is diagonal.
fn shear_for(
    integrator: Integrator,
    model: &dyn ModelSync,
    lap: &Laplace,
    bars: &Bars,
) -> Option<Shear> {
    match (integrator, &lap.metric) {
        (Integrator::Hmc { .. }, MetricStore::Diagonal(m)) => {
            bars.stage("warm-up: the intercept's correlation with the other coefficients");
            Shear::at(model, &lap.mode.theta, |j| 1.0 / m[j] as f64)
        }
        _ => None,
    }
}

/// The warning for an adapted warm-up that ended without the chains agreeing (not when a
/// chain failed, which says so itself).
fn unconverged(cfg: &SampleOptions, warm: &Warm, failed: bool) -> Option<String> {
    (matches!(cfg.burn_in, BurnIn::Auto) && !warm.converged && !failed).then(|| format!(
        "warm-up ended after {} steps without the chains agreeing (split R̂ {:.3} over its windows): the draws may still remember their starts, or the chains are in different modes",
        warm.steps, warm.rhat
    ))
}

/// Moves every chain whose dispersed start has a non-finite density to the mode; a note
/// for each.
fn finite_starts(chains: &mut [Chain], model: &dyn ModelSync, lap: &Laplace) -> Vec<String> {
    let mut notes = Vec::new();
    for ch in chains.iter_mut() {
        if !super::mode::log_posterior(model, &ch.theta).is_finite() {
            notes.push(format!(
                "chain {}: the log density at its dispersed start is not finite; it starts at the mode",
                ch.id
            ));
            ch.theta = lap.mode.theta.clone();
        }
    }
    notes
}

/// What the warm-up found.
struct Warm {
    /// HMC's shear into the intercept, fixed from the start (the metric is in its
    /// coordinates).
    shear: Option<Shear>,
    /// The metric the chains sample with, and where it came from.
    metric: MetricStore,
    source: Source,
    /// Warm-up steps per chain.
    steps: u64,
    /// Whether the chains agreed, and the largest split R̂ at the end.
    converged: bool,
    rhat: f64,
    notes: Vec<String>,
}

/// The warm-up: the plan, then (with `--burn-in auto`) a longer window and a last
/// stretch at a time until the chains agree, adapting each chain's step by dual
/// averaging and checking (or replacing) the metric with each window's draws.
fn warm_up(
    cfg: &SampleOptions,
    model: &dyn ModelSync,
    lap: &Laplace,
    integrator: Integrator,
    chains: &mut [Chain],
    das: &mut [DualAveraging],
    bars: &Bars,
) -> Result<Warm, String> {
    let mut w = Warm {
        shear: shear_for(integrator, model, lap, bars),
        metric: lap.metric.clone(),
        source: Source::Laplace,
        steps: 0,
        converged: false,
        rhat: f64::NAN,
        notes: vec![],
    };
    let (mut phases, extend) = match cfg.burn_in {
        BurnIn::Steps(b) => (plan(b), false),
        BurnIn::Auto => (plan(integrator.warmup()), true),
    };
    let warm_max = (cfg.max_steps / 2).min(MAX_WARMUP);
    // The mode in the coordinates the metric is in.
    let mut centre = lap.mode.theta.clone();
    if let Some(sh) = &w.shear {
        centre[sh.hub] = sh.hub_z(&lap.mode.theta) as f32;
    }
    bars.stage(&format!(
        "warm-up: {} on the whole data set, adapting its step and metric",
        integrator.name().to_uppercase()
    ));
    let mut last_window = 0u64;
    loop {
        // Convergence is judged on the draws since the first window of this round began:
        // the first stretch holds the transient from the dispersed starts, and a single
        // window of a few autocorrelation times gives R̂ too noisy to judge by.
        let mut judged_from: Option<Vec<usize>> = None;
        for &phase in &phases {
            let len = phase.len();
            if len == 0 {
                continue;
            }
            let from: Vec<usize> = chains.iter().map(Chain::kept).collect();
            let sampler = kernel(integrator, model, &w.metric, w.shear.as_ref(), cfg)?;
            let counts = advance_all(chains, das, &sampler, len, true, 0.0, 1, bars);
            w.steps += len;
            if chains.iter().any(|c| c.failure.is_some()) {
                break;
            }
            w.notes.extend(unstick(chains, das, &counts));
            let Phase::Window(len) = phase else {
                continue;
            };
            judged_from.get_or_insert_with(|| from.clone());
            last_window = len;
            // The window's draws check the metric (or, once it came from draws, replace it).
            if let Some(m) = adapt::window_moments(chains, &from, &w.metric, w.shear.as_ref())? {
                let checked = len >= integrator.min_checked_window();
                update_metric(&mut w, &m, lap, &centre, checked);
            }
            for da in das.iter_mut() {
                *da = DualAveraging::new(da.step_size(), integrator.target_accept());
            }
        }
        if chains.iter().any(|c| c.failure.is_some()) {
            break;
        }
        judge(&mut w, chains, model.dim(), judged_from.as_deref())?;
        if w.converged || !extend || w.steps >= warm_max {
            break;
        }
        let next = (2 * last_window.max(100)).min(warm_max.saturating_sub(w.steps + 50));
        if next == 0 {
            break;
        }
        phases = vec![Phase::Window(next), Phase::Fast(50)];
    }
    Ok(w)
}

/// Whether the chains agree: split R̂ over their draws since `from` (the first window
/// of the round), as [`warmed_up`] judges it.
fn judge(w: &mut Warm, chains: &[Chain], d: usize, from: Option<&[usize]>) -> Result<(), String> {
    let judged = chains
        .iter()
        .zip(from.unwrap_or(&[]))
        .map(|(c, &f)| c.kept() - f)
        .min()
        .unwrap_or(0);
    if let Some(per) = diagnose::scan_params(chains, d, judged)? {
        w.rhat = diagnose::worst(&per).max_rhat;
        w.converged = warmed_up(&per, chains.len());
    }
    Ok(())
}

/// A window's moments `m` check the Laplace metric centred at `centre` (the mode, in the
/// metric's coordinates) where the window is long enough to judge by, and replace it
/// when it is off; once the metric came from draws, each window's replace it.
fn update_metric(w: &mut Warm, m: &adapt::Moments, lap: &Laplace, centre: &[f32], checked: bool) {
    let replace = match &w.source {
        Source::Draws { .. } => true,
        Source::Laplace if checked => {
            let (v, o) = adapt::disagreement(&w.metric, centre, m);
            let off = v > adapt::MAX_VARIANCE_RATIO || o > adapt::MAX_OFFSET;
            if off {
                w.source = Source::Draws {
                    variance_ratio: v,
                    offset: o,
                };
            }
            off
        }
        Source::Laplace => false,
    };
    if replace && let Some(new) = adapt::metric_from(m, &lap.metric) {
        w.metric = new;
    }
}

/// `--thin`, or about eight draws per autocorrelation time `tau` (with `--steps`, no
/// more than [`super::options::AUTO_DRAWS`] a chain).
fn thin_for(cfg: &SampleOptions, tau: f64) -> u64 {
    match cfg.thin {
        Thin::Every(k) => k,
        Thin::Auto => {
            let t = ((tau / 8.0).round() as u64).max(1);
            match cfg.steps {
                Some(s) => t.max(super::options::auto_thin(s)),
                None => t,
            }
        }
    }
}

/// The transitions after warm-up, all chains together; the note or warning their
/// divergences call for, and a warning for each chain stuck below a useful acceptance.
fn after_warmup(
    chains: &[Chain],
    totals: &[Counts],
    eps: f64,
    target_accept: f64,
    notes: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Counts {
    let total = totals.iter().fold(Counts::default(), |a, c| Counts {
        proposals: a.proposals + c.proposals,
        accepted: a.accepted + c.accepted,
        divergent: a.divergent + c.divergent,
    });
    if total.divergent as f64 > DIVERGENT_WARN_FRACTION * total.proposals as f64 {
        warnings.push(format!(
            "{} of {} transitions after warm-up diverged (a proposal's log acceptance ratio below {DIVERGENT_LOG_RATIO} or a non-finite density): the posterior has regions of a curvature the step {eps:.3e} cannot follow (a funnel's neck?), which the draws may miss; reparameterise (e.g. non-centred) or check the model",
            total.divergent, total.proposals
        ));
    } else if total.divergent > 0 {
        notes.push(format!(
            "{} of {} transitions after warm-up diverged and were rejected (a jump into a far tail; the draws stay exact)",
            total.divergent, total.proposals
        ));
    }
    for (ch, c) in chains.iter().zip(totals) {
        let a = c.accepted as f64 / c.proposals.max(1) as f64;
        if c.proposals > 0 && a < STUCK_ACCEPTANCE {
            warnings.push(format!(
                "chain {} accepted {:.1}% of its proposals after warm-up (the step was adapted for {:.0}%): it is stuck where the step does not fit (a funnel's neck, a far mode), and its draws may not represent the posterior",
                ch.id,
                100.0 * a,
                100.0 * target_accept
            ));
        }
    }
    total
}

/// The exact path's warm-up record.
fn record(lap: &Laplace, integrator: Integrator, warm: &Warm, n: usize, eps: f64) -> WarmupSummary {
    let (metric, disagreement) = match warm.source {
        Source::Laplace => ("laplace", None),
        Source::Draws {
            variance_ratio,
            offset,
        } => ("draws", Some([variance_ratio, offset])),
    };
    WarmupSummary {
        adapted: true,
        preconditioner: warm.metric.kind().into(),
        full_batch: true,
        alpha: 0.0,
        steps: warm.steps,
        converged: warm.converged,
        rhat: warm.rhat,
        metric: metric.into(),
        metric_disagreement: disagreement,
        target_acceptance: Some(integrator.target_accept()),
        sheared_into: warm.shear.as_ref().map(|s| s.hub),
        ..WarmupSummary::given(integrator.name(), n, eps).with_mode(
            lap.mode.iterations,
            lap.mode.passes,
            lap.mode.log_post,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cover_the_warm_up() {
        for total in [0, 5, 19, 20, 100, 150, 500, 1000, 1234, 16_000] {
            let p = plan(total);
            assert_eq!(p.iter().map(|x| x.len()).sum::<u64>(), total, "{p:?}");
        }
        assert_eq!(
            plan(500),
            vec![
                Phase::Fast(75),
                Phase::Window(25),
                Phase::Window(50),
                Phase::Window(100),
                Phase::Window(200),
                Phase::Fast(50)
            ]
        );
    }
}
