//! `sgld sample`: any model on any data set — parallel chains, burn-in by the sampling
//! threshold, draws, a summary with diagnostics, and test-set metrics.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use rand_core::SeedableRng;
use rayon::prelude::*;
use serde::Serialize;
use sgld::estimate::{WeightedMoments, sampling_threshold, scores_into, threshold_scratch_len};
use sgld::gradient::{ControlVariate, GradientEstimator, MiniBatch, sample_batch};
use sgld::kernels::SparseIndex;
use sgld::models::{
    Gaussian, Laplace, LinearRegression, LogisticDense, LogisticSparse, Model, Prior, SparseRows,
    TiedMixture,
};
use sgld::noise::DefaultRng;
use sgld::sampler::{Mala, Metric, PrecondSgld, Psgld, Sampler, Sghd, Sghmc, Sgnht};
use sgld::schedule::{Polynomial, Schedule};
use sgld::{ChainState, Sgld};

use crate::data::{self, Dataset, Features, Format};
use crate::diagnostics;
use crate::spec::{BurnIn, PriorSpec, StepSpec};

/// The model to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Logistic regression `p(y|x,β) = σ(y βᵀx)` (§5.2).
    Logistic,
    /// Bayesian linear regression with the Normal–inverse-gamma prior, in `(β, log σ²)`.
    Linreg,
    /// The tied-means mixture of §5.1 on one-column data.
    Gmm,
}

/// The sampler (`sgld sample --sampler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SamplerKind {
    /// SGLD, eq. 4.
    Sgld,
    /// SGLD preconditioned by the covariance of a pilot SGLD run (eq. 9).
    Precond,
    /// pSGLD: RMSprop preconditioner (Li et al. 2016).
    Psgld,
    /// SGHMC with friction (Chen et al. 2014).
    Sghmc,
    /// SGHD: leapfrog with the pilot covariance as mass (Lasri & Chaoui).
    Sghd,
    /// SGNHT: thermostat (Ding et al. 2014).
    Sgnht,
    /// MALA on the full data (exact, slow: the reference), with metric the inverse of
    /// the empirical Fisher plus the identity at an SGD estimate of the mode, where it
    /// starts (default step `1.5·d^{-1/3}`).
    Mala,
}

impl SamplerKind {
    /// Every sampler, in the order of the docs.
    pub const ALL: [SamplerKind; 7] = [
        SamplerKind::Sgld,
        SamplerKind::Precond,
        SamplerKind::Psgld,
        SamplerKind::Sghmc,
        SamplerKind::Sghd,
        SamplerKind::Sgnht,
        SamplerKind::Mala,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            SamplerKind::Sgld => "sgld",
            SamplerKind::Precond => "precond",
            SamplerKind::Psgld => "psgld",
            SamplerKind::Sghmc => "sghmc",
            SamplerKind::Sghd => "sghd",
            SamplerKind::Sgnht => "sgnht",
            SamplerKind::Mala => "mala",
        }
    }
}

/// The samplers' own settings (`sgld sample --friction` etc.).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SamplerSettings {
    /// SGHMC friction per step.
    pub friction: f32,
    /// SGHD leapfrog steps.
    pub leapfrog: u32,
    /// SGNHT diffusion per step.
    pub diffusion: f32,
    /// pSGLD decay α.
    pub decay: f32,
    /// pSGLD diagonal bias λ.
    pub lambda: f32,
}

impl Default for SamplerSettings {
    fn default() -> Self {
        Self {
            friction: 0.1,
            leapfrog: 5,
            diffusion: 0.05,
            decay: 0.99,
            lambda: 1e-5,
        }
    }
}

/// Whether `--cv` applies to `sampler`: MALA uses the full data whatever the estimator,
/// so control variates (and an SGD run at its step) never apply to it.
pub fn cv_applies(sampler: SamplerKind, cv: bool) -> bool {
    cv && sampler != SamplerKind::Mala
}

/// How the summary weights the draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Weighting {
    /// By step size, eq. 11.
    Step,
    /// Equally.
    Uniform,
}

/// Everything `sgld sample` needs.
#[derive(Debug, Clone)]
pub struct SampleConfig {
    /// The model.
    pub model: ModelKind,
    /// Training data.
    pub train: PathBuf,
    /// Test data.
    pub test: Option<PathBuf>,
    /// File format (default by extension).
    pub format: Option<Format>,
    /// CSV response column.
    pub target: Option<String>,
    /// Prior (default per model).
    pub prior: Option<PriorSpec>,
    /// No bias feature (logistic).
    pub no_bias: bool,
    /// Mini-batch size.
    pub batch: usize,
    /// Steps per chain.
    pub steps: u64,
    /// Step sizes (default `range:1/N,0.01/N,0.55`).
    pub step_size: Option<StepSpec>,
    /// Burn-in.
    pub burn_in: BurnIn,
    /// Sampling-threshold target for `--burn-in auto`.
    pub alpha: f64,
    /// Keep every `thin`-th step.
    pub thin: u64,
    /// Number of chains.
    pub chains: usize,
    /// Seed.
    pub seed: u64,
    /// Weighting of the summary.
    pub weighting: Weighting,
    /// Output directory.
    pub out: PathBuf,
    /// Gradient clipping by norm.
    pub clip: Option<f32>,
    /// The sampler.
    pub sampler: SamplerKind,
    /// Control-variate gradients around an SGD-found centre (SGLD-CV).
    pub cv: bool,
    /// Temperature τ (noise `N(0, ετ)`).
    pub temperature: f32,
    /// The samplers' own settings.
    pub settings: SamplerSettings,
    /// Show progress bars (when stderr is a terminal).
    pub progress: bool,
}

/// One row of `summary.json`'s `params`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ParamSummary {
    /// Parameter name.
    pub name: String,
    /// Posterior mean (weighted as chosen).
    pub mean: f64,
    /// Posterior standard deviation (weighted as chosen).
    pub sd: f64,
    /// 5% quantile.
    pub q05: f64,
    /// Median.
    pub q50: f64,
    /// 95% quantile.
    pub q95: f64,
    /// Bulk ESS (rank-normalised split chains).
    pub ess_bulk: f64,
    /// Tail ESS.
    pub ess_tail: f64,
    /// Rank-normalised split R̂.
    pub rhat: f64,
}

