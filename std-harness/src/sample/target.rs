//! Stage 1, the target: a model to sample with what the outputs say about it — its
//! parameter names, its prior, its supports and derived quantities, a test metric, the
//! data files — as the command builds it from the data or a user from their own model.

use sgld::models::{Mlp, Model};

use super::records::{DataFiles, Scaling, TestSummary};
use crate::constrained::{Constrained, Support};

/// A model that can be shared across the chains' threads.
pub trait ModelSync: Model + Sync {}
impl<M: Model + Sync> ModelSync for M {}

/// The diagonal of the prior's precision at θ (the warm-up's Laplace approximation adds
/// it to the empirical Fisher information).
pub type PriorPrecision<'a> = &'a (dyn Fn(&[f32]) -> Vec<f64> + Sync);

/// Test-set metrics from pooled draws and their weights.
pub type TestMetrics<'a> = &'a (dyn Fn(&[(Vec<f32>, f64)]) -> Result<TestSummary, String> + Sync);

/// Quantities computed from each draw θ (on the model's scale) and reported beside it.
pub type Derived<'a> = &'a (dyn Fn(&[f32]) -> Vec<f32> + Sync);

/// A model to sample with what the outputs say about it.
pub struct Target<'a> {
    /// The model.
    pub model: &'a dyn ModelSync,
    /// Its name in summary.json and the CmdStan files.
    pub name: String,
    /// One name per parameter: draws.csv's columns.
    pub names: Vec<String>,
    /// The prior as summary.json records it.
    pub prior: String,
    /// The prior's precision for the warm-up's Laplace approximation (the empirical
    /// Fisher information plus it); none: the Hessian of the log posterior by finite
    /// differences, which sees the prior through the model's own gradient.
    pub prior_precision: Option<PriorPrecision<'a>>,
    /// Test-set metrics, if there is a test set.
    pub test: Option<TestMetrics<'a>>,
    /// The data files read (summary.json's `data`), if any.
    pub data: Option<DataFiles>,
    /// The network, when the model is one: it starts, steps and is diagnosed as a
    /// network ([`super::network`]).
    pub network: Option<&'a Mlp<'a>>,
    /// How the network's data were standardised, for summary.json.
    pub scaling: Option<Scaling>,
    /// Whether the log density is smooth (true unless [`Target::with_kinked_prior`] or
    /// [`Target::with_laplace_prior`]): where the estimator is the whole data set, a
    /// smooth target is sampled exactly by MALA.
    pub smooth: bool,
    /// The scale of a Laplace prior on every coordinate, whose kinks at 0 the exact
    /// path's HMC follows ([`Target::with_laplace_prior`]).
    pub laplace: Option<f32>,
    /// Warnings about the data, reported first among the run's.
    pub warnings: Vec<String>,
    /// The supports of a [`Constrained`] model's parameters: the draws are reported as
    /// `θ = T(u)` ([`Target::constrained`]).
    pub supports: Option<&'a [(Support, usize)]>,
    /// Derived quantities' names and their function of θ ([`Target::with_derived`]).
    pub derived: Option<(Vec<String>, Derived<'a>)>,
}

impl<'a> Target<'a> {
    /// `model` called `name`, with one name per parameter; a prior recorded as
    /// `unspecified`, and the warm-up's curvature from the Hessian of the model's log
    /// posterior until [`Target::with_prior`].
    pub fn new(model: &'a dyn ModelSync, name: &str, names: Vec<String>) -> Self {
        Self {
            model,
            name: name.to_string(),
            names,
            prior: "unspecified".into(),
            prior_precision: None,
            test: None,
            data: None,
            network: None,
            scaling: None,
            smooth: true,
            laplace: None,
            warnings: Vec::new(),
            supports: None,
            derived: None,
        }
    }

