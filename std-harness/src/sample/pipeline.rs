//! Stages 3 to 7 for any model: [`Target::sample`] takes a [`Target`] — a core `Model`
//! with its parameter names and what the outputs record about it — and the
//! [`SampleOptions`], and does what `sgld sample` does after reading the data: warm-up,
//! chains, diagnostics, warnings, and the files. [`sample_model`] is the same call with
//! a command's [`SampleConfig`] and a `String` error.
//!
//! ```
//! use sgld::models::{Gaussian, LogisticDense};
//! use sgld_harness::sample::{SampleOptions, Target};
//!
//! // Two features and a bias column, labels ±1.
//! let x = [0.5, 1.0, 1.0, -1.2, 0.3, 1.0, 2.0, -0.1, 1.0, -0.7, -1.5, 1.0];
//! let y = [1.0, -1.0, 1.0, -1.0];
//! let model = LogisticDense::new(&x, &y, 3, Gaussian::new(1.0)?)?;
//! let names = ["a", "b", "bias"].map(String::from).to_vec();
//! let target = Target::new(&model, "my-logistic", names);
//! // The command's defaults, the outputs into `out`.
//! let out = std::env::temp_dir().join("sgld-doc-sample-model");
//! let options = SampleOptions { steps: Some(2_000), ..SampleOptions::new(out.clone()) };
//! let outcome = target.sample(&options)?;
//! let a = &outcome.summary.params[0];
//! assert_eq!(a.name, "a");
//! assert!(a.sd > 0.0 && a.rhat < 1.1);
//! assert!(out.join("draws.csv").exists() && out.join("chain_4.csv").exists());
//! outcome.print(); // the table `sgld sample` prints
//! // A bad option is an `Error::Options` naming it.
//! let bad = SampleOptions { chains: 0, ..SampleOptions::new(out.clone()) };
//! assert!(matches!(target.sample(&bad), Err(sgld_harness::Error::Options(m)) if m.contains("--chains")));
//! # std::fs::remove_dir_all(&out)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::PathBuf;

use super::chains::Sampled;
use super::chains::{self, Chain};
use super::config::SampleConfig;
use super::network::{self, GridPoint};
use super::options::{Plan, SampleOptions, SamplerKind, Weighting};
use super::output::{self, ParamSummary, Summary};
use super::problem::{Checksums, ModelSync};
use super::progress::Bars;
use super::records::{DataFiles, NetworkSummary, TestSummary};
pub use super::target::{Derived, PriorPrecision, Target, TestMetrics};
use super::{adaptive, cmdstan, diagnose, fixed, mode, report, warmup};
use crate::error::Error;

/// What a run produced.
pub struct Outcome {
    /// The summary (also in `out/summary.json`), its warnings included.
    pub summary: Summary,
    /// Why a chain stopped, when one went non-finite (its draws so far are written).
    pub failure: Option<String>,
    /// The files written.
    pub files: Vec<PathBuf>,
    /// Lines the table prints before the parameters (what the run chose).
    pub notes: Vec<String>,
    out: PathBuf,
}

impl Outcome {
    /// Prints the table `sgld sample` prints, then the warnings.
    pub fn print(&self) {
        output::print_table(&self.summary, &self.notes, &self.out);
    }
}

/// Samples `target` as `sgld sample` does with `cfg` (its model, data and prior fields
/// are the target's; every other field applies): [`Target::sample`] with
/// [`SampleConfig::options`], its error as the message.
pub fn sample_model(target: &Target<'_>, cfg: &SampleConfig) -> Result<Outcome, String> {
    target.sample(&cfg.options()).map_err(String::from)
}

impl Target<'_> {
    /// Samples the target with `options` as `sgld sample` does: writes draws.csv,
    /// summary.json and the per-chain files into `options.out` and returns the summary.
    /// A previous run's files in `options.out` are replaced, as `sgld sample
    /// --overwrite` replaces them (the command refuses such a directory without it).
    /// The same options and seed give the same files, byte for byte, as the command on
    /// the same model.
    pub fn sample(&self, options: &SampleOptions) -> Result<Outcome, Error> {
        run(self, options, None)
    }
}