/// Test-set metrics.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TestSummary {
    /// Accuracy of the posterior predictive (null for regression and the mixture).
    pub accuracy: Option<f64>,
    /// Mean log posterior-predictive density per test datum.
    pub log_lik_per_datum: f64,
    /// Root mean squared error of the posterior-predictive mean (linreg only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rmse: Option<f64>,
}

/// `summary.json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// The model.
    pub model: ModelKind,
    /// The sampler (`sgld`, `precond`, …).
    pub sampler: String,
    /// Whether control-variate gradients were used.
    pub cv: bool,
    /// The temperature τ.
    pub temperature: f32,
    /// Per-example gradient evaluations per step and chain (batch × gradients per step;
    /// the data size for MALA).
    pub grad_evals_per_step: f64,
    /// Steps of the pilot run (SGD for the control-variate centre, SGLD for the metric
    /// of precond/sghd), not counted in `seconds`.
    pub pilot_steps: u64,
    /// MALA's acceptance rate over all steps (absent for the other samplers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<f64>,
    /// Training rows.
    pub n_train: usize,
    /// Number of parameters.
    pub dim: usize,
    /// Steps per chain.
    pub steps: u64,
    /// Chains.
    pub chains: usize,
    /// Burn-in steps discarded (the same for every chain).
    pub burn_in: u64,
    /// Weighting of the summary.
    pub weighting: Weighting,
    /// Wall-clock seconds of sampling.
    pub seconds: f64,
    /// SGLD steps per second, all chains together.
    pub steps_per_second: f64,
    /// Per-parameter summaries.
    pub params: Vec<ParamSummary>,
    /// Test-set metrics (only with `--test`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<TestSummary>,
}

/// What one chain produced.
#[derive(Debug, Clone, Default)]
struct ChainOut {
    /// Kept draws, `dim` floats each, with their step index (1-based: the state after that
    /// many steps) and step size.
    draws: Vec<f32>,
    steps: Vec<u64>,
    eps: Vec<f32>,
    /// Where this chain's threshold fell below α (auto burn-in), if it did.
    crossed: Option<u64>,
    /// Smallest α seen and the λ_max there.
    min_alpha: f64,
    lambda_at_min: f64,
    /// A step that went non-finite: (step, message).
    failure: Option<(u64, String)>,
    /// Steps after which θ had changed (counted for MALA only: its acceptances).
    moves: u64,
}

/// The model built from data (owning the data it borrows from).
pub struct Problem {
    /// Training data as loaded (bias appended for logistic).
    pub train: Dataset,
    /// Test data aligned with the training features.
    pub test: Option<Dataset>,
    /// Parameter names.
    pub names: Vec<String>,
    /// The prior.
    pub prior: Option<PriorSpec>,
    /// Responses mapped to what the model uses (±1 for logistic).
    pub y: Vec<f32>,
    /// Test responses, mapped likewise.
    pub y_test: Vec<f32>,
    kind: ModelKind,
}

fn labels_pm1(path: &Path, y: &[f32]) -> Result<Vec<f32>, String> {
    y.iter()
        .enumerate()
        .map(|(i, &v)| match v {
            1.0 => Ok(1.0),
            v if v == -1.0 || v == 0.0 => Ok(-1.0),
            v => Err(format!(
                "{}: row {}: label {v} is not ±1 or 0/1",
                path.display(),
                i + 1
            )),
        })
        .collect()
}

impl Problem {
    /// Loads and checks the data for `cfg`.
    pub fn load(cfg: &SampleConfig) -> Result<Problem, String> {
        let fmt = cfg.format.unwrap_or_else(|| Format::from_path(&cfg.train));
        let load = |p: &Path| -> Result<Dataset, String> {
            match cfg.model {
                ModelKind::Gmm => load_one_column(p, fmt, cfg.target.as_deref()),
                _ => data::load(p, Some(fmt), cfg.target.as_deref()).map_err(|e| e.to_string()),
            }
        };
        let mut train = load(&cfg.train)?;
        let mut test = cfg.test.as_deref().map(load).transpose()?;
        if let Some(t) = test.take() {
            let t = if fmt == Format::Libsvm {
                t.with_dim(train.dim())
            } else {
                t
            };
            if t.dim() != train.dim() {
                return Err(format!(
                    "test data has {} feature columns, training data {}",
                    t.dim(),
                    train.dim()
                ));
            }
            test = Some(t);
        }
        let prior = match (cfg.model, cfg.prior) {
            (ModelKind::Logistic, None) => Some(PriorSpec::Laplace(1.0)),
            (ModelKind::Logistic, Some(p @ (PriorSpec::Laplace(_) | PriorSpec::Gaussian(_)))) => {
                Some(p)
            }
            (ModelKind::Linreg, None) => Some(PriorSpec::Nig {
                v: 100.0,
                phi: 1.0,
                psi: 1.0,
            }),
            (ModelKind::Linreg, Some(p @ PriorSpec::Nig { .. })) => Some(p),
            (ModelKind::Gmm, None) => None,
            (m, Some(p)) => {
                return Err(format!(
                    "prior {p} does not apply to --model {m:?} (logistic: laplace or gaussian; linreg: nig; gmm: the paper's fixed prior)"
                )
                .to_lowercase());
            }
        };
        let (y, y_test, names);
        match cfg.model {
            ModelKind::Logistic => {
                y = labels_pm1(&cfg.train, &train.y)?;
                y_test = match (&test, &cfg.test) {
                    (Some(t), Some(p)) => labels_pm1(p, &t.y)?,
                    _ => vec![],
                };
                let mut n: Vec<String> = train.names.iter().map(|n| format!("beta[{n}]")).collect();
                if !cfg.no_bias {
                    train = train.with_bias();
                    test = test.map(Dataset::with_bias);
                    n.push("bias".into());
                }
                names = n;
            }
            ModelKind::Linreg => {
                y = train.y.clone();
                y_test = test.as_ref().map(|t| t.y.clone()).unwrap_or_default();
                names = train
                    .names
                    .iter()
                    .map(|n| format!("beta[{n}]"))
                    .chain(["log_sigma2".to_string()])
                    .collect();
            }
            ModelKind::Gmm => {
                y = vec![];
                y_test = vec![];
                names = vec!["theta1".into(), "theta2".into()];
            }
        }
        Ok(Problem {
            train,
            test,
            names,
            prior,
            y,
            y_test,
            kind: cfg.model,
        })
    }