    /// A model written on its parameters' own scale, sampled on the unconstrained one
    /// ([`Constrained`]), with one name per parameter. Draws, summaries, R̂, ESS and the
    /// CmdStan files report θ; `unconstrained.csv` holds the sampler's coordinates `u`
    /// (the columns named by [`crate::constrained::unconstrained_names`]), as do the
    /// `chain_N.npy` files, and `lp__` is the log density of u (the log-Jacobian
    /// included, as in Stan).
    pub fn constrained<M: sgld::models::Model + Sync + ?Sized>(
        model: &'a Constrained<'a, M>,
        name: &str,
        names: Vec<String>,
    ) -> Self {
        Self {
            supports: Some(model.blocks()),
            ..Self::new(model, name, names)
        }
    }

    /// Quantities reported beside the parameters: `f(θ)` gives one value per name at
    /// each draw θ (on the model's scale), and each is summarised, diagnosed and written
    /// as a parameter is (e.g. the non-centred `θⱼ = μ + τ θ̃ⱼ`).
    pub fn with_derived(mut self, names: Vec<String>, f: Derived<'a>) -> Self {
        self.derived = Some((names, f));
        self
    }

    /// A one-hidden-layer network called `name` with one name per parameter
    /// ([`super::network::names`] gives them), sampled as `sgld sample --model mlp` samples it:
    /// starts as networks are initialised, the step searched on held-out rows, K-FAC
    /// (`cfg.sampler`), and R̂ and ESS checked on `lp__` and `log_precision`.
    pub fn network(net: &'a Mlp<'a>, name: &str, names: Vec<String>) -> Self {
        Self {
            network: Some(net),
            prior: format!(
                "gaussian:{}/fan-in on the weights{}",
                net.prior_var(),
                match net.noise() {
                    sgld::models::Noise::Learned { shape, rate } =>
                        format!(", gamma:{shape},{rate} on the noise precision"),
                    _ => String::new(),
                }
            ),
            ..Self::new(net, name, names)
        }
    }

    /// How the network's inputs and target were standardised (summary.json's
    /// `network.scaling`).
    pub fn with_scaling(mut self, scaling: Scaling) -> Self {
        self.scaling = Some(scaling);
        self
    }

    /// The prior: its label for summary.json and its precision's diagonal at θ. A label
    /// `laplace:b` (as `sgld sample` writes it) is [`Target::with_laplace_prior`]`(b)`;
    /// another that starts with `laplace` marks the prior as kinked
    /// ([`Target::with_kinked_prior`]).
    pub fn with_prior(mut self, label: &str, precision: PriorPrecision<'a>) -> Self {
        self.prior = label.to_string();
        if let Ok(crate::spec::PriorSpec::Laplace(b)) = label.parse() {
            self = self.with_laplace_prior(b);
        } else if label.starts_with("laplace") {
            self.smooth = false;
        }
        self.prior_precision = Some(precision);
        self
    }

    /// The prior has kinks where the sampler does not know them, so the log density is
    /// not smooth: MALA would reject the moves that cross them and mix many times slower
    /// than the unadjusted step (on a9a, tenfold), so the whole data set is sampled by
    /// the unadjusted step at the largest whitened step. A Laplace prior's kinks at 0
    /// are known: [`Target::with_laplace_prior`].
    pub fn with_kinked_prior(mut self) -> Self {
        self.smooth = false;
        self.laplace = None;
        self
    }

    /// The prior is (or holds) an independent Laplace prior of scale `scale` on every
    /// coordinate, `Σⱼ −|θⱼ|/b`: the exact path's HMC follows its kinks at 0 exactly
    /// ([`super::hmc`]). The draws stay exact whatever the model's prior is; a scale
    /// that fits it only makes the trajectories cheaper.
    pub fn with_laplace_prior(mut self, scale: f32) -> Self {
        self.smooth = false;
        self.laplace = (scale.is_finite() && scale > 0.0).then_some(scale);
        self
    }

    /// Warnings about the data (a test file's unknown features), reported first among
    /// the run's in the table and summary.json.
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// Test-set metrics from pooled weighted draws.
    pub fn with_test(mut self, test: TestMetrics<'a>) -> Self {
        self.test = Some(test);
        self
    }

    /// The data files, for summary.json.
    pub fn with_data(mut self, data: DataFiles) -> Self {
        self.data = Some(data);
        self
    }
}
