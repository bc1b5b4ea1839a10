//! Stage 1, configuration: what `sgld sample` was asked to do, checked before any data
//! is read.

use std::path::PathBuf;

use serde::Serialize;

use crate::data::Format;
use crate::spec::{BurnIn, InitSpec, PriorSpec, StepChoice, StepSpec, Thin};

/// Steps per chain of a given schedule without `--steps`.
pub const DEFAULT_STEPS: u64 = 10_000;

/// Steps per chain of a network without `--steps`: the reproduction's 300 of burn-in and
/// 1,000 more.
pub const NETWORK_STEPS: u64 = 1_300;

/// Draws per chain that `--thin auto` keeps at most: enough for the quantiles and the
/// ESS of a few hundred, small enough that the outputs and their diagnostics stay quick.
/// Every step after burn-in still counts in the means: a kept draw is weighted by the
/// steps it stands for ([`super::kept::Kept::span`]).
pub const AUTO_DRAWS: u64 = 4_000;

/// The thinning that keeps at most [`AUTO_DRAWS`] of `steps` kept steps.
pub fn auto_thin(steps: u64) -> u64 {
    steps.div_ceil(AUTO_DRAWS).max(1)
}

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

/// The model to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Logistic regression `p(y|x,β) = σ(y βᵀx)` (§5.2); labels ±1 or 0/1 (0 is read as −1).
    Logistic,
    /// Bayesian linear regression with the Normal–inverse-gamma prior, in `(β, log σ²)`.
    Linreg,
    /// The tied-means mixture of §5.1 on one-column data.
    Gmm,
    /// Poisson regression of counts with a log link, `y ~ Poisson(exp(βᵀx))`; responses
    /// whole numbers ≥ 0.
    Poisson,
    /// Probit regression `p(y|x,β) = Φ(y βᵀx)`; labels ±1 or 0/1 (0 is read as −1).
    Probit,
    /// A one-hidden-layer ReLU network (`--hidden` units) for regression (Gaussian noise
    /// with a learned precision) or binary classification (`--output bernoulli`), on
    /// inputs (and a regression target) standardised with the training rows' statistics.
    Mlp,
}

impl ModelKind {
    /// A regression on features with a laplace or gaussian prior on β and a bias (the
    /// generalised linear models: logistic, probit, Poisson).
    pub fn is_glm(self) -> bool {
        matches!(
            self,
            ModelKind::Logistic | ModelKind::Probit | ModelKind::Poisson
        )
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Logistic => "logistic",
            ModelKind::Linreg => "linreg",
            ModelKind::Gmm => "gmm",
            ModelKind::Poisson => "poisson",
            ModelKind::Probit => "probit",
            ModelKind::Mlp => "mlp",
        }
    }
}

/// The output of `--model mlp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum NetOutput {
    /// Regression: `y ~ N(f(x), 1/λ)` with `log λ` learned under PBP's `Gamma(6, 6)` prior.
    Gaussian,
    /// Binary classification: `p(y|x) = σ(y f(x))`, labels ±1 or 0/1.
    Bernoulli,
}

/// The sampler (`sgld sample --sampler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum SamplerKind {
    /// SGLD, eq. 4.
    Sgld,
    /// SGLD preconditioned (eq. 9) by the warm-up's metric: the covariance of the Laplace
    /// approximation at the L-BFGS mode, or of the warm-up draws where that misleads.
    Precond,
    /// pSGLD: RMSprop preconditioner (Li et al. 2016).
    Psgld,
    /// SGHMC with friction (Chen et al. 2014).
    Sghmc,
    /// SGHD: leapfrog with the warm-up's covariance as mass (Lasri & Chaoui).
    Sghd,
    /// SGNHT: thermostat (Ding et al. 2014).
    Sgnht,
    /// MALA on the full data (exact), with the warm-up's metric (the Laplace
    /// approximation at the L-BFGS mode: the empirical Fisher information plus the
    /// prior's precision, or the Hessian) from dispersed starts; the step adapted to an
    /// acceptance of 0.65 (a given schedule: used as given).
    Mala,
    /// K-FAC preconditioned SGLD (Nado et al.) for `--model mlp`: the network's Fisher
    /// approximated per layer by a Kronecker product, refreshed every 10 steps.
    Kfac,
}