    /// Number of training rows.
    pub fn n_train(&self) -> usize {
        self.train.len()
    }

    /// Number of parameters.
    pub fn dim(&self) -> usize {
        self.names.len()
    }

    /// The model kind.
    pub fn kind(&self) -> ModelKind {
        self.kind
    }
}

fn load_one_column(path: &Path, fmt: Format, target: Option<&str>) -> Result<Dataset, String> {
    if fmt != Format::Csv {
        return Err(format!(
            "{}: --model gmm reads a one-column CSV",
            path.display()
        ));
    }
    let (header, values) = data::csv_table::read_columns(path).map_err(|e| e.to_string())?;
    let col = match target {
        Some(name) => header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| format!("{}: no column named {name:?}", path.display()))?,
        None if header.len() == 1 => 0,
        None => {
            return Err(format!(
                "{}: {} columns; name the data column with --target",
                path.display(),
                header.len()
            ));
        }
    };
    let y: Vec<f32> = values.chunks_exact(header.len()).map(|r| r[col]).collect();
    Ok(Dataset {
        features: Features::Dense { x: vec![], d: 0 },
        y,
        names: vec![],
    })
}

/// Runs `f` with the model of `problem` (the models borrow the problem's data).
pub(crate) fn with_model<R>(
    problem: &Problem,
    f: impl FnOnce(&(dyn ModelSync + '_)) -> R,
) -> Result<R, String> {
    let err = |e: sgld::Error| format!("invalid data or prior: {e}");
    match problem.kind {
        ModelKind::Logistic => {
            let prior = problem.prior.unwrap_or(PriorSpec::Laplace(1.0));
            match prior {
                PriorSpec::Laplace(b) => logistic(problem, Laplace::new(b).map_err(err)?, f),
                PriorSpec::Gaussian(v) => logistic(problem, Gaussian::new(v).map_err(err)?, f),
                PriorSpec::Nig { .. } => Err("the nig prior is for linreg".into()),
            }
        }
        ModelKind::Linreg => {
            let Some(PriorSpec::Nig { v, phi, psi }) = problem.prior else {
                return Err("linreg needs a nig prior".into());
            };
            let x = match &problem.train.features {
                Features::Dense { x, .. } => std::borrow::Cow::Borrowed(x),
                Features::SparseBinary { .. } => std::borrow::Cow::Owned(problem.train.dense().ok_or_else(|| {
                    format!(
                        "linreg needs dense features: {} rows x {} features is more than {} values",
                        problem.train.len(),
                        problem.train.dim(),
                        data::MAX_DENSE_VALUES
                    )
                })?),
            };
            let m = LinearRegression::new(&x, &problem.y, problem.train.dim(), v, phi, psi)
                .map_err(err)?;
            Ok(f(&m))
        }
        ModelKind::Gmm => {
            let m = TiedMixture::paper(&problem.train.y).map_err(err)?;
            Ok(f(&m))
        }
    }
}

fn logistic<P: Prior + Copy + Send + Sync, R>(
    problem: &Problem,
    prior: P,
    f: impl FnOnce(&(dyn ModelSync + '_)) -> R,
) -> Result<R, String> {
    let err = |e: sgld::Error| format!("invalid data: {e}");
    match &problem.train.features {
        Features::Dense { x, d } => Ok(f(
            &LogisticDense::new(x, &problem.y, *d, prior).map_err(err)?
        )),
        Features::SparseBinary {
            offsets,
            indices,
            d,
        } => {
            // The narrowest index type that holds the features: the rows are drawn at
            // random, and narrower rows keep more of the data set in cache.
            let y = &problem.y;
            if let Some(narrow) = data::narrow_indices::<u8>(indices) {
                Ok(f(&sparse_logistic(offsets, &narrow, *d, y, prior)?))
            } else if let Some(narrow) = data::narrow_indices::<u16>(indices) {
                Ok(f(&sparse_logistic(offsets, &narrow, *d, y, prior)?))
            } else {
                Ok(f(&sparse_logistic(offsets, indices, *d, y, prior)?))
            }
        }
    }
}

fn sparse_logistic<'a, P: Prior, I: SparseIndex>(
    offsets: &'a [usize],
    indices: &'a [I],
    d: usize,
    y: &'a [f32],
    prior: P,
) -> Result<LogisticSparse<'a, P, I>, String> {
    let err = |e: sgld::Error| format!("invalid data: {e}");
    let rows = SparseRows::narrow(offsets, indices, d).map_err(err)?;
    LogisticSparse::new(rows, y, prior).map_err(err)
}

/// A model that can be shared across the chains' threads.
pub trait ModelSync: Model + Sync {}
impl<M: Model + Sync> ModelSync for M {}

/// Mixes a seed and a chain number into an independent generator seed (SplitMix64).
pub fn chain_seed(seed: u64, chain: u64) -> u64 {
    let mut z = seed
        ^ chain
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x632B_E59B_D9B4_E019);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct ChainPlan<'a, S> {
    schedule: &'a S,
    steps: u64,
    batch: usize,
    burn_in: BurnIn,
    alpha: f64,
    thin: u64,
    /// Count the steps that moved θ (MALA's acceptance rate).
    count_moves: bool,
}

/// The gradient estimator the chains share.
type SharedEstimator<'a> = dyn GradientEstimator + Sync + 'a;

#[allow(clippy::too_many_arguments)]
fn run_chain<S: Schedule, A: Sampler>(
    model: &dyn ModelSync,
    est: &SharedEstimator<'_>,
    sampler: &A,
    theta0: &[f32],
    plan: &ChainPlan<'_, S>,
    seed: u64,
    bar: &ProgressBar,
) -> ChainOut {
    let d = model.dim();
    let n_data = model.len();
    let mut theta = theta0.to_vec();
    let mut scratch = vec![0.0f32; sampler.scratch_floats(d)];
    let mut out = ChainOut {
        min_alpha: f64::INFINITY,
        lambda_at_min: f64::NAN,
        ..ChainOut::default()
    };
    let mut state = match sampler.start(&mut theta, &mut scratch) {
        Ok(s) => s,
        Err(e) => {
            out.failure = Some((0, format!("cannot start the chain: {e}")));
            return out;
        }
    };
    let mut rng = DefaultRng::seed_from_u64(seed);
    let mut batch = vec![0usize; plan.batch];
    // Threshold checks (auto burn-in) on an auxiliary batch of at least 10 scores.
    let m = plan.batch.max(10);
    let mut aux = vec![0usize; m];
    let mut scores = vec![0.0f32; m * d];
    let mut tscratch = vec![0.0f64; threshold_scratch_len(m, d)];
    let check_every = (plan.steps / 400).max(1);
    let half = plan.steps / 2;
    let mut storing = matches!(plan.burn_in, BurnIn::Steps(b) if b == 0);
    let tick = (plan.steps / 100).max(1);
    let mut prev = if plan.count_moves {
        theta0.to_vec()
    } else {
        vec![]
    };
    for t in 0..plan.steps {
        let eps = plan.schedule.step_size(t);
        if sample_batch(&mut rng, n_data, &mut batch).is_err() {
            out.failure = Some((t + 1, "empty data set".into()));
            break;
        }
        match sampler.advance(&mut state, est, &batch, eps, &mut rng) {
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
                out.failure = Some((t + 1, why));
                break;
            }
            Ok(_) => {}
            Err(e) => {
                out.failure = Some((t + 1, e.to_string()));
                break;
            }
        }
        if plan.count_moves && prev != state.theta() {
            out.moves += 1;
            prev.copy_from_slice(state.theta());
        }
        let step = t + 1;
        match plan.burn_in {
            BurnIn::Steps(b) => storing = step > b,
            BurnIn::Auto => {
                if out.crossed.is_none() && (t % check_every == 0 || step == plan.steps) {
                    let ok = sample_batch(&mut rng, n_data, &mut aux).is_ok()
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
                            / (4.0 * plan.batch as f64)
                            * th.lambda_max;
                        if alpha < out.min_alpha {
                            out.min_alpha = alpha;
                            out.lambda_at_min = th.lambda_max;
                        }
                        if alpha < plan.alpha {
                            out.crossed = Some(step);
                        }
                    }
                }
                storing = out.crossed.is_some() || step > half;
            }
        }
        if storing && step % plan.thin == 0 {
            out.draws.extend_from_slice(state.theta());
            out.steps.push(step);
            out.eps.push(eps);
        }
        if step % tick == 0 {
            bar.inc(tick);
        }
    }
    bar.finish();
    out
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