/// [`Target::sample`] for `sgld sample`, whose data files' sha256s may still be being
/// computed: summary.json takes them from `checksums` when the chains have run.
pub(crate) fn sample_checksummed(
    target: &Target<'_>,
    options: &SampleOptions,
    checksums: Checksums,
) -> Result<Outcome, Error> {
    run(target, options, Some(checksums))
}

fn run(
    target: &Target<'_>,
    cfg: &SampleOptions,
    checksums: Option<Checksums>,
) -> Result<Outcome, Error> {
    check(target, cfg)?;
    // The chains stream their draws into the output directory as they run, under
    // temporary names until the run ends; a previous run's files go first.
    std::fs::create_dir_all(&cfg.out).map_err(|e| Error::io("create", &cfg.out, e))?;
    super::files::remove_previous(&cfg.out)?;
    let mut bars = Bars::new(cfg.chains, cfg.progress);
    let mut run = chains(target, cfg, &bars)?;
    for c in &mut run.sampled.chains {
        c.draws.finish()?;
    }
    let step_grid = std::mem::take(&mut run.step_grid);
    let sampled = &run.sampled;
    bars.stage("diagnostics and output");
    let lp = log_densities(target.model, &sampled.chains)?;
    bars.finish();
    let failure = first_failure(&sampled.chains);
    let kept = kept_draws(sampled, failure.is_some())?;
    // What the user's model reports (θ on its own scale, derived quantities), where it
    // differs from the sampler's coordinates.
    let reported = report::chains(target, &sampled.chains)?;
    let shown: &[Chain] = reported.as_deref().unwrap_or(&sampled.chains);
    let names = report::names(target);
    let mut files = write_files(target, cfg, sampled, shown, &names, lp.as_deref())?;
    let weighting = weighting(cfg, sampled.constant_step);
    let weight = draw_weight(weighting);
    let params = diagnose::summarise(shown, &names, &weight)?;
    let test = test_metrics(target, shown, &weight, kept)?;
    // The data's warnings first, then the run's.
    let mut earlier = target.warnings.clone();
    earlier.extend(sampled.warnings.iter().cloned());
    let (network, lp_warning) =
        network_summary(target, sampled, step_grid, &params, lp.as_ref(), &weight);
    earlier.extend(lp_warning);
    let checked: &[ParamSummary] = network.as_ref().map_or(&params, |s| &s.checked);
    let laplace_sds = report::laplace_sds(target, &run.mode, &run.laplace_sds);
    let evidence = diagnose::Evidence {
        chains: shown,
        target_ess: cfg.target_ess,
        alpha: (cfg.alpha, sampled.alpha),
        laplace_sds: &laplace_sds,
        adjusted: sampled.acceptance.is_some(),
        stability: sampled.stability,
        earlier,
        symmetric: target.network.is_some(),
    };
    let warnings = diagnose::warnings(checked, &evidence);
    let parts = Parts {
        params,
        test,
        warnings,
        weighting,
        complete: failure.is_none(),
        diagnostic_thin: diagnose::diagnostic_thin(shown) as u64,
        network,
    };
    let notes = sampled.notes.clone();
    let summary = summary(target, cfg, run, parts, data_files(target, checksums));
    // Every file into place, summary.json last: a run whose summary.json is there
    // has all its files whole.
    super::files::publish(&files)?;
    output::write_summary(&cfg.out, &summary)?;
    files.insert(1, cfg.out.join("summary.json"));
    Ok(Outcome {
        summary,
        failure,
        files,
        notes,
        out: cfg.out.clone(),
    })
}

/// Why the first chain that stopped early stopped, if one did.
fn first_failure(chains: &[Chain]) -> Option<String> {
    chains.iter().find_map(|ch| {
        ch.failure
            .as_ref()
            .map(|(s, why)| format!("chain {} stopped at step {s}: {why}", ch.id))
    })
}

