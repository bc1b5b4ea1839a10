//! `sgld`: the command-line harness of the sgld sampling core.

// The doc comments below are the command's --help text (clap), written for a terminal,
// not for rustdoc: `[,GAMMA]` and `<experiment>` are literal.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use sgld_harness::bench::{self, WorkloadKind};
use sgld_harness::compare::{self, CompareConfig};
use sgld_harness::data::{self, Format, registry};
use sgld_harness::experiments;
use sgld_harness::sample::{
    self, ModelKind, NetOutput, SampleConfig, SamplerKind, SamplerSettings, Weighting,
};
use sgld_harness::spec::{BatchSize, BurnIn, ChainIds, InitSpec, PriorSpec, StepChoice, Thin};

/// Stochastic gradient Langevin dynamics (Welling & Teh 2011): sample models, reproduce
/// the papers' experiments, manage data sets.
#[derive(Debug, Parser)]
#[command(name = "sgld", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sample a model on a data set: draws.csv, summary.json and a summary table.
    #[command(allow_negative_numbers = true)]
    Sample(SampleCmd),
    /// Every sampler on one model and data set: ESS per second and per gradient, and
    /// errors against a reference (exact for linreg, a long MALA run otherwise).
    #[command(allow_negative_numbers = true)]
    Compare(CompareArgs),
    /// Reproduce a paper's experiment (figures, CSV series and report.md).
    Reproduce(ReproduceArgs),
    /// Time whole workloads (a9a, the mixture, ICA, noise) against the machine's measured
    /// floor.
    Bench(BenchArgs),
    /// Merge the outputs of several `sgld sample` runs (e.g. the parts of a run split
    /// with --chain-ids) into one summary.
    Summarize(SummarizeArgs),
    /// List or fetch the known data sets.
    Data {
        #[command(subcommand)]
        command: DataCommand,
        /// The data directory (default: $SGLD_DATA_DIR).
        #[arg(long, global = true)]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
struct SummarizeArgs {
    /// Output directories of `sgld sample` (each with its draws.csv).
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Write the merged summary.json into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The bulk and tail ESS below which a parameter is warned about.
    #[arg(long, default_value_t = 400.0)]
    target_ess: f64,
}

#[derive(Debug, Args)]
struct SampleCmd {
    #[command(flatten)]
    args: SampleArgs,
    /// The sampler (default: sgld; kfac for --model mlp). precond and sghd use the
    /// warm-up's metric (the Laplace approximation at the L-BFGS mode); kfac is for
    /// networks.
    #[arg(long, value_enum)]
    sampler: Option<SamplerKind>,
}

#[derive(Debug, Args)]
struct CompareArgs {
    #[command(flatten)]
    args: SampleArgs,
    /// The samplers, comma-separated (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    samplers: Option<Vec<SamplerKind>>,
    /// Steps of each MALA run (each a full pass over the data; the reference runs 4x).
    #[arg(long, default_value_t = 5000)]
    mala_steps: u64,
}

#[derive(Debug, Args)]
struct SampleArgs {
    /// The model.
    #[arg(long, value_enum)]
    model: ModelKind,
    /// Training data (LIBSVM, headed CSV, or a 2-D NumPy .npy array).
    #[arg(long)]
    train: PathBuf,
    /// Test data, in the same format.
    #[arg(long)]
    test: Option<PathBuf>,
    /// File format (default: .csv is CSV, .npy NumPy, .parquet Parquet, anything else
    /// LIBSVM).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// The response column (default: the last): a CSV or Parquet column's name, a .npy
    /// column's 0-based index.
    #[arg(long)]
    target: Option<String>,
    /// A .npy file of the training labels (1-D), when they are not a column of --train.
    #[arg(long)]
    labels: Option<PathBuf>,
    /// A .npy file of the test labels, with --labels.
    #[arg(long, requires = "labels")]
    test_labels: Option<PathBuf>,
    /// laplace:SCALE | gaussian:VAR | nig:V,PHI,PSI (default: laplace:1 for logistic, nig:100,1,1 for linreg).
    #[arg(long)]
    prior: Option<PriorSpec>,
    /// No constant bias (intercept) feature: logistic and linreg add a `bias` parameter
    /// by default.
    #[arg(long)]
    no_bias: bool,
    /// Mini-batch size n: auto (adapted runs: the smallest batch whose step is not
    /// limited by alpha, or the whole data set; 10 with a given schedule; 32 for
    /// --model mlp) or a number.
    #[arg(long, default_value = "auto")]
    batch: BatchSize,
    /// Steps per chain: after warm-up with --step-size auto (default: until
    /// --target-ess), in all with a given schedule (default: 10000) and for --model mlp
    /// (default: 1300).
    #[arg(long)]
    steps: Option<u64>,
    /// auto (warm-up finds the mode, a Laplace preconditioner and the step at which
    /// alpha of eq. 10 is --alpha; --model mlp: the step of a grid that best predicts
    /// held-out training rows) or range:START,END[,GAMMA] | poly:A,B,GAMMA | const:EPS |
    /// cyclical:EPS0,CYCLES, used as given.
    #[arg(long, default_value = "auto")]
    step_size: StepChoice,
    /// auto (adapted: until chains from dispersed starts agree, split R̂ <= 1.05; a given
    /// schedule: where eq. 10's threshold falls below --alpha; --model mlp: 3/13 of the
    /// steps) or a number of steps.
    #[arg(long, default_value = "auto")]
    burn_in: BurnIn,
    /// The sampling-threshold target (eq. 10).
    #[arg(long, default_value_t = 0.1)]
    alpha: f64,
    /// Keep every K-th step (auto: at most 4,000 draws per chain; about eight per
    /// autocorrelation time when adapted). The means weigh every step after burn-in.
    #[arg(long, default_value = "auto")]
    thin: Thin,
    /// Independent chains, run in parallel.
    #[arg(long, default_value_t = 4)]
    chains: usize,
    /// Run only chains A to B-1 (numbered from 0) of the --chains of this seed, each
    /// identical to the same chain of the whole run; `sgld summarize` merges the parts.
    #[arg(long, value_name = "A..B")]
    chain_ids: Option<ChainIds>,
    /// Seed; each chain gets its own stream from it.
    #[arg(long, default_value_t = 2011)]
    seed: u64,
    /// auto (uniform for a constant step, eq. 11 for a changing one), step or uniform.
    #[arg(long, value_enum, default_value_t = Weighting::Auto)]
    weighting: Weighting,
    /// Sample until every parameter has bulk and tail ESS >= N and R̂ <= 1.01 (adapted
    /// runs without --steps).
    #[arg(long, default_value_t = 400.0)]
    target_ess: f64,
    /// The most steps per chain, warm-up included.
    #[arg(long, default_value_t = 2_000_000)]
    max_steps: u64,
    /// The chains' start: V1,V2,... (one value per parameter, every chain) or a CSV whose
    /// header names the parameters, one row per chain (default: the mode plus a draw
    /// from the Laplace approximation widened twice, per chain).
    #[arg(long)]
    init: Option<InitSpec>,
    /// Exit non-zero when any warning fires.
    #[arg(long)]
    strict: bool,
    /// No progress: without it, bars on a terminal and, when stderr is not one, a line
    /// once the run has lasted half a second, at each stage and every 10 s (a minute
    /// after the first minute).
    #[arg(long)]
    no_progress: bool,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Replace the previous run in --out (only the files sgld writes are removed); without
    /// it, an --out that holds a run is refused.
    #[arg(long)]
    overwrite: bool,
    /// Clip the gradient estimate to this Euclidean norm (off by default).
    #[arg(long)]
    clip: Option<f32>,
    /// Control-variate gradients (SGLD-CV) around the mode found by L-BFGS.
    #[arg(long)]
    cv: bool,
    /// Temperature τ: injected noise N(0, ετ), target p(θ|X)^(1/τ); 0 is the optimiser.
    #[arg(long, default_value_t = 1.0)]
    temperature: f32,
    /// SGHMC friction per step, in [0, 1].
    #[arg(long, default_value_t = 0.1)]
    friction: f32,
    /// SGHD leapfrog steps per iteration.
    #[arg(long, default_value_t = 5)]
    leapfrog: u32,
    /// SGNHT diffusion per step.
    #[arg(long, default_value_t = 0.05)]
    diffusion: f32,
    /// pSGLD decay of the squared-gradient average, in (0, 1).
    #[arg(long, default_value_t = 0.99)]
    decay: f32,
    /// pSGLD diagonal bias λ (on the scale of the per-datum mean gradient).
    #[arg(long, default_value_t = 1e-5)]
    lambda: f32,
    /// Hidden ReLU units of --model mlp [default: 50].
    #[arg(long)]
    hidden: Option<usize>,
    /// The output of --model mlp: gaussian (regression, learned noise precision; the
    /// default) or bernoulli (binary labels ±1 or 0/1).
    #[arg(long, value_enum)]
    output: Option<NetOutput>,
}

#[derive(Debug, Args)]
struct BenchArgs {
    /// The workload.
    #[arg(long, value_enum, default_value_t = WorkloadKind::All)]
    workload: WorkloadKind,
    /// Seconds of timed repeats per workload.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Print the report as JSON (the peers in benches/peers print the same shape).
    #[arg(long)]
    json: bool,
    /// Also write the synthetic workloads' data (gmm.csv, ica.csv) here, for the peers.
    #[arg(long)]
    data_out: Option<PathBuf>,
    /// The data directory holding a9a/ (default: $SGLD_DATA_DIR).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ReproduceArgs {
    /// bank, boston, uci, gmm, ica, linreg, logreg, meg or all.
    experiment: String,
    /// A reduced run of each experiment (seconds, for CI).
    #[arg(long)]
    quick: bool,
    /// Output root: results go to DIR/<experiment>/ (default: results/).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The data directory (default: $SGLD_DATA_DIR).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Seed.
    #[arg(long, default_value_t = 2011)]
    seed: u64,
}

#[derive(Debug, Subcommand)]
enum DataCommand {
    /// Which known data sets are present (checksums checked) and where the others are published.
    List,
    /// Download a known data set from its public source, verifying every checksum.
    Fetch {
        /// The data set's name (see `sgld data list`).
        name: String,
    },
    /// Convert a data file to a float32 Parquet table (OUTPUT.parquet) or NumPy matrix
    /// (OUTPUT.npy), the response its last column: `sgld sample` reads either without
    /// parsing text.
    Convert {
        /// The data file.
        input: PathBuf,
        /// The .parquet or .npy file to write.
        output: PathBuf,
        /// The input's format (default: by extension).
        #[arg(long, value_enum)]
        format: Option<Format>,
        /// The response column (default: the last): a CSV or Parquet column's name, a
        /// .npy column's 0-based index.
        #[arg(long)]
        target: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn config(a: SampleArgs, sampler: SamplerKind) -> Result<SampleConfig, String> {
    if a.model != ModelKind::Mlp && (a.hidden.is_some() || a.output.is_some()) {
        return Err(format!(
            "--hidden and --output shape a network: they need --model mlp, not {}",
            a.model.name()
        ));
    }
    Ok(SampleConfig {
        model: a.model,
        train: a.train,
        test: a.test,
        format: a.format,
        target: a.target,
        labels: a.labels,
        test_labels: a.test_labels,
        prior: a.prior,
        no_bias: a.no_bias,
        batch: a.batch.0,
        steps: a.steps,
        step_size: a.step_size,
        burn_in: a.burn_in,
        alpha: a.alpha,
        thin: a.thin,
        chains: a.chains,
        chain_ids: a.chain_ids.map(|c| c.0),
        seed: a.seed,
        weighting: a.weighting,
        target_ess: a.target_ess,
        max_steps: a.max_steps,
        init: a.init,
        strict: a.strict,
        command_line: std::env::args().collect(),
        out: a.out,
        clip: a.clip,
        sampler,
        cv: a.cv,
        temperature: a.temperature,
        settings: SamplerSettings {
            friction: a.friction,
            leapfrog: a.leapfrog,
            diffusion: a.diffusion,
            decay: a.decay,
            lambda: a.lambda,
        },
        hidden: a.hidden.unwrap_or(50),
        output: a.output.unwrap_or(NetOutput::Gaussian),
        progress: !a.no_progress,
    })
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Sample(SampleCmd { args, sampler }) => {
            let sampler = sampler.unwrap_or(SamplerKind::default_for(args.model));
            let overwrite = args.overwrite;
            let cfg = config(args, sampler)?;
            // The run replaces a previous run's files; the command asks first.
            let found = sample::files::previous_run(&cfg.out);
            sample::files::refuse_previous(&cfg.out, &found, overwrite)?;
            // A signal stops the chains at their next block; the run then writes what
            // it drew and exits non-zero (a second signal exits at once).
            sgld_harness::interrupt::install()?;
            let (summary, failure) = sample::run(&cfg)?;
            if let Some(f) = failure {
                eprintln!(
                    "error: {f}; the draws before it are in {}",
                    cfg.out.display()
                );
                return Ok(ExitCode::FAILURE);
            }
            if cfg.strict && !summary.warnings.is_empty() {
                eprintln!(
                    "error: --strict: {} warning(s); see above or summary.json",
                    summary.warnings.len()
                );
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Compare(CompareArgs {
            args,
            samplers,
            mala_steps,
        }) => {
            let overwrite = args.overwrite;
            let cfg = CompareConfig {
                base: config(args, SamplerKind::Sgld)?,
                samplers: samplers.unwrap_or_else(|| SamplerKind::ALL.to_vec()),
                mala_steps,
            };
            compare::check(&cfg)?;
            compare::claim(&cfg.base.out, overwrite)?;
            let (_, rows) = compare::run(&cfg)?;
            let failed: Vec<&str> = rows
                .iter()
                .filter(|r| r.failure.is_some())
                .map(|r| r.sampler.as_str())
                .collect();
            if !failed.is_empty() {
                return Err(format!(
                    "compare: {} failed (the table and compare.md say why)",
                    failed.join(", ")
                ));
            }
            let warned = rows.iter().filter(|r| !r.warnings.is_empty()).count();
            if cfg.base.strict && warned > 0 {
                return Err(format!(
                    "compare: {warned} sampler(s) warned (--strict; the warnings are listed under the table)"
                ));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Summarize(a) => {
            sgld_harness::summarize::run(&sgld_harness::summarize::SummarizeConfig {
                dirs: a.dirs,
                out: a.out,
                target_ess: a.target_ess,
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench(a) => {
            if let Some(dir) = &a.data_out {
                bench::write_data(dir)?;
            }
            let dir = data::data_dir(a.data_dir.as_deref());
            let report = bench::run(a.workload, a.seconds, dir.as_deref())?;
            if a.json {
                let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
                sgld_harness::out!("{text}");
            } else {
                sgld_harness::out!("{}", bench::table(&report).trim_end_matches('\n'));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Reproduce(a) => {
            let dir = data::data_dir(a.data_dir.as_deref());
            let out = a.out.unwrap_or_else(|| PathBuf::from("results"));
            experiments::reproduce(&a.experiment, &out, dir.as_deref(), a.quick, a.seed)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Data { command, data_dir } => {
            let dir = data::data_dir(data_dir.as_deref());
            match command {
                DataCommand::List => {
                    match &dir {
                        Some(d) => sgld_harness::out!("data directory: {}", d.display()),
                        None => sgld_harness::out!(
                            "no data directory (set --data-dir or SGLD_DATA_DIR)"
                        ),
                    }
                    for k in registry::KNOWN {
                        let status = dir.as_deref().map(|d| registry::status(k, d));
                        match status {
                            Some(registry::Status::Present) => {
                                sgld_harness::out!("  present  {:<32} {}", k.name, k.what)
                            }
                            Some(registry::Status::Corrupt { file }) => {
                                sgld_harness::out!(
                                    "  CORRUPT  {:<32} {file}: checksum mismatch",
                                    k.name
                                )
                            }
                            Some(registry::Status::Missing { absent, total }) => {
                                sgld_harness::out!(
                                    "  missing  {:<32} {absent} of {total} files absent; published at: {}",
                                    k.name,
                                    k.published
                                )
                            }
                            None => {
                                sgld_harness::out!(
                                    "  ?        {:<32} published at: {}",
                                    k.name,
                                    k.published
                                )
                            }
                        }
                    }
                    Ok(ExitCode::SUCCESS)
                }
                DataCommand::Convert {
                    input,
                    output,
                    format,
                    target,
                } => {
                    let out_format = Format::from_path(&output);
                    if !matches!(out_format, Format::Npy | Format::Parquet) {
                        return Err(format!(
                            "{}: the output is a .parquet or .npy file",
                            output.display()
                        ));
                    }
                    let in_format = format.unwrap_or_else(|| Format::from_path(&input));
                    let d = data::load(&input, Some(in_format), target.as_deref())
                        .map_err(|e| e.to_string())?;
                    let (rows, cols) = if out_format == Format::Npy {
                        data::npy::write_dataset(&output, &d)?
                    } else {
                        // A named response keeps its name; LIBSVM's and .npy's is `y`.
                        let response = data::target_name(&input, in_format, target.as_deref())
                            .map_err(|e| e.to_string())?
                            .unwrap_or_else(|| "y".into());
                        data::parquet_table::write_dataset(&output, &d, &response)?
                    };
                    sgld_harness::out!(
                        "wrote {}: {rows} x {cols} float32, columns {} and the response last",
                        output.display(),
                        match d.names.len() {
                            0..=6 => d.names.join(", "),
                            k => format!(
                                "{}, …, {} ({k} features)",
                                d.names[..3].join(", "),
                                d.names[k - 1]
                            ),
                        }
                    );
                    Ok(ExitCode::SUCCESS)
                }
                DataCommand::Fetch { name } => {
                    let k = registry::Known::find(&name).ok_or_else(|| {
                        let names: Vec<&str> = registry::KNOWN.iter().map(|k| k.name).collect();
                        format!("unknown data set {name:?}; known: {}", names.join(", "))
                    })?;
                    let d =
                        dir.ok_or("fetch needs a data directory: --data-dir or SGLD_DATA_DIR")?;
                    let mirror = std::env::var("SGLD_DATA_MIRROR")
                        .ok()
                        .filter(|m| !m.is_empty());
                    let written = data::fetch::fetch(k, &d, mirror.as_deref())?;
                    if written.is_empty() {
                        sgld_harness::out!(
                            "{name}: every file already present with the right checksum"
                        );
                    }
                    for w in written {
                        sgld_harness::out!("fetched {w} (sha256 verified)");
                    }
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
    }
}
