//! One place that builds a sampler from `--sampler` and its options (`--friction`,
//! `--decay`, …, `--temperature`, `--clip`), for every path that runs a chosen sampler:
//! a given schedule, the adapted run's preconditioned SGLD, a network, and the
//! reproductions of Nado et al. (`experiments/uci.rs`). Each sampler is
//! its own type, so the caller says what to do with it through [`Visit`].

use sgld::Sgld;
use sgld::kfac::{KfacSampler, KfacSgld};
use sgld::models::Mlp;
use sgld::sampler::{Mala, PrecondSgld, Psgld, Sampler, Sghd, Sghmc, Sgnht};

use indicatif::ProgressBar;
use sgld::schedule::Schedule;

use super::chains::{Chain, SharedEstimator, Stretch, advance_all};
use super::metric_store::MetricStore;
use super::options::{SampleOptions, SamplerKind};
use super::problem::ModelSync;
use super::warmup::Laplace;

/// K-FAC's factor decay and refresh period (the reproduction's).
const KFAC_DECAY: f32 = 0.95;
const KFAC_REFRESH: u32 = 10;

/// What to do with the sampler once built.
pub trait Visit {
    /// The result.
    type Out;
    /// Uses `sampler`.
    fn visit<A: Sampler + Sync>(self, sampler: A) -> Self::Out;
}

/// What the samplers are built from besides the options.
pub struct Inputs<'a> {
    /// The model (MALA evaluates it).
    pub model: &'a dyn ModelSync,
    /// The metric of `precond` and `sghd`.
    pub metric: Option<&'a MetricStore>,
    /// The Laplace approximation whose metric MALA uses.
    pub laplace: Option<&'a Laplace>,
    /// The network K-FAC preconditions.
    pub net: Option<&'a Mlp<'a>>,
    /// `precond` injects the Gaussian-exact noise `N(0, ε(1 − ε/4)τM)`
    /// ([`PrecondSgld::gaussian_exact`]) rather than the Euler step's `N(0, ετM)`.
    pub gaussian_exact: bool,
}

impl<'a> Inputs<'a> {
    /// A model with the Laplace approximation (MALA's metric) and the metric of
    /// `precond` and `sghd`.
    pub fn laplace(model: &'a dyn ModelSync, metric: &'a MetricStore, lap: &'a Laplace) -> Self {
        Self {
            model,
            metric: Some(metric),
            laplace: Some(lap),
            net: None,
            gaussian_exact: false,
        }
    }

    /// A model with the metric of `precond` and `sghd`.
    pub fn metric(model: &'a dyn ModelSync, metric: &'a MetricStore) -> Self {
        Self {
            model,
            metric: Some(metric),
            laplace: None,
            net: None,
            gaussian_exact: false,
        }
    }

    /// The same inputs with `precond`'s noise Gaussian-exact: for a metric that is the
    /// posterior's covariance (the adapted runs').
    pub fn gaussian_exact(self) -> Self {
        Self {
            gaussian_exact: true,
            ..self
        }
    }

    /// A network, for K-FAC (and SGLD and pSGLD).
    pub fn network(net: &'a Mlp<'a>) -> Self {
        Self {
            model: net,
            metric: None,
            laplace: None,
            net: Some(net),
            gaussian_exact: false,
        }
    }
}

/// Builds `cfg.sampler` with `cfg`'s options and hands it to `then`; the error names the
/// option that was refused, or what the sampler needs and was not given.
pub fn build<V: Visit>(
    cfg: &SampleOptions,
    inputs: &Inputs<'_>,
    then: V,
) -> Result<V::Out, String> {
    let bad = |what: &'static str| move |e: sgld::Error| format!("{what}: {e}");
    let st = &cfg.settings;
    let d = inputs.model.dim();
    let metric = || {
        inputs
            .metric
            .map(MetricStore::metric)
            .ok_or_else(|| format!("--sampler {} needs a metric", cfg.sampler.name()))
    };
    macro_rules! go {
        ($s:expr) => {
            Ok(then.visit(super::options::with_options!($s, cfg)))
        };
    }
    match cfg.sampler {
        SamplerKind::Sgld => go!(Sgld::new()),
        SamplerKind::Precond => {
            let s = PrecondSgld::new(metric()?, d).map_err(bad("metric"))?;
            go!(if inputs.gaussian_exact {
                s.gaussian_exact()
            } else {
                s
            })
        }
        SamplerKind::Psgld => {
            go!(Psgld::new(st.decay, st.lambda).map_err(bad("--decay/--lambda"))?)
        }
        SamplerKind::Sghmc => go!(Sghmc::new(st.friction).map_err(bad("--friction"))?),
        SamplerKind::Sghd => {
            go!(Sghd::new(metric()?, d, st.leapfrog).map_err(bad("--leapfrog"))?)
        }
        SamplerKind::Sgnht => go!(Sgnht::new(st.diffusion).map_err(bad("--diffusion"))?),
        SamplerKind::Mala => {
            let lap = inputs
                .laplace
                .ok_or("--sampler mala needs the Laplace approximation")?;
            let mala = match (&lap.precision_factor, &lap.metric) {
                (Some(l), _) => Mala::new(inputs.model).with_precision_factor(l),
                (None, m) => Mala::new(inputs.model).with_metric(match m {
                    MetricStore::Diagonal(m) => m,
                    MetricStore::Cholesky(_) => &[],
                }),
            }
            .map_err(bad("the Laplace metric"))?;
            go!(mala)
        }
        SamplerKind::Kfac => {
            let net = inputs.net.ok_or("--sampler kfac needs --model mlp")?;
            let k = KfacSgld::new(KFAC_DECAY, KFAC_REFRESH)
                .and_then(|k| k.with_temperature(cfg.temperature))
                .map_err(bad("--temperature"))?;
            Ok(then.visit(KfacSampler::new(k, net)))
        }
    }
}

/// Runs a stretch of steps on every chain with the sampler; its gradient estimates per
/// step.
pub struct Advance<'c, 's, S> {
    /// The chains.
    pub chains: &'c mut [Chain],
    /// The model.
    pub model: &'c dyn ModelSync,
    /// The gradient estimator.
    pub est: &'c SharedEstimator<'c>,
    /// The steps.
    pub stretch: &'c Stretch<'s, S>,
    /// One progress bar per chain.
    pub bars: &'c [ProgressBar],
}

impl<S: Schedule + Sync> Visit for Advance<'_, '_, S> {
    type Out = f64;
    fn visit<A: Sampler + Sync>(self, sampler: A) -> f64 {
        advance_all(
            self.chains,
            self.model,
            self.est,
            &sampler,
            self.stretch,
            self.bars,
        );
        sampler.grads_per_step() as f64
    }
}