/// Each kept draw's weight in the summaries: its step's span under `Weighting::Step`,
/// else 1.
fn draw_weight(weighting: Weighting) -> impl Fn(&Chain, usize) -> f64 + Copy {
    move |c: &Chain, k: usize| -> f64 {
        match weighting {
            Weighting::Step => c.record.span(k),
            _ => 1.0,
        }
    }
}

/// The target's data files, each sha256 from `checksums` when given (waiting for those
/// still being computed).
fn data_files(target: &Target<'_>, checksums: Option<Checksums>) -> Option<DataFiles> {
    let mut data = target.data.clone();
    if let (Some(files), Some(sums)) = (data.as_mut(), checksums) {
        sums.fill(files);
    }
    data
}

/// The options, and the target against them: a name per parameter, a batch within the
/// rows.
fn check(target: &Target<'_>, cfg: &SampleOptions) -> Result<(), Error> {
    cfg.validate(target.network.is_some())
        .map_err(Error::Options)?;
    let (n, d) = (target.model.len(), target.model.dim());
    if target.names.len() != d {
        return Err(Error::Target(format!(
            "{} parameter names for a model of {d} parameters",
            target.names.len()
        )));
    }
    match cfg.batch {
        Some(b) if b > n => Err(Error::Target(format!(
            "--batch {b} exceeds the {n} training rows"
        ))),
        _ => Ok(()),
    }
}

/// The kept draws of all chains, or the error that says why there are none (unless a
/// chain failed, which says so itself).
fn kept_draws(sampled: &Sampled, failed: bool) -> Result<usize, String> {
    let kept: usize = sampled.chains.iter().map(Chain::kept).sum();
    if kept == 0 && !failed {
        return Err(format!(
            "no draws were kept: {} steps per chain after a burn-in of {} and --thin {} leave none; lower --thin or --burn-in, or raise --steps",
            sampled.total_steps - sampled.burn_in,
            sampled.burn_in,
            sampled.thin
        ));
    }
    Ok(kept)
}

/// Writes draws.csv (the reported draws), unconstrained.csv (a constrained model's
/// sampler coordinates) and the CmdStan files under their partial names; the files the
/// run publishes, the chains' `.npy` included.
fn write_files(
    target: &Target<'_>,
    cfg: &SampleOptions,
    sampled: &Sampled,
    shown: &[Chain],
    names: &[String],
    lp: Option<&[Vec<f64>]>,
) -> Result<Vec<PathBuf>, String> {
    let mut files = vec![cfg.out.join("draws.csv")];
    if target.supports.is_some() {
        files.push(cfg.out.join("unconstrained.csv"));
    }
    // draws.csv and unconstrained.csv beside the CmdStan files (each formats numbers).
    let (draws, stan) = rayon::join(
        || {
            output::write_draws(&super::files::partial(&files[0]), names, shown)?;
            if let Some(blocks) = target.supports {
                let u_names = crate::constrained::unconstrained_names(blocks, &target.names);
                let path = super::files::partial(&files[1]);
                output::write_draws(&path, &u_names, &sampled.chains)?;
            }
            Ok::<(), String>(())
        },
        || write_cmdstan(target, cfg, sampled, shown, names, lp),
    );
    draws?;
    stan?;
    for c in &sampled.chains {
        files.push(cfg.out.join(format!("chain_{}.csv", c.id + 1)));
        if c.draws.path().is_some() {
            files.push(chains::npy_path(&cfg.out, c.id));
        }
    }
    Ok(files)
}