impl SamplerKind {
    /// Every sampler of any model, in the order of the docs (K-FAC, for networks only,
    /// is not among them).
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
            SamplerKind::Kfac => "kfac",
        }
    }

    /// The sampler without `--sampler`: K-FAC for networks, SGLD otherwise.
    pub fn default_for(model: ModelKind) -> Self {
        match model {
            ModelKind::Mlp => SamplerKind::Kfac,
            _ => SamplerKind::Sgld,
        }
    }

    /// Whether `--step-size auto` runs the adaptive warm-up for this sampler (SGLD and
    /// preconditioned SGLD, and MALA on its exact path; the others keep their own
    /// default schedules).
    pub fn adapts(self) -> bool {
        matches!(
            self,
            SamplerKind::Sgld | SamplerKind::Precond | SamplerKind::Mala
        )
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Weighting {
    /// Uniform for a constant step, by step size (eq. 11) for a changing one.
    Auto,
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
    /// The response column: a CSV column's name, or a `.npy` design's column index.
    pub target: Option<String>,
    /// A `.npy` labels file for the training design (instead of one of its columns).
    pub labels: Option<PathBuf>,
    /// A `.npy` labels file for the test design.
    pub test_labels: Option<PathBuf>,
    /// Prior (default per model).
    pub prior: Option<PriorSpec>,
    /// No bias (intercept) feature (logistic and linreg).
    pub no_bias: bool,
    /// Mini-batch size; `None`: chosen by the warm-up (adapted runs) or 10.
    pub batch: Option<usize>,
    /// Steps per chain after warm-up; `None`: until `target_ess` (adapted runs) or
    /// 10,000 (a given schedule).
    pub steps: Option<u64>,
    /// Step sizes: adapted or as given.
    pub step_size: StepChoice,
    /// Burn-in (warm-up) length: adaptive or fixed.
    pub burn_in: BurnIn,
    /// Sampling-threshold target (eq. 10).
    pub alpha: f64,
    /// Keep every `thin`-th step.
    pub thin: Thin,
    /// Number of chains.
    pub chains: usize,
    /// The chains this command runs (all when `None`): a part of a run split across
    /// machines, each chain the same as in the whole run.
    pub chain_ids: Option<std::ops::Range<usize>>,
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
    /// Hidden units of `--model mlp`.
    pub hidden: usize,
    /// The output of `--model mlp`.
    pub output: NetOutput,
    /// Bulk and tail ESS every parameter must reach (adapted runs without `--steps`).
    pub target_ess: f64,
    /// The most steps per chain, warm-up included.
    pub max_steps: u64,
    /// The chains' start (default: dispersed around the mode).
    pub init: Option<InitSpec>,
    /// Exit non-zero when any warning fires.
    pub strict: bool,
    /// The command line, recorded in summary.json.
    pub command_line: Vec<String>,
    /// Show progress bars (when stderr is a terminal).
    pub progress: bool,
}

impl SampleConfig {
    /// The command's defaults for a library call ([`crate::sample::sample_model`]),
    /// which takes its model, data and prior from its target: every option as
    /// `sgld sample` has it, the outputs into `out`.
    pub fn defaults(out: PathBuf) -> Self {
        Self::new(ModelKind::Logistic, PathBuf::new(), out)
    }

    /// A configuration with every default of `sgld sample` (the sampler: `kfac` for
    /// `mlp`, `sgld` for the other models).
    pub fn new(model: ModelKind, train: PathBuf, out: PathBuf) -> Self {
        Self {
            model,
            train,
            test: None,
            format: None,
            target: None,
            labels: None,
            test_labels: None,
            prior: None,
            no_bias: false,
            batch: None,
            steps: None,
            step_size: StepChoice::Auto,
            burn_in: BurnIn::Auto,
            alpha: 0.1,
            thin: Thin::Auto,
            chains: 4,
            chain_ids: None,
            seed: 2011,
            weighting: Weighting::Auto,
            out,
            clip: None,
            sampler: SamplerKind::default_for(model),
            cv: false,
            temperature: 1.0,
            settings: SamplerSettings::default(),
            hidden: 50,
            output: NetOutput::Gaussian,
            target_ess: 400.0,
            max_steps: 2_000_000,
            init: None,
            strict: false,
            command_line: Vec::new(),
            progress: false,
        }
    }

    /// Whether this run adapts its step in warm-up.
    pub fn adaptive(&self) -> bool {
        self.step_size == StepChoice::Auto && self.sampler.adapts() && self.model != ModelKind::Mlp
    }

    /// The batch of a run that does not choose its own: as given, or 10.
    pub fn batch_or_default(&self) -> usize {
        self.batch.unwrap_or(10)
    }

    /// The user's schedule, if one was given.
    pub fn given_step(&self) -> Option<StepSpec> {
        match self.step_size {
            StepChoice::Given(s) => Some(s),
            StepChoice::Auto => None,
        }
    }
}

/// Checks the numbers of a configuration.
pub fn validate(cfg: &SampleConfig) -> Result<(), String> {
    if cfg.batch == Some(0) {
        return Err("--batch must be at least 1".into());
    }
    if cfg.steps == Some(0) {
        return Err("--steps must be at least 1".into());
    }
    if cfg.thin == Thin::Every(0) {
        return Err("--thin must be at least 1".into());
    }
    if cfg.chains == 0 {
        return Err("--chains must be at least 1".into());
    }
    if let Some(ids) = &cfg.chain_ids {
        if ids.end > cfg.chains {
            return Err(format!(
                "--chain-ids {}..{} needs --chains {} or more: --chains is the whole run's count, --chain-ids the part this command runs",
                ids.start, ids.end, ids.end
            ));
        }
        if cfg.adaptive() && cfg.steps.is_none() {
            return Err("--chain-ids with --step-size auto needs --steps: an adapted run otherwise sets its length from every chain's ESS, so its chains cannot run apart".into());
        }
    }
    if !(cfg.alpha.is_finite() && cfg.alpha > 0.0) {
        return Err(format!("--alpha must be finite and > 0, got {}", cfg.alpha));
    }
    if !(cfg.target_ess.is_finite() && cfg.target_ess >= 1.0) {
        return Err(format!(
            "--target-ess must be finite and >= 1, got {}",
            cfg.target_ess
        ));
    }
    if cfg.max_steps == 0 {
        return Err("--max-steps must be at least 1".into());
    }
    validate_network(cfg)?;
    if !cfg.adaptive()
        && let BurnIn::Steps(b) = cfg.burn_in
    {
        let steps = cfg.steps.unwrap_or(match cfg.model {
            ModelKind::Mlp => NETWORK_STEPS,
            _ => DEFAULT_STEPS,
        });
        if b >= steps {
            return Err(format!(
                "--burn-in {b} leaves no draws of a {steps}-step run (--steps counts the burn-in)"
            ));
        }
    }
    Ok(())
}

/// The network's own checks: its samplers, its size, and the options that do not apply.
fn validate_network(cfg: &SampleConfig) -> Result<(), String> {
    let mlp = cfg.model == ModelKind::Mlp;
    if cfg.sampler == SamplerKind::Kfac && !mlp {
        return Err("--sampler kfac preconditions a network's layers: it needs --model mlp".into());
    }
    if !mlp {
        return Ok(());
    }
    if !matches!(
        cfg.sampler,
        SamplerKind::Kfac | SamplerKind::Psgld | SamplerKind::Sgld
    ) {
        return Err(format!(
            "--model mlp samples with --sampler kfac (the default), psgld or sgld, not {}",
            cfg.sampler.name()
        ));
    }
    if cfg.hidden == 0 || cfg.hidden > 100_000 {
        return Err(format!(
            "--hidden must be from 1 to 100000, got {}",
            cfg.hidden
        ));
    }
    if cfg.cv {
        return Err(
            "--cv needs a single mode to centre on; a network's posterior has many (--model mlp)"
                .into(),
        );
    }
    if cfg.clip.is_some() && cfg.sampler == SamplerKind::Kfac {
        return Err(
            "--clip applies to sgld and psgld; K-FAC's preconditioner already bounds its steps"
                .into(),
        );
    }
    if cfg.no_bias {
        return Err(
            "--no-bias is for the regressions; the network's units always have biases".into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option out of its domain is refused with a message naming it.
    #[test]
    fn validation_names_the_bad_option() {
        let ok = || SampleConfig::defaults("unused".into());
        assert!(validate(&ok()).is_ok());
        let cases: Vec<(SampleConfig, &str)> = vec![
            (
                SampleConfig {
                    batch: Some(0),
                    ..ok()
                },
                "--batch",
            ),
            (
                SampleConfig {
                    steps: Some(0),
                    ..ok()
                },
                "--steps",
            ),
            (
                SampleConfig {
                    thin: Thin::Every(0),
                    ..ok()
                },
                "--thin",
            ),
            (SampleConfig { chains: 0, ..ok() }, "--chains"),
            (
                SampleConfig {
                    chain_ids: Some(2..6),
                    ..ok()
                },
                "--chain-ids",
            ),
            (
                SampleConfig {
                    alpha: f64::NAN,
                    ..ok()
                },
                "--alpha",
            ),
            (
                SampleConfig {
                    target_ess: 0.5,
                    ..ok()
                },
                "--target-ess",
            ),
            (
                SampleConfig {
                    max_steps: 0,
                    ..ok()
                },
                "--max-steps",
            ),
            (
                SampleConfig {
                    sampler: SamplerKind::Kfac,
                    ..ok()
                },
                "kfac",
            ),
            (
                SampleConfig {
                    step_size: StepChoice::Given(StepSpec::Const(0.01)),
                    steps: Some(100),
                    burn_in: BurnIn::Steps(100),
                    ..ok()
                },
                "--burn-in",
            ),
        ];
        for (cfg, option) in cases {
            let err = validate(&cfg).unwrap_err();
            assert!(err.contains(option), "{option}: {err}");
        }
    }
}