fn run_impl(cfg: &SampleConfig, print: bool) -> Result<(Summary, Option<String>), String> {
    validate(cfg)?;
    let problem = Problem::load(cfg)?;
    let n = problem.n_train();
    if cfg.batch > n {
        return Err(format!(
            "--batch {} exceeds the {n} training rows",
            cfg.batch
        ));
    }
    let default = StepSpec::Range {
        start: 1.0 / n as f64,
        end: 0.01 / n as f64,
        gamma: 0.55,
    };
    let spec = match (cfg.step_size, cfg.sampler) {
        (Some(s), _) => s,
        // pSGLD's preconditioner G ≈ 1/|ĝ| shrinks SGLD's default step by orders of
        // magnitude: scale it so that the two move alike.
        (None, SamplerKind::Psgld) => {
            let k = psgld_scale(cfg, &default.schedule(1000).map_err(|e| e.to_string())?)?;
            StepSpec::Range {
                start: k / n as f64,
                end: 0.01 * k / n as f64,
                gamma: 0.55,
            }
        }
        (None, SamplerKind::Mala) => StepSpec::Const(1.5 / (problem.dim() as f64).cbrt()),
        (None, _) => default,
    };
    let schedule = spec
        .schedule(cfg.steps)
        .map_err(|e| format!("--step-size {spec}: {e}"))?;
    let plan = ChainPlan {
        schedule: &schedule,
        steps: cfg.steps,
        batch: cfg.batch,
        burn_in: cfg.burn_in,
        alpha: cfg.alpha,
        thin: cfg.thin,
        count_moves: cfg.sampler == SamplerKind::Mala,
    };
    let bars = MultiProgress::new();
    if !cfg.progress {
        bars.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let style = ProgressStyle::with_template(
        "chain {prefix} [{bar:40}] {pos}/{len} steps ({per_sec}, {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    let run = with_model(&problem, |model| run_all(model, cfg, &plan, &bars, &style))??;
    let (outs, seconds) = (run.outs, run.seconds);

    // One burn-in for all chains.
    let (burn_in, burn_note) = match cfg.burn_in {
        BurnIn::Steps(b) => (b, None),
        BurnIn::Auto => {
            if outs.iter().all(|o| o.crossed.is_some()) {
                let b = outs.iter().filter_map(|o| o.crossed).max().unwrap_or(0);
                (
                    b,
                    Some(format!(
                        "burn-in: the sampling threshold fell below alpha = {} at step {b}",
                        cfg.alpha
                    )),
                )
            } else {
                // The chains that never crossed: the smallest α any of them saw.
                let crossed = outs.iter().filter(|o| o.crossed.is_some()).count();
                let best = outs
                    .iter()
                    .filter(|o| o.crossed.is_none())
                    .min_by(|a, b| a.min_alpha.total_cmp(&b.min_alpha))
                    .cloned()
                    .unwrap_or_default();
                let eps_star =
                    4.0 * cfg.batch as f64 * cfg.alpha / ((n as f64).powi(2) * best.lambda_at_min);
                let which = if crossed == 0 {
                    format!(
                        "never fell below alpha = {} (smallest alpha seen",
                        cfg.alpha
                    )
                } else {
                    format!(
                        "fell below alpha = {} in only {crossed} of {} chains (smallest alpha seen in the others",
                        cfg.alpha, cfg.chains
                    )
                };
                (
                    cfg.steps / 2,
                    Some(format!(
                        "burn-in: the sampling threshold {which} {:.3e}): \
                         the stochastic-gradient noise dominates the injected noise, so the spread of the draws overstates \
                         the posterior's. Eq. 10 puts alpha = {} at step size {:.3e}. Falling back to half the run ({} steps) \
                         as burn-in.",
                        best.min_alpha,
                        cfg.alpha,
                        eps_star,
                        cfg.steps / 2
                    )),
                )
            }
        }
    };
    let failure = outs.iter().enumerate().find_map(|(c, o)| {
        o.failure
            .as_ref()
            .map(|(s, why)| format!("chain {c} stopped at step {s}: {why}"))
    });

    std::fs::create_dir_all(&cfg.out)
        .map_err(|e| format!("cannot create {}: {e}", cfg.out.display()))?;
    let d = problem.dim();
    let kept: Vec<Vec<usize>> = outs
        .iter()
        .map(|o| {
            (0..o.steps.len())
                .filter(|&k| o.steps[k] > burn_in)
                .collect()
        })
        .collect();
    write_draws(&cfg.out.join("draws.csv"), &problem.names, &outs, &kept)?;

    // Summaries: pooled weighted moments and quantiles, per-chain diagnostics.
    let weight = |o: &ChainOut, k: usize| -> f64 {
        match cfg.weighting {
            Weighting::Step => o.eps[k] as f64,
            Weighting::Uniform => 1.0,
        }
    };
    let min_len = kept.iter().map(Vec::len).min().unwrap_or(0);
    let params: Vec<ParamSummary> = problem
        .names
        .par_iter()
        .enumerate()
        .map(|(j, name)| {
            let mut store = vec![0.0; WeightedMoments::storage_len(1)];
            let mut mom = WeightedMoments::new(&mut store, 1).expect("one component");
            let mut vals = Vec::new();
            let mut ws = Vec::new();
            for (o, ks) in outs.iter().zip(&kept) {
                for &k in ks {
                    let v = o.draws[k * d + j];
                    let w = weight(o, k);
                    let _ = mom.push(w, &[v]);
                    vals.push(v as f64);
                    ws.push(w);
                }
            }
            let chains_j: Vec<Vec<f64>> = outs
                .iter()
                .zip(&kept)
                .map(|(o, ks)| {
                    ks[ks.len() - min_len..]
                        .iter()
                        .map(|&k| o.draws[k * d + j] as f64)
                        .collect()
                })
                .collect();
            let diag = if min_len >= 4 {
                diagnostics::diagnostics(&chains_j)
            } else {
                diagnostics::Diagnostics {
                    rhat: f64::NAN,
                    ess_bulk: f64::NAN,
                    ess_tail: f64::NAN,
                }
            };
            ParamSummary {
                name: name.clone(),
                mean: mom.mean(0),
                sd: mom.variance(0).sqrt(),
                q05: diagnostics::weighted_quantile(&vals, &ws, 0.05),
                q50: diagnostics::weighted_quantile(&vals, &ws, 0.5),
                q95: diagnostics::weighted_quantile(&vals, &ws, 0.95),
                ess_bulk: diag.ess_bulk,
                ess_tail: diag.ess_tail,
                rhat: diag.rhat,
            }
        })
        .collect();
    let test = problem
        .test
        .as_ref()
        .map(|t| crate::predict::evaluate(&problem, t, &outs_draws(&outs, &kept, d, &weight)))
        .transpose()?;
    let summary = Summary {
        model: cfg.model,
        sampler: cfg.sampler.name().into(),
        cv: cv_applies(cfg.sampler, cfg.cv),
        temperature: cfg.temperature,
        grad_evals_per_step: run.grad_evals_per_step,
        pilot_steps: run.pilot_steps,
        acceptance: (cfg.sampler == SamplerKind::Mala).then(|| {
            outs.iter().map(|o| o.moves).sum::<u64>() as f64
                / (cfg.steps as f64 * cfg.chains as f64)
        }),
        n_train: n,
        dim: d,
        steps: cfg.steps,
        chains: cfg.chains,
        burn_in,
        weighting: cfg.weighting,
        seconds,
        steps_per_second: (cfg.steps as f64 * cfg.chains as f64) / seconds.max(1e-12),
        params,
        test,
    };
    let json = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
    std::fs::write(cfg.out.join("summary.json"), json + "\n")
        .map_err(|e| format!("cannot write summary.json: {e}"))?;
    if print {
        print_table(&summary, burn_note.as_deref(), &cfg.out);
    }
    Ok((summary, failure))
}

/// What the chains of one run produced.
struct RunOut {
    outs: Vec<ChainOut>,
    seconds: f64,
    grad_evals_per_step: f64,
    pilot_steps: u64,
}

/// A metric estimated from a pilot run, owned.
enum MetricStore {
    Cholesky(Vec<f32>),
    Diagonal(Vec<f32>),
}

impl MetricStore {
    fn metric(&self) -> Metric<'_> {
        match self {
            MetricStore::Cholesky(l) => Metric::Cholesky(l),
            MetricStore::Diagonal(m) => Metric::Diagonal(m),
        }
    }
}

/// Dense metrics up to this dimension; diagonal above.
const MAX_DENSE_METRIC: usize = 256;

/// Runs the pilot(s) the sampler needs, then the chains in parallel.
fn run_all<S: Schedule + Sync>(
    model: &dyn ModelSync,
    cfg: &SampleConfig,
    plan: &ChainPlan<'_, S>,
    bars: &MultiProgress,
    style: &ProgressStyle,
) -> Result<RunOut, String> {
    let d = model.dim();
    let pilot_len = (cfg.steps / 2).max(1000);
    let mut pilot_steps = 0;
    // SGLD-CV: the centre by SGD (SGLD at temperature 0) from 0.
    let use_cv = cv_applies(cfg.sampler, cfg.cv);
    let centre = if use_cv {
        pilot_steps += pilot_len;
        sgd_centre(model, plan, pilot_len, cfg.seed)?
    } else {
        vec![0.0f32; d]
    };
    let mut cv_buf = vec![0.0f32; ControlVariate::<()>::buffer_len(d)];
    let mini = MiniBatch::new(model);
    let cv_est;
    let est: &SharedEstimator<'_> = if use_cv {
        cv_est = ControlVariate::new(model, &centre, &mut cv_buf)
            .map_err(|e| format!("control variates: {e}"))?;
        &cv_est
    } else {
        &mini
    };
    let store = if matches!(cfg.sampler, SamplerKind::Precond | SamplerKind::Sghd) {
        pilot_steps += pilot_len;
        Some(pilot_metric(
            model, est, plan, &centre, pilot_len, cfg.seed,
        )?)
    } else {
        None
    };
    let metric = store.as_ref().map(MetricStore::metric);
    // MALA: start at an SGD estimate of the mode, with the diagonal Fisher metric there.
    let (start, mala_metric) = if cfg.sampler == SamplerKind::Mala {
        // SGD at SGLD's default schedule: MALA's own steps are on another scale.
        let n = model.len() as f64;
        let schedule = Polynomial::from_range(1.0 / n, 0.01 / n, 0.55, pilot_len.max(2))
            .map_err(|e| format!("pilot schedule: {e}"))?;
        let sgd_plan = ChainPlan {
            schedule: &schedule,
            steps: pilot_len,
            batch: plan.batch,
            burn_in: BurnIn::Steps(0),
            alpha: plan.alpha,
            thin: 1,
            count_moves: false,
        };
        pilot_steps += pilot_len;
        let c = sgd_centre(model, &sgd_plan, pilot_len, cfg.seed)?;
        let m = fisher_precision(model, &c)?;
        (c, m)
    } else {
        (centre.clone(), MetricStore::Diagonal(vec![]))
    };
    let started = Instant::now();
    let ctx = Chains {
        model,
        est,
        theta0: &start,
        plan,
        cfg,
        bars,
        style,
    };
    let bad = |what: &'static str| move |e: sgld::Error| format!("{what}: {e}");
    macro_rules! with_opts {
        ($s:expr) => {{
            let s = $s
                .with_temperature(cfg.temperature)
                .map_err(bad("--temperature"))?;
            match cfg.clip {
                Some(c) => s.with_clip(c).map_err(bad("--clip"))?,
                None => s,
            }
        }};
    }
    let st = &cfg.settings;
    let (outs, grads) = match cfg.sampler {
        SamplerKind::Sgld => ctx.run(&with_opts!(Sgld::new())),
        SamplerKind::Precond => {
            let m = metric.ok_or("no metric")?;
            ctx.run(&with_opts!(PrecondSgld::new(m, d).map_err(bad("metric"))?))
        }
        SamplerKind::Psgld => ctx.run(&with_opts!(
            Psgld::new(st.decay, st.lambda).map_err(bad("--decay/--lambda"))?
        )),
        SamplerKind::Sghmc => ctx.run(&with_opts!(
            Sghmc::new(st.friction).map_err(bad("--friction"))?
        )),
        SamplerKind::Sghd => {
            let m = metric.ok_or("no metric")?;
            ctx.run(&with_opts!(
                Sghd::new(m, d, st.leapfrog).map_err(bad("--leapfrog"))?
            ))
        }
        SamplerKind::Sgnht => ctx.run(&with_opts!(
            Sgnht::new(st.diffusion).map_err(bad("--diffusion"))?
        )),
        SamplerKind::Mala => {
            let mala = match &mala_metric {
                MetricStore::Cholesky(l) => Mala::new(model).with_precision_factor(l),
                MetricStore::Diagonal(m) => Mala::new(model).with_metric(m),
            }
            .map_err(bad("Fisher metric"))?;
            let (o, _) = ctx.run(&with_opts!(mala));
            (o, model.len() as f64 / cfg.batch as f64)
        }
    };
    Ok(RunOut {
        outs,
        seconds: started.elapsed().as_secs_f64(),
        grad_evals_per_step: grads * cfg.batch as f64,
        pilot_steps,
    })
}