/// The CmdStan files (`chain_<id>.csv`) under their partial names.
fn write_cmdstan(
    target: &Target<'_>,
    cfg: &SampleOptions,
    sampled: &Sampled,
    shown: &[Chain],
    names: &[String],
    lp: Option<&[Vec<f64>]>,
) -> Result<(), String> {
    let command_line = cfg.command_line.join(" ");
    let header = cmdstan::Header {
        model: &target.name,
        sampler: &sampled.warmup.sampler,
        burn_in: sampled.burn_in,
        thin: sampled.thin,
        step_size: &sampled.step_label,
        seed: cfg.seed,
        seconds: sampled.seconds,
        command_line: &command_line,
    };
    cmdstan::write(&cfg.out, &header, names, shown, lp)
}

/// `--weighting`, `auto` resolved: uniform for a constant step, else by the step.
fn weighting(cfg: &SampleOptions, constant_step: bool) -> Weighting {
    match cfg.weighting {
        Weighting::Auto if constant_step => Weighting::Uniform,
        Weighting::Auto => Weighting::Step,
        w => w,
    }
}

/// The test metrics, where there is a test set and draws: on pooled draws as the model
/// sees θ (without derived quantities).
fn test_metrics(
    target: &Target<'_>,
    shown: &[Chain],
    weight: &dyn Fn(&Chain, usize) -> f64,
    kept: usize,
) -> Result<Option<TestSummary>, String> {
    let Some(metrics) = target.test.filter(|_| kept > 0) else {
        return Ok(None);
    };
    let mut pooled = pooled_draws(shown, weight)?;
    for (theta, _) in &mut pooled {
        theta.truncate(target.model.dim());
    }
    metrics(&pooled).map(Some)
}

/// A network's summary: its single weights are not identified, so the checks read
/// `lp__` (or its estimate on a subset of rows) and the noise precision, and the weights
/// are summarised by layer; and the warning when the log densities could not be read.
/// None for another model.
fn network_summary(
    target: &Target<'_>,
    sampled: &Sampled,
    step_grid: Vec<GridPoint>,
    params: &[ParamSummary],
    lp: Option<&Vec<Vec<f64>>>,
    weight: &dyn Fn(&Chain, usize) -> f64,
) -> (Option<NetworkSummary>, Option<String>) {
    let Some(net) = target.network else {
        return (None, None);
    };
    let mut s = network::describe(net, target.scaling.clone());
    s.step_grid = step_grid;
    s.groups = network::groups(params, net.d_in(), net.width());
    let chains = &sampled.chains;
    let (name, lp) = match lp {
        Some(lp) => ("lp__", Ok(lp.clone())),
        None => ("lp_subset__", subset_log_densities(target.model, chains)),
    };
    let warning = match lp {
        Ok(lp) => {
            let series = diagnose::summarise_series(name, &lp, chains, weight);
            s.checked.push(series);
            None
        }
        Err(e) => Some(format!("{name}: {e}")),
    };
    s.checked
        .extend(params.iter().filter(|p| p.name == "log_precision").cloned());
    (Some(s), warning)
}

/// What the summary holds besides the run's own record.
struct Parts {
    params: Vec<ParamSummary>,
    test: Option<TestSummary>,
    warnings: Vec<String>,
    weighting: Weighting,
    complete: bool,
    diagnostic_thin: u64,
    network: Option<NetworkSummary>,
}

