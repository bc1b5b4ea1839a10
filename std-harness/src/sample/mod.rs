//! `sgld sample`: any model on any data set, as a pipeline of stages a reader can follow.
//! Each stage imports only its own and earlier ones (`tests/layers.rs` checks it):
//!
//! 0. utilities — the kept draws ([`draws`], [`kept`]), the output directory's
//!    [`files`], the [`progress`] bars, the generator streams ([`seeds`]);
//! 1. what was asked — the options checked ([`config`]), the [`target`] (a model with its
//!    names, prior, supports and derived quantities) and the [`records`] the stages hand
//!    on;
//! 2. [`problem`] — the data read into a model ([`net_model`] for a network);
//! 3. warm-up — the [`mode`] and the Laplace approximation, dispersed starts, and the
//!    step of eq. 10 ([`warmup`]);
//! 4. [`chains`] — a chain, its steps and its kept draws;
//! 5. [`diagnose`] — summaries, R̂, ESS and the checklist of warnings;
//! 6. runs — chains stepped until the diagnostics say enough: [`adaptive`] (with
//!    [`adapt`], [`bias`] and [`blocks`]), the [`exact`] path ([`hmc`]), a [`fixed`]
//!    schedule, a [`network`]; each chosen sampler built in one place ([`samplers`]);
//! 7. output — `draws.csv` and `summary.json` ([`output`]), the CmdStan files
//!    ([`cmdstan`]), the draws on the model's scale ([`report`]);
//! 8. [`pipeline`] — [`sample_model`] runs stages 3 to 7 for a [`Target`], as the
//!    command does for its built-in models after stage 2.

pub mod adapt;
pub mod adaptive;
pub mod bias;
pub mod blocks;
pub mod chains;
pub mod cmdstan;
pub mod config;
mod dense;
pub mod diagnose;
pub mod draws;
pub mod exact;
pub mod files;
pub mod fixed;
pub mod hmc;
pub mod kept;
pub mod metric_store;
pub mod mode;
pub mod net_model;
pub mod network;
pub mod options;
pub mod output;
pub mod pipeline;
pub mod problem;
pub mod progress;
pub mod records;
pub mod report;
pub mod samplers;
pub mod seeds;
pub mod shear;
mod spectrum;
pub mod target;
pub mod warmup;

pub use chains::Sampled;
pub use config::{AUTO_DRAWS, DEFAULT_STEPS, auto_thin};
pub use config::{
    ModelKind, NetOutput, SampleConfig, SamplerKind, SamplerSettings, Weighting, cv_applies,
    validate,
};
pub use fixed::psgld_scale;
pub use options::{Plan, SampleOptions};
pub use output::{DataFile, DataFiles, ParamSummary, Summary, TestSummary};
pub use pipeline::{Outcome, Target, sample_model};
pub use problem::{ModelSync, Problem};
pub use progress::Bars;
pub use seeds::chain_seed;

use crate::error::Error;

/// Runs `sgld sample`; returns the summary (also written to `out/summary.json`) and an
/// error message when a chain went non-finite (its draws so far are still written).
pub fn run(cfg: &SampleConfig) -> Result<(Summary, Option<String>), Error> {
    run_impl(cfg, true)
}

/// [`run`] without the printed table (for drivers such as `sgld compare`).
pub fn run_quiet(cfg: &SampleConfig) -> Result<(Summary, Option<String>), Error> {
    run_impl(cfg, false)
}

/// The command: the data read into one of the built-in models, then [`sample_model`].
fn run_impl(cfg: &SampleConfig, print: bool) -> Result<(Summary, Option<String>), Error> {
    validate(cfg).map_err(Error::Options)?;
    let started = std::time::Instant::now();
    // A memory-mapped design's sha256 is computed beside the run, for summary.json.
    let (problem, checksums) = Problem::load_checksummed(cfg).map_err(Error::Data)?;
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
    let options = cfg.options();
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
        let net = problem.network().map_err(Error::Data)?;
        let mut target = Target::network(&net, cfg.model.name(), problem.names.clone())
            .with_data(data)
            .with_warnings(problem.warnings.clone());
        if let Some(s) = &problem.scaling {
            target = target.with_scaling(s.clone());
        }
        if let Some(t) = &test {
            target = target.with_test(t);
        }
        pipeline::sample_checksummed(&target, &options, checksums)?
    } else {
        problem::with_model(problem, |model| {
            let mut target = Target::new(model, cfg.model.name(), problem.names.clone())
                .with_prior(&label, &prior_precision)
                .with_data(data)
                .with_warnings(problem.warnings.clone());
            if let Some(t) = &test {
                target = target.with_test(t);
            }
            pipeline::sample_checksummed(&target, &options, checksums)
        })
        .map_err(Error::Data)??
    };
    // A run whose chain stopped ends in the error naming the cause, not in a table of
    // what it left.
    if print && outcome.failure.is_none() {
        outcome.print();
    }
    Ok((outcome.summary, outcome.failure))
}
