//! The records the stages hand on, in one place: what the warm-up found, a parameter's
//! summary, the test metrics, the data files and a network's description. Built where
//! they are measured; what was not is `None`.

use serde::Serialize;

use super::config::NetOutput;

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
    /// The Monte Carlo standard error of the mean, `sd/√ess_mean` (stansummary's MCSE).
    pub mcse_mean: f64,
}

/// Test-set metrics.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TestSummary {
    /// Accuracy of the posterior predictive (null for regression and the mixture).
    pub accuracy: Option<f64>,
    /// Mean log posterior-predictive density per test datum.
    pub log_lik_per_datum: f64,
    /// Root mean squared error of the posterior-predictive mean (linreg and poisson).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rmse: Option<f64>,
}

/// A data file and its checksum.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DataFile {
    /// The path as given.
    pub path: String,
    /// Lowercase hex sha256 of the file.
    pub sha256: String,
}

/// The data a run read.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DataFiles {
    /// Training data.
    pub train: DataFile,
    /// Test data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<DataFile>,
}

/// What the warm-up decided and measured, recorded in summary.json.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WarmupSummary {
    /// Whether the step, preconditioner and estimator were adapted (`--step-size auto`).
    pub adapted: bool,
    /// The sampler the chains ran (`precond`: SGLD with the Laplace preconditioner).
    pub sampler: String,
    /// `dense`, `diagonal` or `none`.
    pub preconditioner: String,
    /// Control-variate gradients around the mode.
    pub cv: bool,
    /// The mini-batch size.
    pub batch: usize,
    /// Every step on the whole data set, each row once (exact gradients).
    pub full_batch: bool,
    /// The step size the chains sampled with (the last, for a schedule).
    pub step_size: f64,
    /// α of eq. 10 at that step, measured at the chains' last states (largest).
    pub alpha: f64,
    /// L-BFGS iterations of the mode search on all rows (after those on a subsample).
    pub mode_iterations: u32,
    /// The rows the mode search read, in passes over the whole data set: it starts on a
    /// subsample of large data, so this does not grow with N.
    pub mode_passes: f64,
    /// The log posterior at the mode estimate.
    pub mode_log_posterior: f64,
    /// Warm-up steps per chain (never summarised).
    pub steps: u64,
    /// Whether the chains agreed (split R̂ ≤ 1.05 over the warm-up's second half; on the
    /// whole data set, up to 1.1 where that is within chance for a parameter's ESS)
    /// before the warm-up ended.
    pub converged: bool,
    /// The largest split R̂ over the warm-up's second half at its end.
    pub rhat: f64,
    /// Where the metric came from: `laplace` (the Laplace approximation at the mode,
    /// which the warm-up draws agreed with), `draws` (the warm-up draws' covariance,
    /// where they did not), or `none`.
    pub metric: String,
    /// Where the metric came from the draws: how far the Laplace approximation was from
    /// them (the largest variance ratio of a whitened coordinate, either way, and the
    /// largest offset of their mean from the mode in whitened units).
    pub metric_disagreement: Option<[f64; 2]>,
    /// The acceptance rate the step was adapted to (the exact path).
    pub target_acceptance: Option<f64>,
    /// HMC's diagonal metric in coordinates sheared into this parameter (the intercept,
    /// by its index in `params`): it moves with the mean linear predictor.
    pub sheared_into: Option<usize>,
    /// Restarts of the warm-up at a smaller step after a chain went non-finite.
    pub restarts: u32,
    /// With mini-batches: the full-data Metropolis acceptance of the chosen step's
    /// proposal at the warm-up's end (the bias check).
    pub bias_acceptance: Option<f64>,
}

impl WarmupSummary {
    /// What a run without the adapted warm-up records: its sampler, batch and (last)
    /// step; no mode, metric or checks (`none`, NaN and 0 for what was not measured).
    pub fn given(sampler: &str, batch: usize, step_size: f64) -> Self {
        Self {
            adapted: false,
            sampler: sampler.into(),
            preconditioner: "none".into(),
            cv: false,
            batch,
            full_batch: false,
            step_size,
            alpha: f64::NAN,
            mode_iterations: 0,
            mode_passes: 0.0,
            mode_log_posterior: f64::NAN,
            steps: 0,
            converged: false,
            rhat: f64::NAN,
            metric: "none".into(),
            metric_disagreement: None,
            target_acceptance: None,
            sheared_into: None,
            restarts: 0,
            bias_acceptance: None,
        }
    }

