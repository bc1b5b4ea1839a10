//! Stage 4, the chains: each with its own start and generator stream, advanced in
//! parallel a stretch of steps at a time, keeping thinned draws.

use indicatif::ProgressBar;
use rand_core::SeedableRng;
use rayon::prelude::*;
use sgld::estimate::{sampling_threshold, scores_into, threshold_scratch_len};
use sgld::gradient::{ControlVariate, GradientEstimator, MiniBatch, sample_batch};
use sgld::noise::DefaultRng;
use sgld::sampler::{ChainState, Sampler};
use sgld::schedule::Schedule;

use super::draws::Draws;
use super::kept::Kept;
use super::options::{SampleOptions, SamplerKind};
use super::problem::ModelSync;
use super::records::WarmupSummary;
use super::seeds::Stream;
pub use super::seeds::chain_seed;
use crate::spec::BurnIn;

/// The gradient estimator the chains share.
pub type SharedEstimator<'a> = dyn GradientEstimator + Sync + 'a;

/// The gradient estimator of a run: eq. 4's mini-batch sum, or control variates around
/// a centre (the caller owns their buffer).
pub enum Estimator<'a> {
    /// `N/n` times the batch's sum.
    MiniBatch(MiniBatch<&'a dyn ModelSync>),
    /// Control variates around the centre.
    Cv(ControlVariate<'a, &'a dyn ModelSync>),
}

impl<'a> Estimator<'a> {
    /// Control variates around `centre` when given (their full-data gradient into
    /// `buf`), the mini-batch estimator otherwise.
    pub fn new(
        model: &'a dyn ModelSync,
        centre: Option<&'a [f32]>,
        buf: &'a mut Vec<f32>,
    ) -> Result<Self, String> {
        Ok(match centre {
            Some(c) => {
                buf.resize(ControlVariate::<()>::buffer_len(model.dim()), 0.0);
                Estimator::Cv(
                    ControlVariate::new(model, c, buf)
                        .map_err(|e| format!("control variates: {e}"))?,
                )
            }
            None => Estimator::MiniBatch(MiniBatch::new(model)),
        })
    }

    /// [`Estimator::new`] around the mode `centre`, whose full-data log-likelihood
    /// gradient the mode search may already hold: then no pass over the data.
    pub fn at_mode(
        model: &'a dyn ModelSync,
        centre: Option<&'a super::mode::Mode>,
        buf: &'a mut Vec<f32>,
    ) -> Result<Self, String> {
        match centre {
            Some(super::mode::Mode {
                theta,
                log_lik_grad: Some(g),
                ..
            }) => Ok(Estimator::Cv(
                ControlVariate::with_centre_grad(model, theta, g)
                    .map_err(|e| format!("control variates: {e}"))?,
            )),
            _ => Self::new(model, centre.map(|m| m.theta.as_slice()), buf),
        }
    }

    /// The full-data log-likelihood gradient at the control variates' centre, if any.
    pub fn centre_grad(&self) -> Option<&[f32]> {
        match self {
            Estimator::MiniBatch(_) => None,
            Estimator::Cv(c) => Some(c.centre_grad()),
        }
    }

    /// The estimator the chains share.
    pub fn shared(&self) -> &SharedEstimator<'a> {
        match self {
            Estimator::MiniBatch(m) => m,
            Estimator::Cv(c) => c,
        }
    }
}

/// The chains of a run, chain `c` at `starts[c]` with generator stream `c` of `seed`,
/// their draws streamed to `dir/chain_<c+1>.npy` when a directory is given.
pub fn from_starts(
    starts: &[Vec<f32>],
    seed: u64,
    dir: Option<&std::path::Path>,
) -> Result<Vec<Chain>, String> {
    starts
        .iter()
        .enumerate()
        .map(|(c, s)| {
            let mut chain = Chain::new(c, s.clone(), Stream::Chain(c).seed(seed));
            if let Some(dir) = dir {
                chain.draws = Draws::to_file(s.len(), &super::files::partial(&npy_path(dir, c)))?;
            }
            Ok(chain)
        })
        .collect()
}

/// Where chain `id`'s draws go: `chain_<id+1>.npy` (CmdStan numbers chains from 1).
pub fn npy_path(dir: &std::path::Path, id: usize) -> std::path::PathBuf {
    dir.join(format!("chain_{}.npy", id + 1))
}

/// Keeps the chains whose number is in `ids` (all when `None`).
pub fn select(chains: &mut Vec<Chain>, ids: Option<&std::ops::Range<usize>>) {
    if let Some(ids) = ids {
        chains.retain(|c| ids.contains(&c.id));
    }
}

