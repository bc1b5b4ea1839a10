//! Stage 1, the sampling options: how a target is sampled, whatever its model and
//! wherever its data came from ([`SampleOptions`], checked against the target's kind by
//! [`SampleOptions::validate`]), and the plan they make ([`Plan`]).

use std::path::PathBuf;

use serde::Serialize;

use crate::spec::{BurnIn, InitSpec, StepChoice, StepSpec, Thin};

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

/// How a target is sampled: every option of `sgld sample` but the model, its data and
/// its prior, which are the target's. [`SampleOptions::new`] holds the command's
/// defaults.
#[derive(Debug, Clone)]
pub struct SampleOptions {
    /// Output directory.
    pub out: PathBuf,
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
    /// The chains this call runs (all when `None`): a part of a run split across
    /// machines, each chain the same as in the whole run.
    pub chain_ids: Option<std::ops::Range<usize>>,
    /// Seed.
    pub seed: u64,
    /// Weighting of the summary.
    pub weighting: Weighting,
    /// Gradient clipping by norm.
    pub clip: Option<f32>,
    /// The sampler (K-FAC for a network target: set it; the default is SGLD).
    pub sampler: SamplerKind,
    /// Control-variate gradients around the L-BFGS mode (SGLD-CV).
    pub cv: bool,
    /// Temperature τ (noise `N(0, ετ)`).
    pub temperature: f32,
    /// The samplers' own settings.
    pub settings: SamplerSettings,
    /// Bulk and tail ESS every parameter must reach (adapted runs without `steps`).
    pub target_ess: f64,
    /// The most steps per chain, warm-up included.
    pub max_steps: u64,
    /// The chains' start (default: dispersed around the mode).
    pub init: Option<InitSpec>,
    /// Exit non-zero when any warning fires (the command's `--strict`).
    pub strict: bool,
    /// The command line, recorded in summary.json.
    pub command_line: Vec<String>,
    /// Show progress: bars when stderr is a terminal, plain lines when it is not.
    pub progress: bool,
}

/// How a run is driven: chosen once, from the options and the target, and asked by the
/// stages instead of the model's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// The adaptive warm-up chooses the step, batch and estimator, and the run goes on
    /// until the target ESS (or to the given length).
    Adapted,
    /// The user's schedule, or a sampler that keeps its own.
    Given,
    /// A network: a step grid scored on held-out rows, or the user's schedule.
    Network,
}

impl Plan {
    /// The plan of a run with this step choice and sampler, on a target that is (or is
    /// not) a network.
    pub fn of(step_size: StepChoice, sampler: SamplerKind, network: bool) -> Self {
        if network {
            Plan::Network
        } else if step_size == StepChoice::Auto && sampler.adapts() {
            Plan::Adapted
        } else {
            Plan::Given
        }
    }
}

impl SampleOptions {
    /// The command's defaults, the outputs into `out`.
    pub fn new(out: PathBuf) -> Self {
        Self {
            out,
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
            clip: None,
            sampler: SamplerKind::Sgld,
            cv: false,
            temperature: 1.0,
            settings: SamplerSettings::default(),
            target_ess: 400.0,
            max_steps: 2_000_000,
            init: None,
            strict: false,
            command_line: Vec::new(),
            progress: false,
        }
    }

    /// The plan for a target that is (or is not) a network.
    pub fn plan(&self, network: bool) -> Plan {
        Plan::of(self.step_size, self.sampler, network)
    }

