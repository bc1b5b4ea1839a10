//! Test-set metrics from posterior draws: the posterior predictive averaged over draws
//! with their weights.

use rayon::prelude::*;
use sgld::math::{log_add_exp, sigmoid};
use sgld::models::{TiedMixture, log_normal_cdf};
use statrs::function::gamma::ln_gamma;

use crate::data::{Dataset, Features};
use crate::sample::{ModelKind, Problem, TestSummary};

/// `x_iᵀβ` for row `i`.
fn margin(test: &Dataset, i: usize, beta: &[f32]) -> f64 {
    match &test.features {
        Features::Dense { x, d } => x[i * d..(i + 1) * d]
            .iter()
            .zip(beta)
            .map(|(a, b)| *a as f64 * *b as f64)
            .sum(),
        Features::Mapped(m) => m
            .dense_row(i)
            .zip(beta)
            .map(|(a, b)| a as f64 * *b as f64)
            .sum(),
        Features::SparseBinary {
            offsets, indices, ..
        } => indices[offsets[i]..offsets[i + 1]]
            .iter()
            .map(|&j| beta[j as usize] as f64)
            .sum(),
        Features::SparseValued {
            offsets,
            indices,
            values,
            ..
        } => (offsets[i]..offsets[i + 1])
            .map(|k| values[k] as f64 * beta[indices[k] as usize] as f64)
            .sum(),
    }
}

/// Accuracy, log predictive density per datum and (regression) RMSE of the posterior
/// predictive on `test`, from `draws` (parameters, weight).
pub fn evaluate(
    problem: &Problem,
    test: &Dataset,
    draws: &[(Vec<f32>, f64)],
) -> Result<TestSummary, String> {
    if draws.is_empty() {
        return Err(
            "no draws were kept, so there is no posterior to evaluate on the test set".into(),
        );
    }
    let total: f64 = draws.iter().map(|d| d.1).sum();
    let log_total = total.ln();
    let n = test.len();
    let kind = problem_kind(problem);
    match kind {
        ModelKind::Mlp => {
            let net = problem
                .test_network()?
                .ok_or("no test rows for the network")?;
            let y_sd = problem.scaling.as_ref().and_then(|s| s.y_sd);
            Ok(crate::sample::network::predictive(&net, draws, y_sd))
        }
        ModelKind::Logistic | ModelKind::Probit => {
            let y = &problem.y_test;
            // P(y = 1 | η): σ(η) or Φ(η).
            let prob = |eta: f64| match kind {
                ModelKind::Probit => log_normal_cdf(eta).exp(),
                _ => sigmoid(eta as f32) as f64,
            };
            let (correct, ll) = (0..n)
                .into_par_iter()
                .map(|i| {
                    let p1: f64 = draws
                        .iter()
                        .map(|(b, w)| w * prob(margin(test, i, b)))
                        .sum::<f64>()
                        / total;
                    let yi = y[i];
                    let p = if yi > 0.0 { p1 } else { 1.0 - p1 };
                    (usize::from((p1 > 0.5) == (yi > 0.0)), p.max(1e-300).ln())
                })
                .reduce(|| (0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
            Ok(TestSummary {
                accuracy: Some(correct as f64 / n as f64),
                log_lik_per_datum: ll / n as f64,
                rmse: None,
            })
        }
        ModelKind::Poisson => {
            // The predictive pmf Σ w Poisson(y; e^η) / Σ w, and its mean Σ w e^η / Σ w.
            let y = &problem.y_test;
            let (se, ll) = (0..n)
                .into_par_iter()
                .map(|i| {
                    let yi = y[i] as f64;
                    let log_fact = ln_gamma(yi + 1.0);
                    let (mut mean, mut lse) = (0.0, f64::NEG_INFINITY);
                    for (b, w) in draws {
                        let eta = margin(test, i, b);
                        let lambda = eta.exp();
                        mean += w * lambda;
                        lse = log_add_exp(lse, w.ln() + yi * eta - lambda - log_fact);
                    }
                    ((yi - mean / total).powi(2), lse - log_total)
                })
                .reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
            Ok(TestSummary {
                accuracy: None,
                log_lik_per_datum: ll / n as f64,
                rmse: Some((se / n as f64).sqrt()),
            })
        }
        ModelKind::Linreg => {
            let y = &problem.y_test;
            let d = test.dim();
            let (mut se, mut ll) = (0.0f64, 0.0f64);
            for (i, &yi) in y.iter().enumerate().take(n) {
                let mut mean = 0.0;
                let mut lse = f64::NEG_INFINITY;
                for (th, w) in draws {
                    let mu = margin(test, i, &th[..d]);
                    let g = th[d] as f64;
                    mean += w * mu;
                    let r = yi as f64 - mu;
                    let lp = -0.5 * (std::f64::consts::TAU.ln() + g) - 0.5 * r * r * (-g).exp();
                    lse = log_add_exp(lse, w.ln() + lp);
                }
                mean /= total;
                se += (yi as f64 - mean).powi(2);
                ll += lse - log_total;
            }
            Ok(TestSummary {
                accuracy: None,
                log_lik_per_datum: ll / n as f64,
                rmse: Some((se / n as f64).sqrt()),
            })
        }
        ModelKind::Gmm => {
            let mut ll = 0.0;
            for i in 0..n {
                let xi = test.y[i];
                let mut lse = f64::NEG_INFINITY;
                for (th, w) in draws {
                    let m =
                        TiedMixture::paper(std::slice::from_ref(&xi)).map_err(|e| e.to_string())?;
                    lse = log_add_exp(lse, w.ln() + sgld::models::Model::log_lik(&m, th, &[0]));
                }
                ll += lse - log_total;
            }
            Ok(TestSummary {
                accuracy: None,
                log_lik_per_datum: ll / n as f64,
                rmse: None,
            })
        }
    }
}

fn problem_kind(p: &Problem) -> ModelKind {
    p.kind()
}
