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
    /// Keep every `thin`-th step.
    pub thin: u64,
    /// Count the steps that moved θ (MALA's acceptance rate).
    pub count_moves: bool,
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
    let d = model.dim();
    let n_data = model.len();
    let mut prev = if stretch.count_moves {
        state.theta().to_vec()
    } else {
        vec![]
    };
    let mut batch: Vec<usize> = if stretch.full {
        (0..n_data).collect()
    } else {
        vec![0usize; stretch.batch]
    };
    // Threshold checks (`--burn-in auto` with a schedule) on an auxiliary batch.
    let m = stretch.batch.max(10).min(n_data.max(2));
    let auto = matches!(stretch.burn_in, BurnIn::Auto);
    let (mut aux, mut scores, mut tscratch) = if auto {
        (
            vec![0usize; m],
            vec![0.0f32; m * d],
            vec![0.0f64; threshold_scratch_len(m, d)],
        )
    } else {
        (vec![], vec![], vec![])
    };
    let check_every = (stretch.total / 400).max(1);
    let tick = (stretch.steps / 100).max(1);
    // Counters instead of a division a step: the next step that is a multiple of
    // `thin` (kept when storing), and the steps to the progress bar's next tick.
    let thin = stretch.thin.max(1);
    let mut next_keep = (ch.steps_run / thin + 1) * thin;
    let mut to_tick = tick;
    let rng = &mut ch.rng;
    // Each step's batch is drawn a step ahead and its rows asked for (`prefetch`), so
    // that they reach the cache while the step before runs.
    let mut next = batch.clone();
    if !stretch.full && sample_batch(rng, n_data, &mut next).is_err() {
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
                let _ = sample_batch(rng, n_data, &mut next);
                est.prefetch(&next);
            }
        }
        match sampler.advance(state, est, &batch, eps, rng) {
            Ok(info) if info.non_finite => {
                let why = if !info.grad_norm.is_finite() {
                    format!(
                        "the gradient is not finite (exploding gradient; norm {}) — lower the step size or check the data scale",
                        info.grad_norm
                    )
                } else {
                    format!(
                        "the update overflowed (step size {eps:e} too large for gradient norm {:e})",
                        info.grad_norm
                    )
                };
                ch.failure = Some((t + 1, why));
                break;
            }
            Ok(_) => {}
            Err(e) => {
                ch.failure = Some((t + 1, e.to_string()));
                break;
            }
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
            BurnIn::Auto => {
                if ch.crossed.is_none() && (t.is_multiple_of(check_every) || step == stretch.total)
                {
                    let ok = sample_batch(rng, n_data, &mut aux).is_ok()
                        && scores_into(model, state.theta(), &aux, &mut scores).is_ok();
                    if ok
                        && let Ok(th) = sampling_threshold(
                            &scores,
                            m,
                            d,
                            eps as f64,
                            n_data.max(m),
                            None,
                            &mut tscratch,
                        )
                    {
                        // eq. 10 with the run's batch size n: α = ε N²/(4n) λ_max
                        let alpha = eps as f64 * (n_data as f64).powi(2)
                            / (4.0 * stretch.batch as f64)
                            * th.lambda_max;
                        if alpha < ch.min_alpha {
                            ch.min_alpha = alpha;
                            ch.lambda_at_min = th.lambda_max;
                        }
                        if alpha < stretch.alpha {
                            ch.crossed = Some(step);
                        }
                    }
                }
                ch.crossed.is_some() || step > stretch.total / 2
            }
        };
        if storing {
            ch.pending += eps as f64;
            if step == next_keep {
                if let Err(e) = ch.draws.push(state.theta()) {
                    ch.failure = Some((step, e));
                    break;
                }
                ch.record.push(step, eps, std::mem::take(&mut ch.pending));
            }
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
