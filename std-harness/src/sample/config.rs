//! Stage 1, configuration: what `sgld sample` was asked to do, checked before any data
//! is read.

use std::path::PathBuf;

use serde::Serialize;

pub use super::options::{
    AUTO_DRAWS, DEFAULT_STEPS, NETWORK_STEPS, SamplerKind, SamplerSettings, Weighting, auto_thin,
    cv_applies,
};
use super::options::{Plan, SampleOptions};
use crate::data::Format;
use crate::spec::{BurnIn, InitSpec, PriorSpec, StepChoice, StepSpec, Thin};

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

impl SamplerKind {
    /// The sampler without `--sampler`: K-FAC for networks, SGLD otherwise.
    pub fn default_for(model: ModelKind) -> Self {
        match model {
            ModelKind::Mlp => SamplerKind::Kfac,
            _ => SamplerKind::Sgld,
        }
    }
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
    /// Show progress: bars when stderr is a terminal, plain lines when it is not.
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
        let options = SampleOptions {
            sampler: SamplerKind::default_for(model),
            ..SampleOptions::new(out)
        };
        Self::from_options(model, train, options)
    }

    /// The command's data specification with its defaults (no test set, the format by
    /// the extension, the model's own prior, a bias, 50 hidden units with Gaussian
    /// output), sampled with the options `o`.
    pub fn from_options(model: ModelKind, train: PathBuf, o: SampleOptions) -> Self {
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
            hidden: 50,
            output: NetOutput::Gaussian,
            out: o.out,
            batch: o.batch,
            steps: o.steps,
            step_size: o.step_size,
            burn_in: o.burn_in,
            alpha: o.alpha,
            thin: o.thin,
            chains: o.chains,
            chain_ids: o.chain_ids,
            seed: o.seed,
            weighting: o.weighting,
            clip: o.clip,
            sampler: o.sampler,
            cv: o.cv,
            temperature: o.temperature,
            settings: o.settings,
            target_ess: o.target_ess,
            max_steps: o.max_steps,
            init: o.init,
            strict: o.strict,
            command_line: o.command_line,
            progress: o.progress,
        }
    }

    /// Whether this run adapts its step in warm-up.
    pub fn adaptive(&self) -> bool {
        self.plan() == Plan::Adapted
    }

    /// How the run is driven.
    pub fn plan(&self) -> Plan {
        Plan::of(self.step_size, self.sampler, self.model == ModelKind::Mlp)
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

    /// The sampling options: everything but the model and its data.
    pub fn options(&self) -> SampleOptions {
        SampleOptions {
            out: self.out.clone(),
            batch: self.batch,
            steps: self.steps,
            step_size: self.step_size,
            burn_in: self.burn_in,
            alpha: self.alpha,
            thin: self.thin,
            chains: self.chains,
            chain_ids: self.chain_ids.clone(),
            seed: self.seed,
            weighting: self.weighting,
            clip: self.clip,
            sampler: self.sampler,
            cv: self.cv,
            temperature: self.temperature,
            settings: self.settings,
            target_ess: self.target_ess,
            max_steps: self.max_steps,
            init: self.init.clone(),
            strict: self.strict,
            command_line: self.command_line.clone(),
            progress: self.progress,
        }
    }
}

/// Checks a command's configuration: the sampling options against its model
/// ([`SampleOptions::validate`]), and the network's size and the regressions' options.
pub fn validate(cfg: &SampleConfig) -> Result<(), String> {
    let mlp = cfg.model == ModelKind::Mlp;
    cfg.options().validate(mlp)?;
    if !mlp {
        return Ok(());
    }
    if cfg.hidden == 0 || cfg.hidden > 100_000 {
        return Err(format!(
            "--hidden must be from 1 to 100000, got {}",
            cfg.hidden
        ));
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
