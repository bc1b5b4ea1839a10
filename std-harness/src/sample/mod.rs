//! `sgld sample`: any model on any data set, as a pipeline of stages a reader can follow:
//!
//! 1. [`config`] — what was asked, checked;
//! 2. [`problem`] — the data read into a model;
//! 3. [`warmup`] — the mode, the Laplace approximation, dispersed starts, and (with
//!    `--step-size auto`) the preconditioner, estimator and step size of eq. 10;
//! 4. chains — [`adaptive`] warm-up and sampling to a target ESS, or a [`fixed`] schedule;
//! 5. [`diagnose`] — summaries, R̂, ESS and the checklist of warnings;
//! 6. [`output`] — `draws.csv`, `summary.json` and the printed table.

pub mod adaptive;
pub mod chains;
pub mod cmdstan;
pub mod config;
pub mod diagnose;
pub mod draws;
pub mod fixed;
pub mod kept;
pub mod mode;
pub mod output;
pub mod problem;
pub mod warmup;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

pub use chains::chain_seed;
pub use config::{
    ModelKind, SampleConfig, SamplerKind, SamplerSettings, Weighting, cv_applies, validate,
};
pub use fixed::psgld_scale;
pub use output::{DataFile, DataFiles, ParamSummary, Summary, TestSummary};
pub use problem::{ModelSync, Problem};

use chains::Chain;
use warmup::WarmupSummary;

/// Steps per chain of a given schedule without `--steps`.
pub const DEFAULT_STEPS: u64 = 10_000;

/// Draws per chain that `--thin auto` keeps at most: enough for the quantiles and the
/// ESS of a few hundred, small enough that the outputs and their diagnostics stay quick.
/// Every step after burn-in still counts in the means: a kept draw is weighted by the
/// steps it stands for ([`chains::Chain::span`]).
pub const AUTO_DRAWS: u64 = 4_000;

/// The thinning that keeps at most [`AUTO_DRAWS`] of `steps` kept steps.
pub fn auto_thin(steps: u64) -> u64 {
    steps.div_ceil(AUTO_DRAWS).max(1)
}

/// Each chain's `log p(θ) + Σᵢ log p(xᵢ|θ)` at its kept draws (CmdStan's `lp__`), when
/// the draws times the training rows are within [`cmdstan::LP_BUDGET`].
fn log_densities(
    model: &dyn problem::ModelSync,
    chains: &[Chain],
) -> Result<Option<Vec<Vec<f64>>>, String> {
    let kept: usize = chains.iter().map(Chain::kept).sum();
    if kept as f64 * model.len() as f64 > cmdstan::LP_BUDGET {
        return Ok(None);
    }
    chains
        .iter()
        .map(|ch| {
            let mut lp = Vec::with_capacity(ch.kept());
            ch.draws.rows(0..ch.kept(), |_, theta| {
                lp.push(mode::log_posterior(model, theta));
                Ok(())
            })?;
            Ok(lp)
        })
        .collect::<Result<_, String>>()
        .map(Some)
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
}