/// What every chain of a run shares.
struct Chains<'a, S> {
    model: &'a dyn ModelSync,
    est: &'a SharedEstimator<'a>,
    theta0: &'a [f32],
    plan: &'a ChainPlan<'a, S>,
    cfg: &'a SampleConfig,
    bars: &'a MultiProgress,
    style: &'a ProgressStyle,
}

impl<S: Schedule + Sync> Chains<'_, S> {
    /// Runs the chains with `sampler`; returns them and the gradient estimates per step.
    fn run<A: Sampler + Sync>(&self, sampler: &A) -> (Vec<ChainOut>, f64) {
        let outs = (0..self.cfg.chains)
            .into_par_iter()
            .map(|c| {
                let bar = self.bars.add(
                    ProgressBar::new(self.cfg.steps)
                        .with_style(self.style.clone())
                        .with_prefix(c.to_string()),
                );
                run_chain(
                    self.model,
                    self.est,
                    sampler,
                    self.theta0,
                    self.plan,
                    chain_seed(self.cfg.seed, c as u64),
                    &bar,
                )
            })
            .collect();
        (outs, sampler.grads_per_step() as f64)
    }
}

/// pSGLD's step-size scale: `1/median(G)` with `G = 1/(λ + rms(ĝ)/N)` per coordinate
/// (as the sampler computes it), from the root-mean-square of 64 mini-batch gradients at an SGD estimate of the mode (1000
/// steps of `schedule`). A pSGLD step of `ε·scale` then moves the median coordinate like
/// an SGLD step of `ε`.
pub fn psgld_scale(cfg: &SampleConfig, schedule: &impl Schedule) -> Result<f64, String> {
    let problem = Problem::load(cfg)?;
    with_model(&problem, |model| -> Result<f64, String> {
        let plan = ChainPlan {
            schedule,
            steps: 1000,
            batch: cfg.batch,
            burn_in: BurnIn::Steps(0),
            alpha: cfg.alpha,
            thin: 1,
            count_moves: false,
        };
        let centre = sgd_centre(model, &plan, 1000, cfg.seed)?;
        let d = model.dim();
        let est = MiniBatch::new(model);
        let mut rng = DefaultRng::seed_from_u64(chain_seed(cfg.seed, u64::MAX - 2));
        let (mut batch, mut g, mut sq) =
            (vec![0usize; cfg.batch], vec![0.0f32; d], vec![0.0f64; d]);
        for _ in 0..64 {
            sample_batch(&mut rng, model.len(), &mut batch).map_err(|e| e.to_string())?;
            est.estimate(&centre, &batch, &mut g);
            for (s, &x) in sq.iter_mut().zip(&g) {
                *s += x as f64 * x as f64 / 64.0;
            }
        }
        // The median coordinate (rare sparse features have rms ≈ 0 and G ≈ 1/λ: a mean
        // of G would be theirs alone).
        let n = model.len() as f64;
        let lambda = cfg.settings.lambda as f64;
        let mut inv_g: Vec<f64> = sq.iter().map(|s| lambda + s.sqrt() / n).collect();
        inv_g.sort_by(f64::total_cmp);
        Ok(inv_g[d / 2])
    })?
}

