//! `sgld sample`: any model on any data set, as a pipeline of stages a reader can follow:
//!
//! 1. [`config`] — what was asked, checked;
//! 2. [`problem`] — the data read into a model;
//! 3. [`warmup`] — the mode, the Laplace approximation, dispersed starts, and (with
//!    `--step-size auto`) the preconditioner, estimator and step size of eq. 10;
//! 4. chains — [`adaptive`] warm-up and sampling to a target ESS, or a [`fixed`] schedule;
//! 5. [`diagnose`] — summaries, R̂, ESS and the checklist of warnings;
//! 6. [`output`] — `draws.csv`, `summary.json` and the printed table.
//!
//! Stages 3 to 6 take any model: [`sample_model`] runs them for a [`Target`] (a core
//! `Model` with its parameter names), as the command does for its built-in models.

pub mod adapt;
pub mod adaptive;
pub mod bias;
pub mod blocks;
pub mod chains;
pub mod cmdstan;
pub mod config;
pub mod diagnose;
pub mod draws;
pub mod exact;
pub mod files;
pub mod fixed;
pub mod hmc;
pub mod kept;
pub mod mode;
pub mod network;
pub mod output;
pub mod pipeline;
pub mod problem;
pub mod report;
mod spectrum;
pub mod warmup;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

pub use chains::chain_seed;
pub use config::{
    ModelKind, NetOutput, SampleConfig, SamplerKind, SamplerSettings, Weighting, cv_applies,
    validate,
};
pub use fixed::psgld_scale;
pub use output::{DataFile, DataFiles, ParamSummary, Summary, TestSummary};
pub use pipeline::{Outcome, Target, sample_model};
pub use problem::{ModelSync, Problem};

use chains::Chain;
use warmup::WarmupSummary;

/// The sampler `$s` with `$cfg`'s `--temperature` and `--clip` (each sampler's own
/// `with_temperature` and `with_clip`), or the error naming the option.
macro_rules! with_options {
    ($s:expr, $cfg:expr) => {{
        let bad = |what: &'static str| move |e: sgld::Error| format!("{what}: {e}");
        let s = $s
            .with_temperature($cfg.temperature)
            .map_err(bad("--temperature"))?;
        match $cfg.clip {
            Some(c) => s.with_clip(c).map_err(bad("--clip"))?,
            None => s,
        }
    }};
}
pub(crate) use with_options;

/// Steps per chain of a given schedule without `--steps`.
pub const DEFAULT_STEPS: u64 = 10_000;

/// Draws per chain that `--thin auto` keeps at most: enough for the quantiles and the
/// ESS of a few hundred, small enough that the outputs and their diagnostics stay quick.
/// Every step after burn-in still counts in the means: a kept draw is weighted by the
/// steps it stands for ([`kept::Kept::span`]).
pub const AUTO_DRAWS: u64 = 4_000;

/// The thinning that keeps at most [`AUTO_DRAWS`] of `steps` kept steps.
pub fn auto_thin(steps: u64) -> u64 {
    steps.div_ceil(AUTO_DRAWS).max(1)
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

/// One progress bar per chain, under a line that says what the run is doing (the
/// warm-up's stages, then sampling) with the time it has taken; hidden unless asked for.
pub struct Bars {
    _multi: MultiProgress,
    stage: ProgressBar,
    bars: Vec<ProgressBar>,
}

/// A rate as a person reads it: `1.16M steps/s`, `845k steps/s`, `92 steps/s`.
fn steps_per_second(rate: f64) -> String {
    match rate {
        r if r >= 1e6 => format!("{:.2}M steps/s", r / 1e6),
        r if r >= 1e4 => format!("{:.0}k steps/s", r / 1e3),
        r if r >= 1e3 => format!("{:.1}k steps/s", r / 1e3),
        r => format!("{r:.0} steps/s"),
    }
}

impl Bars {
    fn new(chains: usize, show: bool) -> Self {
        let multi = MultiProgress::new();
        if !show {
            multi.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let style = ProgressStyle::with_template(
            "chain {prefix} [{bar:40}] {pos}/{len} steps ({rate}, {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&steps_per_second(state.per_sec()));
            },
        )
        .progress_chars("=> ");
        let stage = multi.add(
            ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        );
        if show {
            stage.enable_steady_tick(std::time::Duration::from_millis(200));
        }
        let bars = (0..chains)
            .map(|c| {
                multi.add(
                    ProgressBar::new(0)
                        .with_style(style.clone())
                        .with_prefix(c.to_string()),
                )
            })
            .collect();
        Self {
            _multi: multi,
            stage,
            bars,
        }
    }

    /// Says what the run does now (`warm-up: finding the mode`, …).
    pub(crate) fn stage(&self, what: &str) {
        self.stage.set_message(what.to_string());
    }

    /// Clears every line.
    fn finish(&self) {
        self.stage.finish_and_clear();
        for b in &self.bars {
            b.finish_and_clear();
        }
    }

    /// Lengthens every bar by `steps`.
    fn extend(&self, steps: u64) {
        for b in &self.bars {
            b.inc_length(steps);
        }
    }
}

/// Runs `sgld sample`; returns the summary (also written to `out/summary.json`) and an
/// error message when a chain went non-finite (its draws so far are still written).
pub fn run(cfg: &SampleConfig) -> Result<(Summary, Option<String>), String> {
    run_impl(cfg, true)
}

/// [`run`] without the printed table (for drivers such as `sgld compare`).
pub fn run_quiet(cfg: &SampleConfig) -> Result<(Summary, Option<String>), String> {
    run_impl(cfg, false)
}

/// The command: the data read into one of the built-in models, then [`sample_model`].
fn run_impl(cfg: &SampleConfig, print: bool) -> Result<(Summary, Option<String>), String> {
    validate(cfg)?;
    let started = std::time::Instant::now();
    let problem = Problem::load(cfg)?;
    if print {
        // On stderr, beside the progress bars: when the reading ended and what it took.
        eprintln!(
            "sgld sample: read {} training rows of {} feature{} in {:.2} s",
            problem.n_train(),
            problem.features,
            if problem.features == 1 { "" } else { "s" },
            started.elapsed().as_secs_f64()
        );
    }
    let data = problem.files.clone();
    let problem = &problem;
    let prior_precision = |theta: &[f32]| problem.prior_precision(theta);
    let test = problem
        .test
        .as_ref()
        .map(|t| move |draws: &[(Vec<f32>, f64)]| crate::predict::evaluate(problem, t, draws));
    let label = problem
        .prior
        .map_or_else(|| "paper".to_string(), |p| p.to_string());
    let outcome = if cfg.model == ModelKind::Mlp {
        let net = problem.network()?;
        let mut target = Target::network(&net, cfg.model.name(), problem.names.clone())
            .with_data(data)
            .with_warnings(problem.warnings.clone());
        if let Some(s) = &problem.scaling {
            target = target.with_scaling(s.clone());
        }
        if let Some(t) = &test {
            target = target.with_test(t);
        }
        sample_model(&target, cfg)?
    } else {
        problem::with_model(problem, |model| {
            let mut target = Target::new(model, cfg.model.name(), problem.names.clone())
                .with_prior(&label, &prior_precision)
                .with_data(data)
                .with_warnings(problem.warnings.clone());
            if let Some(t) = &test {
                target = target.with_test(t);
            }
            sample_model(&target, cfg)
        })??
    };
    // A run whose chain stopped ends in the error naming the cause, not in a table of
    // what it left.
    if print && outcome.failure.is_none() {
        outcome.print();
    }
    Ok((outcome.summary, outcome.failure))
}