/// One progress bar per chain, hidden unless asked for.
pub struct Bars {
    _multi: MultiProgress,
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
            bars,
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

fn data_file(path: &std::path::Path) -> Result<DataFile, String> {
    Ok(DataFile {
        path: path.display().to_string(),
        sha256: crate::data::registry::sha256_file(path)
            .map_err(|e| format!("{}: {e}", path.display()))?,
    })
}

fn run_impl(cfg: &SampleConfig, print: bool) -> Result<(Summary, Option<String>), String> {
    validate(cfg)?;
    let problem = Problem::load(cfg)?;
    let n = problem.n_train();
    if let Some(b) = cfg.batch
        && b > n
    {
        return Err(format!("--batch {b} exceeds the {n} training rows"));
    }
    let data = DataFiles {
        train: data_file(&cfg.train)?,
        test: cfg.test.as_deref().map(data_file).transpose()?,
    };
    // The chains stream their draws into the output directory as they run.
    std::fs::create_dir_all(&cfg.out)
        .map_err(|e| format!("cannot create {}: {e}", cfg.out.display()))?;
    let bars = Bars::new(cfg.chains, cfg.progress);
    let (sampled, lap_sds, starts, lp) = problem::with_model(&problem, |model| {
        let init = warmup::init_rows(cfg, &problem)?;
        let start = warmup::search_start(init.as_deref(), problem.dim());
        // A given schedule runs without the mode (its chains then show the failure);
        // the adapted warm-up needs it.
        let (lap, lap_failed) = match warmup::laplace(&problem, model, &start) {
            Ok(l) => (l, None),
            Err(e) if !cfg.adaptive() => (warmup::Laplace::at(&start), Some(e)),
            Err(e) => return Err(format!("warm-up: {e}")),
        };
        let starts = warmup::starts(cfg, &lap, init.as_deref());
        let mut s = if cfg.adaptive() {
            adaptive::run(cfg, model, &lap, &starts, &bars)?
        } else {
            fixed::run(cfg, model, &lap, &starts, &bars)?
        };
        if let Some(e) = lap_failed {
            s.warnings.insert(
                0,
                format!("no mode was found ({e}): the chains started around the start of the search with unit spread"),
            );
        }
        for c in &mut s.chains {
            c.draws.finish()?;
        }
        let lp = log_densities(model, &s.chains)?;
        Ok::<_, String>((s, lap.sds, starts, lp))
    })??;
    for b in &bars.bars {
        b.finish_and_clear();
    }
    let failure = sampled.chains.iter().find_map(|ch| {
        ch.failure
            .as_ref()
            .map(|(s, why)| format!("chain {} stopped at step {s}: {why}", ch.id))
    });
    let kept: usize = sampled.chains.iter().map(Chain::kept).sum();
    if kept == 0 && failure.is_none() {
        return Err(format!(
            "no draws were kept: {} steps per chain after a burn-in of {} and --thin {} leave none; lower --thin or --burn-in, or raise --steps",
            sampled.total_steps - sampled.burn_in,
            sampled.burn_in,
            sampled.thin
        ));
    }
    output::write_draws(&cfg.out.join("draws.csv"), &problem.names, &sampled.chains)?;
    let command_line = cfg.command_line.join(" ");
    let header = cmdstan::Header {
        model: cfg.model.name(),
        sampler: &sampled.warmup.sampler,
        burn_in: sampled.burn_in,
        thin: sampled.thin,
        step_size: &sampled.step_label,
        seed: cfg.seed,
        seconds: sampled.seconds,
        command_line: &command_line,
    };
    cmdstan::write(
        &cfg.out,
        &header,
        &problem.names,
        &sampled.chains,
        lp.as_deref(),
    )?;

    let weighting = match cfg.weighting {
        Weighting::Auto if sampled.constant_step => Weighting::Uniform,
        Weighting::Auto => Weighting::Step,
        w => w,
    };
    let weight = move |c: &Chain, k: usize| -> f64 {
        match weighting {
            Weighting::Step => c.record.span(k),
            _ => 1.0,
        }
    };
    let params = diagnose::summarise(&sampled.chains, &problem.names, &weight)?;
    let test = match &problem.test {
        Some(t) if kept > 0 => Some(crate::predict::evaluate(
            &problem,
            t,
            &pooled_draws(&sampled.chains, &weight)?,
        )?),
        _ => None,
    };
    let warnings = diagnose::warnings(
        &params,
        &diagnose::Evidence {
            chains: &sampled.chains,
            target_ess: cfg.target_ess,
            alpha: (cfg.alpha, sampled.alpha),
            laplace_sds: &lap_sds,
            stability: sampled.stability,
            earlier: sampled.warnings.clone(),
        },
    );
    let chains_n = sampled.chains.len() as f64;
    let acceptance = (cfg.sampler == SamplerKind::Mala).then(|| {
        sampled.chains.iter().map(|c| c.moves).sum::<u64>() as f64
            / (sampled.total_steps as f64 * chains_n).max(1.0)
    });
    let summary = Summary {
        model: cfg.model,
        sampler: sampled.warmup.sampler.clone(),
        cv: sampled.warmup.cv,
        temperature: cfg.temperature,
        grad_evals_per_step: sampled.grad_evals_per_step,
        pilot_steps: sampled.warmup.mode_iterations as u64,
        acceptance,
        n_train: n,
        dim: problem.dim(),
        steps: sampled.total_steps,
        chains: sampled.chains.len(),
        chain_ids: cfg
            .chain_ids
            .as_ref()
            .map(|_| sampled.chains.iter().map(|c| c.id).collect()),
        burn_in: sampled.burn_in,
        weighting,
        seconds: sampled.seconds,
        steps_per_second: sampled.total_steps as f64 * chains_n / sampled.seconds.max(1e-12),
        sampling_seconds: sampled.sampling.0,
        ns_per_step: sampled.sampling.0 * 1e9 / (sampled.sampling.1 as f64 * chains_n).max(1.0),
        params,
        test,
        warnings,
        version: env!("CARGO_PKG_VERSION").into(),
        command_line: cfg.command_line.clone(),
        seed: cfg.seed,
        prior: problem
            .prior
            .map_or_else(|| "paper".to_string(), |p| p.to_string()),
        data,
        batch: sampled.batch,
        step_size: sampled.step_label.clone(),
        thin: sampled.thin,
        diagnostic_thin: diagnose::diagnostic_thin(&sampled.chains) as u64,
        target_ess: cfg.target_ess,
        alpha_target: cfg.alpha,
        warmup: sampled.warmup.clone(),
        starts,
    };
    output::write_summary(&cfg.out, &summary)?;
    if print {
        output::print_table(&summary, &sampled.notes, &cfg.out);
    }
    Ok((summary, failure))
}

/// Up to 1000 pooled draws (evenly spaced) with their weights, for prediction.
fn pooled_draws(
    chains: &[Chain],
    weight: &dyn Fn(&Chain, usize) -> f64,
) -> Result<Vec<(Vec<f32>, f64)>, String> {
    let total: usize = chains.iter().map(Chain::kept).sum();
    let stride = total.div_ceil(1000).max(1);
    let mut pooled = Vec::new();
    let mut at = 0;
    for ch in chains {
        ch.draws.rows(0..ch.kept(), |k, row| {
            if (at + k).is_multiple_of(stride) {
                pooled.push((row.to_vec(), weight(ch, k)));
            }
            Ok(())
        })?;
        at += ch.kept();
    }
    Ok(pooled)
}