/// MALA's metric `M = P⁻¹` with `P = F + I`, `F = Σᵢ gᵢgᵢᵀ` the empirical Fisher at `θ̂`
/// (`gᵢ = ∇log p(xᵢ|θ̂)`; the identity stands for a unit prior precision and keeps
/// directions the data never touch proper): the Cholesky factor of `P` up to 256
/// parameters, `1/Pⱼⱼ` on the diagonal above.
fn fisher_precision(model: &dyn ModelSync, centre: &[f32]) -> Result<MetricStore, String> {
    let d = model.dim();
    let dense = d <= MAX_DENSE_METRIC;
    let size = if dense { d * d } else { d };
    let mut p = (0..model.len())
        .into_par_iter()
        .fold(
            || (vec![0.0f64; size], vec![0.0f32; d], Vec::with_capacity(d)),
            |(mut f, mut g, mut nz), i| {
                // The non-zero entries of gᵢ (sparse rows touch few), in a buffer reused
                // across rows.
                g.fill(0.0);
                model.add_log_lik_grad(centre, &[i], &mut g);
                nz.clear();
                nz.extend(
                    g.iter()
                        .enumerate()
                        .filter(|(_, v)| **v != 0.0)
                        .map(|(j, &v)| (j, v as f64)),
                );
                for (n, &(j, a)) in nz.iter().enumerate() {
                    if dense {
                        // nz is in index order: its first n + 1 entries have k ≤ j.
                        for &(k, b) in &nz[..=n] {
                            f[j * d + k] += a * b;
                        }
                    } else {
                        f[j] += a * a;
                    }
                }
                (f, g, nz)
            },
        )
        .map(|(f, _, _)| f)
        .reduce(
            || vec![0.0f64; size],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            },
        );
    if !dense {
        return Ok(MetricStore::Diagonal(
            p.iter().map(|&f| (1.0 / (f + 1.0)) as f32).collect(),
        ));
    }
    for j in 0..d {
        p[j * d + j] += 1.0;
    }
    sgld::linalg::cholesky(&mut p, d).map_err(|e| format!("MALA's Fisher metric: {e}"))?;
    Ok(MetricStore::Cholesky(p.iter().map(|&v| v as f32).collect()))
}