/// summary.json.
fn summary(
    target: &Target<'_>,
    cfg: &SampleOptions,
    run: Run,
    parts: Parts,
    data: Option<DataFiles>,
) -> Summary {
    let sampled = run.sampled;
    let chains_n = sampled.chains.len() as f64;
    // A chain that stopped ran to its failure, not to the planned length.
    let ran: Vec<u64> = sampled
        .chains
        .iter()
        .map(|c| {
            c.failure
                .as_ref()
                .map_or(sampled.total_steps, |(s, _)| (*s).min(sampled.total_steps))
        })
        .collect();
    let acceptance = sampled.acceptance.or_else(|| {
        (cfg.sampler == SamplerKind::Mala).then(|| {
            sampled.chains.iter().map(|c| c.moves).sum::<u64>() as f64
                / (sampled.total_steps as f64 * chains_n).max(1.0)
        })
    });
    Summary {
        model: target.name.clone(),
        sampler: sampled.warmup.sampler.clone(),
        cv: sampled.warmup.cv,
        temperature: cfg.temperature,
        grad_evals_per_step: sampled.grad_evals_per_step,
        pilot_steps: sampled.warmup.mode_iterations as u64,
        acceptance,
        divergent: sampled.divergent,
        n_train: target.model.len(),
        dim: target.model.dim(),
        complete: parts.complete,
        steps: ran.iter().copied().max().unwrap_or(0),
        chains: sampled.chains.len(),
        chain_ids: cfg
            .chain_ids
            .as_ref()
            .map(|_| sampled.chains.iter().map(|c| c.id).collect()),
        burn_in: sampled.burn_in,
        weighting: parts.weighting,
        seconds: sampled.seconds,
        steps_per_second: ran.iter().sum::<u64>() as f64 / sampled.seconds.max(1e-12),
        sampling_seconds: sampled.sampling.0,
        ns_per_step: sampled.sampling.0 * 1e9 / (sampled.sampling.1 as f64 * chains_n).max(1.0),
        params: parts.params,
        test: parts.test,
        warnings: parts.warnings,
        version: env!("CARGO_PKG_VERSION").into(),
        command_line: cfg.command_line.clone(),
        seed: cfg.seed,
        prior: target.prior.clone(),
        data,
        batch: sampled.batch,
        step_size: sampled.step_label.clone(),
        thin: sampled.thin,
        diagnostic_thin: parts.diagnostic_thin,
        target_ess: cfg.target_ess,
        alpha_target: cfg.alpha,
        warmup: sampled.warmup,
        starts: run.starts,
        network: parts.network,
    }
}
/// The chains stage's result and what the checks and summary.json need besides.
struct Run {
    sampled: Sampled,
    starts: Vec<Vec<f32>>,
    /// The Laplace approximation's sds (none for a network).
    laplace_sds: Vec<f64>,
    /// The mode they are at (none for a network).
    mode: Vec<f32>,
    /// A network's step search.
    step_grid: Vec<GridPoint>,
}