    /// With the mode search's iterations, passes over the data and log posterior.
    pub fn with_mode(self, iterations: u32, passes: f64, log_posterior: f64) -> Self {
        Self {
            mode_iterations: iterations,
            mode_passes: passes,
            mode_log_posterior: log_posterior,
            ..self
        }
    }
}

/// The standardisation of a network's inputs (and regression target), from the training
/// rows: `(x − mean)/sd` per input, sd 1 for a constant column.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Scaling {
    /// Each input's training mean.
    pub x_mean: Vec<f64>,
    /// Each input's training sd (1 where the column is constant).
    pub x_sd: Vec<f64>,
    /// The target's training mean (regression).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub y_mean: Option<f64>,
    /// The target's training sd (regression): predictions in the data's units are
    /// `y_mean + y_sd · f(x)`, the noise sd `y_sd · exp(−log_precision/2)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub y_sd: Option<f64>,
}

fn mean_sd(v: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = v.clone().count().max(1) as f64;
    let m = v.clone().sum::<f64>() / n;
    let var = v.map(|a| (a - m).powi(2)).sum::<f64>() / n;
    (m, if var > 0.0 { var.sqrt() } else { 1.0 })
}

impl Scaling {
    /// The statistics of `x` (`n × d`, row-major) and, for regression, of `y`.
    pub fn fit(x: &[f32], d: usize, y: Option<&[f32]>) -> Self {
        let (x_mean, x_sd) = (0..d)
            .map(|j| mean_sd(x.iter().skip(j).step_by(d.max(1)).map(|&v| v as f64)))
            .unzip();
        let (y_mean, y_sd) = match y.map(|y| mean_sd(y.iter().map(|&v| v as f64))) {
            Some((m, s)) => (Some(m), Some(s)),
            None => (None, None),
        };
        Self {
            x_mean,
            x_sd,
            y_mean,
            y_sd,
        }
    }

    /// Standardises rows of inputs in place.
    pub fn inputs(&self, x: &mut [f32]) {
        let d = self.x_mean.len().max(1);
        for row in x.chunks_exact_mut(d) {
            for ((v, m), s) in row.iter_mut().zip(&self.x_mean).zip(&self.x_sd) {
                *v = ((*v as f64 - m) / s) as f32;
            }
        }
    }

    /// Standardises regression targets in place (labels are left as they are).
    pub fn targets(&self, y: &mut [f32]) {
        if let (Some(m), Some(s)) = (self.y_mean, self.y_sd) {
            for v in y {
                *v = ((*v as f64 - m) / s) as f32;
            }
        }
    }
}

/// One value of the step-size grid and the held-out log predictive density per datum
/// its chain reached (−∞ where it diverged).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct GridPoint {
    /// The step size.
    pub step_size: f64,
    /// Log predictive density per held-out row (standardised units).
    pub validation_log_lik: f64,
}

/// One layer's weights or biases, summarised together.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Group {
    /// `w1`, `b1`, `w2` or `b2`.
    pub name: String,
    /// Its parameters.
    pub params: usize,
    /// Root mean square of their posterior means.
    pub rms_mean: f64,
    /// Mean of their posterior sds.
    pub mean_sd: f64,
    /// Median R̂ (not a convergence check: the units permute between chains).
    pub median_rhat: f64,
    /// Smallest bulk ESS.
    pub min_ess_bulk: f64,
}

/// summary.json's `network`: the shape, the scaling, the step search, the layers and the
/// quantities the checks read.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NetworkSummary {
    /// Inputs per example.
    pub inputs: usize,
    /// Hidden ReLU units.
    pub hidden: usize,
    /// The output.
    pub output: NetOutput,
    /// The standardisation the draws assume (absent when the caller's data are used
    /// as given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling: Option<Scaling>,
    /// The step-size search of `--step-size auto` (empty for a given schedule).
    pub step_grid: Vec<GridPoint>,
    /// The layers.
    pub groups: Vec<Group>,
    /// The summaries R̂ and ESS are checked on: `lp__` (when computed) and
    /// `log_precision` (regression).
    pub checked: Vec<ParamSummary>,
}