/// What the chains stage hands to diagnostics and output.
pub struct Sampled {
    /// The chains with their kept (post-warm-up, thinned) draws.
    pub chains: Vec<Chain>,
    /// Warm-up (burn-in) steps per chain.
    pub burn_in: u64,
    /// Steps per chain, warm-up included.
    pub total_steps: u64,
    /// What the warm-up found.
    pub warmup: WarmupSummary,
    /// The mini-batch size the chains used.
    pub batch: usize,
    /// Every `thin`-th step kept.
    pub thin: u64,
    /// The schedule as given (`auto` when adapted).
    pub step_label: String,
    /// Per-example gradients per step and chain.
    pub grad_evals_per_step: f64,
    /// Seconds of the chains.
    pub seconds: f64,
    /// Seconds and steps per chain of the sampling alone (after an adapted run's
    /// warm-up; all of a given schedule's steps).
    pub sampling: (f64, u64),
    /// Whether every kept draw had the same step size.
    pub constant_step: bool,
    /// Lines printed before the table.
    pub notes: Vec<String>,
    /// Warnings found while sampling.
    pub warnings: Vec<String>,
    /// α of eq. 10 at the end, where measured.
    pub alpha: Option<f64>,
    /// (largest step, curvature) for the stability check.
    pub stability: Option<(f64, f64)>,
    /// The fraction of proposals accepted after warm-up (the exact path).
    pub acceptance: Option<f64>,
    /// Divergent transitions after warm-up (the exact path).
    pub divergent: Option<u64>,
}

/// One chain: where it is, its generator, and what it kept.
#[derive(Debug)]
pub struct Chain {
    /// The chain's number in its run (`draws.csv`'s `chain`, from 0): its start and its
    /// generator stream follow from it and the seed.
    pub id: usize,
    /// The current state.
    pub theta: Vec<f32>,
    pub(crate) rng: DefaultRng,
    /// Steps taken so far.
    pub steps_run: u64,
    /// Kept draws, `d` floats each.
    pub draws: Draws,
    /// The step, step size and weight of each kept draw.
    pub record: Kept,
    /// `Σ ε` of the kept steps since the last kept draw.
    pending: f64,
    /// Where the sampling threshold first fell below α (`--burn-in auto` with a given
    /// schedule).
    pub crossed: Option<u64>,
    /// Smallest α seen and the `λ_max` there.
    pub min_alpha: f64,
    /// `λ_max` at the smallest α.
    pub lambda_at_min: f64,
    /// A step that went non-finite: (step, why).
    pub failure: Option<(u64, String)>,
    /// Steps after which θ had changed (MALA's acceptances).
    pub moves: u64,
}

impl Chain {
    /// Chain `id` at `start` with generator stream `seed`.
    pub fn new(id: usize, start: Vec<f32>, seed: u64) -> Self {
        let d = start.len();
        Self {
            id,
            theta: start,
            rng: DefaultRng::seed_from_u64(seed),
            steps_run: 0,
            draws: Draws::in_memory(d),
            record: Kept::default(),
            pending: 0.0,
            crossed: None,
            min_alpha: f64::INFINITY,
            lambda_at_min: f64::NAN,
            failure: None,
            moves: 0,
        }
    }

    /// Chain `id` holding the given draws (`d` floats each) and their record, as read
    /// back from a run's output.
    pub fn from_draws(id: usize, draws: Draws, record: Kept) -> Self {
        let mut c = Self::new(id, vec![0.0; draws.dim()], 0);
        (c.draws, c.record) = (draws, record);
        c
    }

    /// Drops the kept draws (warm-up draws, once checked).
    pub fn clear_draws(&mut self) -> Result<(), String> {
        self.draws.clear()?;
        self.record = Kept::default();
        self.pending = 0.0;
        Ok(())
    }

    /// Counts a kept step of size `eps` into the next draw's weight, and stores θ as
    /// that draw when `keep` (every `thin`-th step).
    fn store(&mut self, theta: &[f32], eps: f32, keep: bool) -> Result<(), String> {
        self.pending += eps as f64;
        if keep {
            self.draws.push(theta)?;
            let span = std::mem::take(&mut self.pending);
            self.record.push(self.steps_run, eps, span);
        }
        Ok(())
    }

    /// Whether a signal stopped the chain ([`crate::interrupt`]), not a failed step.
    pub fn interrupted(&self) -> bool {
        self.failure
            .as_ref()
            .is_some_and(|(_, why)| why == crate::interrupt::WHY)
    }

    /// The number of kept draws.
    pub fn kept(&self) -> usize {
        self.record.len()
    }
}