    /// Whether a target that is not a network adapts its step in warm-up.
    pub fn adaptive(&self) -> bool {
        self.plan(false) == Plan::Adapted
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

    /// Checks the numbers, and the options against a target that is (or is not) a
    /// network; the message names the option.
    pub fn validate(&self, network: bool) -> Result<(), String> {
        let at_least_one = [
            ("--batch", self.batch.map_or(1, |b| b as u64)),
            ("--steps", self.steps.unwrap_or(1)),
            ("--thin", if self.thin == Thin::Every(0) { 0 } else { 1 }),
            ("--chains", self.chains as u64),
            ("--max-steps", self.max_steps),
        ];
        if let Some((name, _)) = at_least_one.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{name} must be at least 1"));
        }
        self.validate_chain_ids(network)?;
        if !(self.alpha.is_finite() && self.alpha > 0.0) {
            return Err(format!(
                "--alpha must be finite and > 0, got {}",
                self.alpha
            ));
        }
        if !(self.target_ess.is_finite() && self.target_ess >= 1.0) {
            return Err(format!(
                "--target-ess must be finite and >= 1, got {}",
                self.target_ess
            ));
        }
        self.validate_network(network)?;
        if self.plan(network) != Plan::Adapted
            && let BurnIn::Steps(b) = self.burn_in
        {
            let steps = self.steps.unwrap_or(if network {
                NETWORK_STEPS
            } else {
                DEFAULT_STEPS
            });
            if b >= steps {
                return Err(format!(
                    "--burn-in {b} leaves no draws of a {steps}-step run (--steps counts the burn-in)"
                ));
            }
        }
        Ok(())
    }

    fn validate_chain_ids(&self, network: bool) -> Result<(), String> {
        let Some(ids) = &self.chain_ids else {
            return Ok(());
        };
        if ids.end > self.chains {
            return Err(format!(
                "--chain-ids {}..{} needs --chains {} or more: --chains is the whole run's count, --chain-ids the part this command runs",
                ids.start, ids.end, ids.end
            ));
        }
        if self.plan(network) == Plan::Adapted && self.steps.is_none() {
            return Err("--chain-ids with --step-size auto needs --steps: an adapted run otherwise sets its length from every chain's ESS, so its chains cannot run apart".into());
        }
        Ok(())
    }

    /// A network's samplers and the options that do not apply to it; K-FAC for
    /// networks only.
    fn validate_network(&self, network: bool) -> Result<(), String> {
        if self.sampler == SamplerKind::Kfac && !network {
            return Err(
                "--sampler kfac preconditions a network's layers: it needs --model mlp".into(),
            );
        }
        if !network {
            return Ok(());
        }
        if !matches!(
            self.sampler,
            SamplerKind::Kfac | SamplerKind::Psgld | SamplerKind::Sgld
        ) {
            return Err(format!(
                "--model mlp samples with --sampler kfac (the default), psgld or sgld, not {}",
                self.sampler.name()
            ));
        }
        if self.cv {
            return Err(
                "--cv needs a single mode to centre on; a network's posterior has many (--model mlp)"
                    .into(),
            );
        }
        if self.clip.is_some() && self.sampler == SamplerKind::Kfac {
            return Err(
                "--clip applies to sgld and psgld; K-FAC's preconditioner already bounds its steps"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan follows the target and the step choice; the network's rules follow the
    /// target, not a model kind.
    #[test]
    fn the_plan_and_the_network_rules_follow_the_target() {
        let o = || SampleOptions::new("unused".into());
        assert_eq!(o().plan(false), Plan::Adapted);
        assert_eq!(o().plan(true), Plan::Network);
        let given = SampleOptions {
            step_size: StepChoice::Given(StepSpec::Const(1e-3)),
            ..o()
        };
        assert_eq!(given.plan(false), Plan::Given);
        let sghmc = SampleOptions {
            sampler: SamplerKind::Sghmc,
            ..o()
        };
        assert_eq!(sghmc.plan(false), Plan::Given);
        let kfac = SampleOptions {
            sampler: SamplerKind::Kfac,
            ..o()
        };
        assert!(kfac.validate(true).is_ok());
        assert!(kfac.validate(false).unwrap_err().contains("kfac"));
        let refused = [
            (SampleOptions { cv: true, ..o() }, "--cv"),
            (
                SampleOptions {
                    clip: Some(1.0),
                    ..kfac.clone()
                },
                "--clip",
            ),
            (sghmc, "--model mlp samples with"),
        ];
        assert!(SampleOptions { cv: true, ..o() }.validate(false).is_ok());
        for (opts, what) in refused {
            let err = opts.validate(true).unwrap_err();
            assert!(err.contains(what), "{what}: {err}");
        }
        // A fixed burn-in must leave draws of the network's default length.
        let burn = SampleOptions {
            burn_in: BurnIn::Steps(2_000),
            ..kfac
        };
        assert!(burn.validate(true).unwrap_err().contains("--burn-in"));
    }
}