/// SGD (SGLD at temperature 0) from 0 for `steps` steps of the run's schedule.
fn sgd_centre<S: Schedule>(
    model: &dyn ModelSync,
    plan: &ChainPlan<'_, S>,
    steps: u64,
    seed: u64,
) -> Result<Vec<f32>, String> {
    let d = model.dim();
    let sgd = Sgld::new()
        .with_temperature(0.0)
        .map_err(|e| e.to_string())?;
    let mut theta = vec![0.0f32; d];
    let mut scratch = vec![0.0f32; Sgld::scratch_len(d)];
    let mut state = Sgld::init(&mut theta, &mut scratch).map_err(|e| e.to_string())?;
    let mut rng = DefaultRng::seed_from_u64(chain_seed(seed, u64::MAX));
    let mut batch = vec![0usize; plan.batch];
    let est = MiniBatch::new(model);
    for t in 0..steps {
        sample_batch(&mut rng, model.len(), &mut batch).map_err(|e| e.to_string())?;
        let info = sgd
            .step(
                &mut state,
                &est,
                &batch,
                plan.schedule.step_size(t),
                &mut rng,
            )
            .map_err(|e| e.to_string())?;
        if info.non_finite {
            return Err(format!(
                "the SGD run for the control-variate centre went non-finite at step {}; lower the step size",
                t + 1
            ));
        }
    }
    Ok(state.theta().to_vec())
}

/// The metric of precond/sghd: the covariance of the second half of a pilot SGLD run
/// (with the default schedule `range:1/N,0.01/N`, whatever `--step-size` says: that is
/// the step of the preconditioned sampler), scaled to mean variance 1, with a small
/// ridge; dense (Cholesky) up to 256 parameters, diagonal above or if it is singular.
/// With `M = Σ/s`, `s` the mean posterior variance, a step `ε` moves every direction
/// like SGLD's `ε` moves one of variance `s`: stable for `ε ≲ s`.
fn pilot_metric<S>(
    model: &dyn ModelSync,
    est: &SharedEstimator<'_>,
    plan: &ChainPlan<'_, S>,
    theta0: &[f32],
    steps: u64,
    seed: u64,
) -> Result<MetricStore, String> {
    let d = model.dim();
    let n = model.len() as f64;
    let schedule = Polynomial::from_range(1.0 / n, 0.01 / n, 0.55, steps.max(2))
        .map_err(|e| format!("pilot schedule: {e}"))?;
    let pilot = ChainPlan {
        schedule: &schedule,
        steps,
        batch: plan.batch,
        burn_in: BurnIn::Steps(steps / 2),
        alpha: plan.alpha,
        thin: 1,
        count_moves: false,
    };
    let out = run_chain(
        model,
        est,
        &Sgld::new(),
        theta0,
        &pilot,
        chain_seed(seed, u64::MAX - 1),
        &ProgressBar::hidden(),
    );
    if let Some((step, why)) = out.failure {
        return Err(format!("the pilot SGLD run failed at step {step}: {why}"));
    }
    let k = out.draws.len() / d;
    if k < 2 {
        return Err("the pilot SGLD run kept too few draws".into());
    }
    let mut mean = vec![0.0f64; d];
    for row in out.draws.chunks_exact(d) {
        for (m, &x) in mean.iter_mut().zip(row) {
            *m += x as f64 / k as f64;
        }
    }
    let var: Vec<f64> = (0..d)
        .map(|j| {
            out.draws
                .chunks_exact(d)
                .map(|r| (r[j] as f64 - mean[j]).powi(2))
                .sum::<f64>()
                / (k - 1) as f64
        })
        .collect();
    let scale = d as f64 / var.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let ridge = 1e-4;
    let diagonal =
        || MetricStore::Diagonal(var.iter().map(|v| ((v * scale) + ridge) as f32).collect());
    if d > MAX_DENSE_METRIC {
        return Ok(diagonal());
    }
    let mut cov = vec![0.0f64; d * d];
    for row in out.draws.chunks_exact(d) {
        for i in 0..d {
            let di = row[i] as f64 - mean[i];
            for j in 0..=i {
                cov[i * d + j] += di * (row[j] as f64 - mean[j]);
            }
        }
    }
    for i in 0..d {
        for j in 0..=i {
            cov[i * d + j] *= scale / (k - 1) as f64;
        }
        cov[i * d + i] += ridge;
    }
    Ok(match sgld::linalg::cholesky(&mut cov, d) {
        Ok(()) => MetricStore::Cholesky(cov.iter().map(|&v| v as f32).collect()),
        Err(_) => diagonal(),
    })
}