/// A stretch of steps for every chain.
pub struct Stretch<'a, S> {
    /// Step sizes by global step index.
    pub schedule: &'a S,
    /// Steps to run now.
    pub steps: u64,
    /// The chain's total planned length (for `--burn-in auto`'s fallback to half).
    pub total: u64,
    /// Mini-batch size.
    pub batch: usize,
    /// Every step on the whole data set (exact gradients) instead of drawn batches.
    pub full: bool,
    /// Which steps to keep: after a fixed number, or from the threshold's crossing.
    pub burn_in: BurnIn,
    /// The α target of `--burn-in auto`.
    pub alpha: f64,
    /// The temperature τ of the injected noise (eq. 10's α divides by it).
    pub temperature: f32,
    /// Keep every `thin`-th step.
    pub thin: u64,
    /// Count the steps that moved θ (MALA's acceptance rate).
    pub count_moves: bool,
}

impl<'a, S> Stretch<'a, S> {
    /// `steps` steps of a given schedule with `cfg`'s batch, burn-in, α target and
    /// temperature, keeping every `thin`-th (MALA's moves counted).
    pub fn given(cfg: &SampleOptions, schedule: &'a S, steps: u64, thin: u64) -> Self {
        Self {
            schedule,
            steps,
            total: steps,
            batch: cfg.batch_or_default(),
            full: false,
            burn_in: cfg.burn_in,
            alpha: cfg.alpha,
            temperature: cfg.temperature,
            thin,
            count_moves: cfg.sampler == SamplerKind::Mala,
        }
    }
}

/// Runs `stretch` on every chain in parallel (each chain's numbers depend on its own
/// stream only).
pub fn advance_all<S: Schedule + Sync, A: Sampler + Sync>(
    chains: &mut [Chain],
    model: &dyn ModelSync,
    est: &SharedEstimator<'_>,
    sampler: &A,
    stretch: &Stretch<'_, S>,
    bars: &[ProgressBar],
) {
    chains.par_iter_mut().enumerate().for_each(|(c, ch)| {
        let hidden = ProgressBar::hidden();
        advance(
            ch,
            model,
            est,
            sampler,
            stretch,
            bars.get(c).unwrap_or(&hidden),
        );
    });
}

/// Steps between two looks at whether a signal asked the run to stop.
const INTERRUPT_CHECK: u64 = 4096;

/// Advances one chain by `stretch.steps` steps.
pub fn advance<S: Schedule, A: Sampler>(
    ch: &mut Chain,
    model: &dyn ModelSync,
    est: &SharedEstimator<'_>,
    sampler: &A,
    stretch: &Stretch<'_, S>,
    bar: &ProgressBar,
) {
    if ch.failure.is_some() {
        return;
    }
    let mut scratch = vec![0.0f32; sampler.scratch_floats(model.dim())];
    let mut theta = std::mem::take(&mut ch.theta);
    match sampler.start(&mut theta, &mut scratch) {
        Ok(mut state) => steps(ch, &mut state, model, est, sampler, stretch, bar),
        Err(e) => ch.failure = Some((ch.steps_run, format!("cannot start the chain: {e}"))),
    }
    ch.theta = theta;
}

fn steps<S: Schedule, A: Sampler>(
    ch: &mut Chain,
    state: &mut A::State<'_>,
    model: &dyn ModelSync,
    est: &SharedEstimator<'_>,
    sampler: &A,
    stretch: &Stretch<'_, S>,
    bar: &ProgressBar,
) {
    let n_data = model.len();
    let mut prev = if stretch.count_moves {
        state.theta().to_vec()
    } else {
        vec![]
    };
    let mut crossing = Crossing::new(stretch, model.dim(), n_data);
    let tick = (stretch.steps / 100).max(1);
    // Counters instead of a division a step: the next step that is a multiple of
    // `thin` (kept when storing), and the steps to the progress bar's next tick.
    let thin = stretch.thin.max(1);
    let mut next_keep = (ch.steps_run / thin + 1) * thin;
    let mut to_tick = tick;
    // Each step's batch is drawn a step ahead and its rows asked for (`prefetch`), so
    // that they reach the cache while the step before runs.
    let (mut batch, mut next) = if stretch.full {
        ((0..n_data).collect(), vec![])
    } else {
        (vec![0usize; stretch.batch], vec![0usize; stretch.batch])
    };
    if !stretch.full && sample_batch(&mut ch.rng, n_data, &mut next).is_err() {
        ch.failure = Some((ch.steps_run + 1, "empty data set".into()));
        return;
    }
    for k in 0..stretch.steps {
        let t = ch.steps_run;
        let eps = stretch.schedule.step_size(t);
        if !stretch.full {
            std::mem::swap(&mut batch, &mut next);
            if k + 1 < stretch.steps {
                // Cannot fail: the same draw as the one before the loop.
                let _ = sample_batch(&mut ch.rng, n_data, &mut next);
                est.prefetch(&next);
            }
        }
        if let Err(why) = advance_one(sampler, state, est, &batch, eps, &mut ch.rng) {
            ch.failure = Some((t + 1, why));
            break;
        }
        ch.steps_run += 1;
        let step = ch.steps_run;
        if step.is_multiple_of(INTERRUPT_CHECK) && crate::interrupt::requested() {
            ch.failure = Some((step, crate::interrupt::WHY.into()));
            break;
        }
        if stretch.count_moves && prev != state.theta() {
            ch.moves += 1;
            prev.copy_from_slice(state.theta());
        }
        let storing = match stretch.burn_in {
            BurnIn::Steps(b) => step > b,
            BurnIn::Auto => crossing.storing(ch, model, state.theta(), eps, stretch),
        };
        if storing && let Err(e) = ch.store(state.theta(), eps, step == next_keep) {
            ch.failure = Some((step, e));
            break;
        }
        if step == next_keep {
            next_keep += thin;
        }
        to_tick -= 1;
        if to_tick == 0 {
            bar.inc(tick);
            to_tick = tick;
        }
    }
}