/// The chains of `target`: a network's ([`network::run`]), or the mode, the Laplace
/// approximation and an adapted or fixed run.
fn chains(target: &Target<'_>, cfg: &SampleOptions, bars: &Bars) -> Result<Run, Error> {
    let plan = cfg.plan(target.network.is_some());
    if let (Plan::Network, Some(net)) = (plan, target.network) {
        let r = network::run(cfg, net, &target.names, bars)?;
        return Ok(Run {
            sampled: r.sampled,
            starts: r.starts,
            laplace_sds: vec![],
            mode: vec![],
            step_grid: r.step_grid,
        });
    }
    let model = target.model;

    let init = warmup::init_rows(cfg, &target.names).map_err(Error::Options)?;
    let start = warmup::search_start(init.as_deref(), model.dim());
    // A given schedule runs without the mode (its chains then show the failure); the
    // adapted warm-up needs it.
    let prior = target
        .prior_precision
        .map(|p| p as warmup::PriorDiagonal<'_>);
    bars.stage("warm-up: the mode by L-BFGS and the Laplace approximation");
    let (lap, lap_failed) = match warmup::laplace(prior, model, &start) {
        Ok(l) => (l, None),
        Err(e) if plan != Plan::Adapted => (warmup::Laplace::at(&start), Some(e)),
        Err(e) => return Err(Error::Warmup(format!("warm-up: {e}"))),
    };
    let starts = warmup::starts(cfg, &lap, init.as_deref());
    let mut sampled = if plan == Plan::Adapted {
        let shape = match (target.smooth, target.laplace) {
            (true, _) => adaptive::Shape::Smooth,
            (false, Some(b)) => adaptive::Shape::Laplace(b),
            (false, None) => adaptive::Shape::Kinked,
        };
        adaptive::run(cfg, model, &lap, &starts, shape, bars)?
    } else {
        fixed::run(cfg, model, &lap, &starts, bars)?
    };
    if let Some(e) = lap_failed {
        sampled.warnings.insert(
            0,
            format!("no mode was found ({e}): the chains started around the start of the search with unit spread"),
        );
    }
    Ok(Run {
        sampled,
        starts,
        laplace_sds: lap.sds,
        mode: lap.mode.theta,
        step_grid: vec![],
    })
}

/// Each chain's `log p(θ) + Σᵢ log p(xᵢ|θ)` at its kept draws (CmdStan's `lp__`), when
/// the draws times the training rows are within [`cmdstan::LP_BUDGET`].
fn log_densities(model: &dyn ModelSync, chains: &[Chain]) -> Result<Option<Vec<Vec<f64>>>, String> {
    let kept: usize = chains.iter().map(Chain::kept).sum();
    if kept as f64 * model.len() as f64 > cmdstan::LP_BUDGET {
        return Ok(None);
    }
    per_draw(chains, |theta| mode::log_posterior(model, theta)).map(Some)
}

/// `f` at every kept draw of every chain, the chains in parallel.
fn per_draw(chains: &[Chain], f: impl Fn(&[f32]) -> f64 + Sync) -> Result<Vec<Vec<f64>>, String> {
    use rayon::prelude::*;
    chains
        .par_iter()
        .map(|ch| {
            let mut values = Vec::with_capacity(ch.kept());
            ch.draws.rows(0..ch.kept(), |_, theta| {
                values.push(f(theta));
                Ok(())
            })?;
            Ok(values)
        })
        .collect()
}

/// [`log_densities`] where they exceed the budget: the log prior plus `N/m` times the
/// log likelihood of `m` evenly spaced training rows — a fixed function of θ, so its R̂
/// and ESS check the chains as `lp__`'s would — with `m` such that the kept draws times
/// `m` rows times the parameters (a dense row's cost) are at most `64·LP_BUDGET`.
fn subset_log_densities(model: &dyn ModelSync, chains: &[Chain]) -> Result<Vec<Vec<f64>>, String> {
    let kept: usize = chains.iter().map(Chain::kept).sum();
    let n = model.len();
    let cost = kept.max(1) as f64 * model.dim().max(1) as f64;
    let m = ((64.0 * cmdstan::LP_BUDGET / cost) as usize).clamp(1, n);
    let rows: Vec<usize> = (0..m).map(|k| k * n / m).collect();
    let scale = n as f64 / m as f64;
    per_draw(chains, |theta| {
        model.log_prior(theta) + scale * model.log_lik(theta, &rows)
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::draws::Draws;
    use crate::sample::kept::Kept;
    use sgld::models::{Gaussian, LogisticDense};

    /// Within the budget the subset is every row (then it is lp__); above it, the log
    /// prior plus `N/m` times the likelihood of `m` evenly spaced rows.
    #[test]
    fn subset_log_densities_scale_a_fixed_subset() {
        let n = 30;
        let x: Vec<f32> = (0..2 * n)
            .map(|i| ((i * 7) % 11) as f32 * 0.2 - 1.0)
            .collect();
        let y: Vec<f32> = (0..n)
            .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        let m = LogisticDense::new(&x, &y, 2, Gaussian::new(1.0).unwrap()).unwrap();
        let mut draws = Draws::in_memory(2);
        let mut kept = Kept::default();
        for k in 0..5 {
            draws.push(&[0.1 * k as f32, -0.3]).unwrap();
            kept.push(k + 1, 0.1, 0.1);
        }
        let chains = vec![Chain::from_draws(0, draws, kept)];
        let full = log_densities(&m, &chains).unwrap().unwrap();
        let sub = subset_log_densities(&m, &chains).unwrap();
        for (a, b) in full[0].iter().zip(&sub[0]) {
            assert!((a - b).abs() < 1e-9 * a.abs().max(1.0), "{a} vs {b}");
        }
    }
}