/// Up to 1000 pooled draws (evenly spaced) with their weights, for prediction.
fn outs_draws(
    outs: &[ChainOut],
    kept: &[Vec<usize>],
    d: usize,
    weight: &dyn Fn(&ChainOut, usize) -> f64,
) -> Vec<(Vec<f32>, f64)> {
    let all: Vec<(usize, usize)> = kept
        .iter()
        .enumerate()
        .flat_map(|(c, ks)| ks.iter().map(move |&k| (c, k)))
        .collect();
    let stride = all.len().div_ceil(1000).max(1);
    all.iter()
        .step_by(stride)
        .map(|&(c, k)| {
            (
                outs[c].draws[k * d..(k + 1) * d].to_vec(),
                weight(&outs[c], k),
            )
        })
        .collect()
}

fn validate(cfg: &SampleConfig) -> Result<(), String> {
    if cfg.batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    if cfg.steps == 0 {
        return Err("--steps must be at least 1".into());
    }
    if cfg.thin == 0 {
        return Err("--thin must be at least 1".into());
    }
    if cfg.chains == 0 {
        return Err("--chains must be at least 1".into());
    }
    if !(cfg.alpha.is_finite() && cfg.alpha > 0.0) {
        return Err(format!("--alpha must be finite and > 0, got {}", cfg.alpha));
    }
    if let BurnIn::Steps(b) = cfg.burn_in
        && b >= cfg.steps
    {
        return Err(format!(
            "--burn-in {b} leaves no draws of a {}-step run",
            cfg.steps
        ));
    }
    Ok(())
}

fn write_draws(
    path: &Path,
    names: &[String],
    outs: &[ChainOut],
    kept: &[Vec<usize>],
) -> Result<(), String> {
    let d = names.len();
    let file =
        std::fs::File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let io = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    write!(w, "chain,step,step_size").map_err(io)?;
    for n in names {
        write!(w, ",{n}").map_err(io)?;
    }
    writeln!(w).map_err(io)?;
    for (c, (o, ks)) in outs.iter().zip(kept).enumerate() {
        for &k in ks {
            write!(w, "{c},{},{}", o.steps[k], o.eps[k]).map_err(io)?;
            for v in &o.draws[k * d..(k + 1) * d] {
                write!(w, ",{v}").map_err(io)?;
            }
            writeln!(w).map_err(io)?;
        }
    }
    w.flush().map_err(io)
}

fn print_table(s: &Summary, burn_note: Option<&str>, out: &Path) {
    println!(
        "sgld sample: {} model, {} training rows, {} parameters, {} chains x {} steps in {:.2} s ({:.0} steps/s)",
        format!("{:?}", s.model).to_lowercase(),
        s.n_train,
        s.dim,
        s.chains,
        s.steps,
        s.seconds,
        s.steps_per_second
    );
    if let Some(note) = burn_note {
        println!("{note}");
    }
    println!(
        "burn-in {} steps; means and sds weighted {}",
        s.burn_in,
        match s.weighting {
            Weighting::Step => "by step size (eq. 11)",
            Weighting::Uniform => "uniformly",
        }
    );
    println!(
        "{:<16} {:>10} {:>9} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6}",
        "param", "mean", "sd", "q05", "q50", "q95", "ess_bulk", "ess_tail", "rhat"
    );
    let show = 30;
    for p in s.params.iter().take(show) {
        println!(
            "{:<16} {:>10.4} {:>9.4} {:>10.4} {:>10.4} {:>10.4} {:>9.0} {:>9.0} {:>6.3}",
            p.name, p.mean, p.sd, p.q05, p.q50, p.q95, p.ess_bulk, p.ess_tail, p.rhat
        );
    }
    if s.params.len() > show {
        println!(
            "... {} more parameters in {}",
            s.params.len() - show,
            out.join("summary.json").display()
        );
    }
    if let Some(t) = &s.test {
        match (t.accuracy, t.rmse) {
            (Some(a), _) => println!(
                "test: accuracy {a:.4}, log-likelihood per datum {:.4}",
                t.log_lik_per_datum
            ),
            (None, Some(r)) => println!(
                "test: rmse {r:.4}, log-likelihood per datum {:.4}",
                t.log_lik_per_datum
            ),
            _ => println!("test: log-likelihood per datum {:.4}", t.log_lik_per_datum),
        }
    }
    println!(
        "wrote {} and {}",
        out.join("draws.csv").display(),
        out.join("summary.json").display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sparse rows of any width reach the sampler as the same model: the gradient through
    /// `logistic` equals the `u32` model's bit for bit, at dimensions that select `u8`,
    /// `u16` and `u32` indices.
    #[test]
    fn sparse_logistic_is_the_same_model_at_every_index_width() {
        for d in [6usize, 300, 70_000] {
            let n = 40;
            let (mut offsets, mut indices) = (vec![0usize], Vec::new());
            for i in 0..n {
                let mut row: Vec<u32> = (0..4)
                    .map(|k| ((i * 37 + k * 101) % (d - 1)) as u32)
                    .collect();
                row.push(d as u32 - 1);
                row.sort_unstable();
                row.dedup();
                indices.extend(row);
                offsets.push(indices.len());
            }
            let y: Vec<f32> = (0..n)
                .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
                .collect();
            let problem = Problem {
                train: Dataset {
                    features: Features::SparseBinary {
                        offsets: offsets.clone(),
                        indices: indices.clone(),
                        d,
                    },
                    y: y.clone(),
                    names: (0..d).map(|j| j.to_string()).collect(),
                },
                test: None,
                names: Vec::new(),
                prior: None,
                y: y.clone(),
                y_test: Vec::new(),
                kind: ModelKind::Logistic,
            };
            let prior = Gaussian::new(2.0).unwrap();
            let theta: Vec<f32> = (0..d).map(|j| ((j % 7) as f32 - 3.0) * 0.1).collect();
            let batch: Vec<usize> = (0..n).step_by(2).collect();
            let grad = |m: &dyn Model| {
                let mut g = vec![0.0f32; d];
                m.add_log_lik_grad(&theta, &batch, &mut g);
                g
            };
            let through = logistic(&problem, prior, |m| grad(m)).unwrap();
            let wide = sparse_logistic(&offsets, &indices, d, &y, prior).unwrap();
            assert_eq!(through, grad(&wide), "d = {d}");
            assert!(through.iter().any(|&g| g != 0.0));
        }
    }
}