/// One step of `sampler`, or why the chain must stop.
#[inline(always)]
fn advance_one<A: Sampler>(
    sampler: &A,
    state: &mut A::State<'_>,
    est: &SharedEstimator<'_>,
    batch: &[usize],
    eps: f32,
    rng: &mut DefaultRng,
) -> Result<(), String> {
    match sampler.advance(state, est, batch, eps, rng) {
        Ok(info) if info.non_finite => Err(non_finite(info.grad_norm, eps)),
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Why a step that went non-finite stopped its chain.
#[cold]
fn non_finite(grad_norm: f32, eps: f32) -> String {
    if !grad_norm.is_finite() {
        format!(
            "the gradient is not finite (exploding gradient; norm {grad_norm}) — lower the step size or check the data scale"
        )
    } else {
        format!(
            "the update overflowed (step size {eps:e} too large for gradient norm {grad_norm:e})"
        )
    }
}

/// `--burn-in auto` with a given schedule: eq. 10's α measured on an auxiliary batch of
/// `m` rows, until it falls below the target.
struct Crossing {
    m: usize,
    aux: Vec<usize>,
    scores: Vec<f32>,
    scratch: Vec<f64>,
}

impl Crossing {
    /// The buffers, allocated only where the burn-in is `auto`.
    fn new<S>(stretch: &Stretch<'_, S>, d: usize, n_data: usize) -> Self {
        let m = stretch.batch.max(10).min(n_data.max(2));
        if !matches!(stretch.burn_in, BurnIn::Auto) {
            return Self {
                m,
                aux: vec![],
                scores: vec![],
                scratch: vec![],
            };
        }
        Self {
            m,
            aux: vec![0usize; m],
            scores: vec![0.0f32; m * d],
            scratch: vec![0.0f64; threshold_scratch_len(m, d)],
        }
    }

    /// Whether the chain keeps its draws after this step: from where α first fell below
    /// the target (checked every 1/400 of the run, and at its end), or past half the
    /// run without that; records the smallest α and its `λ_max` on the chain.
    fn storing<S>(
        &mut self,
        ch: &mut Chain,
        model: &dyn ModelSync,
        theta: &[f32],
        eps: f32,
        stretch: &Stretch<'_, S>,
    ) -> bool {
        let (t, step) = (ch.steps_run - 1, ch.steps_run);
        let due = t.is_multiple_of((stretch.total / 400).max(1)) || step == stretch.total;
        if ch.crossed.is_none()
            && due
            && let Some((alpha, lambda)) = self.alpha(&mut ch.rng, model, theta, eps, stretch)
        {
            if alpha < ch.min_alpha {
                ch.min_alpha = alpha;
                ch.lambda_at_min = lambda;
            }
            if alpha < stretch.alpha {
                ch.crossed = Some(step);
            }
        }
        ch.crossed.is_some() || step > stretch.total / 2
    }

    /// α of eq. 10 (the run's batch and temperature) and `λ_max` at θ for step `eps`,
    /// where the batch and the scores could be formed.
    #[cold]
    fn alpha<S>(
        &mut self,
        rng: &mut DefaultRng,
        model: &dyn ModelSync,
        theta: &[f32],
        eps: f32,
        stretch: &Stretch<'_, S>,
    ) -> Option<(f64, f64)> {
        let (n_data, d) = (model.len(), model.dim());
        sample_batch(rng, n_data, &mut self.aux).ok()?;
        scores_into(model, theta, &self.aux, &mut self.scores).ok()?;
        let th = sampling_threshold(
            &self.scores,
            self.m,
            d,
            eps as f64,
            n_data.max(self.m),
            None,
            &mut self.scratch,
        )
        .ok()?;
        let alpha = super::warmup::alpha_at(
            eps as f64,
            th.lambda_max,
            stretch.batch,
            n_data,
            stretch.temperature,
        );
        Some((alpha, th.lambda_max))
    }
}
