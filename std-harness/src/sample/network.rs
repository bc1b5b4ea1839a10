//! `--model mlp`: a one-hidden-layer network sampled as the Boston reproduction samples it
//! (Nado et al.), with what a network needs apart from the regressions:
//!
//! - inputs, and a regression target, standardised with the training rows' means and
//!   sds ([`Scaling`], recorded in summary.json so that the draws can predict);
//! - starts drawn as networks are initialised (He for the hidden layer), not around a
//!   mode: a network's posterior has many, all alike;
//! - `--step-size auto`: each value of a grid runs one chain on nine tenths of the
//!   training rows and the step with the best log predictive density on the held-out
//!   tenth (every tenth row) is taken;
//! - K-FAC as the default sampler (pSGLD and SGLD are the others);
//! - diagnostics that mean something: single weights are not identified (the hidden
//!   units permute), so R̂ and ESS are checked on the log density `lp__` and
//!   `log_precision`, and the weights are summarised by layer ([`Group`]).

use std::time::Instant;

use rand_core::SeedableRng;
use rayon::prelude::*;
use sgld::gradient::MiniBatch;
use sgld::math::{log_add_exp, sigmoid};
use sgld::models::{Mlp, Model, Noise};
use sgld::noise::{DefaultRng, fill_normal};
use sgld::schedule::Schedule;

use super::chains::{self, Chain, Sampled, Stretch};
pub use super::net_model::{describe, groups, names, noise};
use super::options::auto_thin;
use super::options::{SampleOptions, SamplerKind};
use super::progress::Bars;
use super::records::TestSummary;
pub use super::records::{GridPoint, Group, NetworkSummary, Scaling};
use super::samplers;
use super::seeds::Stream;
use super::warmup::{self, WarmupSummary};
use crate::spec::{BurnIn, StepSpec, Thin};

/// Steps per chain without `--steps`: the reproduction's 300 of burn-in and 1,000 more.
pub const DEFAULT_STEPS: u64 = super::options::NETWORK_STEPS;
/// The mini-batch without `--batch` (the reproduction's).
pub const DEFAULT_BATCH: usize = 32;
/// `--step-size auto` holds out every `HOLDOUT_EVERY`-th training row.
pub const HOLDOUT_EVERY: usize = 10;

/// A start as networks are initialised: the hidden layer `N(0, 2/D)` (He), the output
/// layer `N(0, 0.1²)`, `log λ = 0`.
pub fn start(net: &Mlp<'_>, seed: u64) -> Vec<f32> {
    let mut rng = DefaultRng::seed_from_u64(seed);
    let mut theta = vec![0.0f32; net.dim()];
    fill_normal(&mut rng, &mut theta);
    let hidden = net.width() * (net.d_in() + 1);
    let he = (2.0 / net.d_in() as f32).sqrt();
    for (j, t) in theta.iter_mut().enumerate() {
        *t *= if j < hidden { he } else { 0.1 };
    }
    if matches!(net.noise(), Noise::Learned { .. }) {
        theta[net.dim() - 1] = 0.0;
    }
    theta
}

/// The posterior predictive of weighted draws on the rows of `test`: accuracy
/// (classification) or RMSE of the predictive mean (regression), and the log predictive
/// density per datum; in the data's units when `y_sd` (the target's scale) is given.
pub fn predictive(test: &Mlp<'_>, draws: &[(Vec<f32>, f64)], y_sd: Option<f64>) -> TestSummary {
    let (x, y) = test.data();
    let d = test.d_in();
    let total: f64 = draws.iter().map(|w| w.1).sum();
    let log_total = total.ln();
    let bernoulli = matches!(test.noise(), Noise::Bernoulli);
    // Each draw's noise precision once, not once a row.
    let precisions: Vec<(f64, f64)> = draws.iter().map(|(t, _)| test.log_precision(t)).collect();
    let (hits, se, ll) = y
        .par_iter()
        .enumerate()
        .map(|(i, &yi)| {
            let row = &x[i * d..(i + 1) * d];
            let (mut mean, mut lse) = (0.0f64, f64::NEG_INFINITY);
            // One forward pass per draw gives the prediction and the density.
            for ((theta, w), &p) in draws.iter().zip(&precisions) {
                let f = test.predict_f64(theta, row);
                if bernoulli {
                    mean += w * sigmoid(f as f32) as f64;
                } else {
                    mean += w * f;
                    lse = log_add_exp(lse, w.ln() + test.output_log_lik(f, yi, p));
                }
            }
            mean /= total;
            if bernoulli {
                let p = if yi > 0.0 { mean } else { 1.0 - mean };
                (
                    usize::from((mean > 0.5) == (yi > 0.0)),
                    0.0,
                    p.max(1e-300).ln(),
                )
            } else {
                (0, (yi as f64 - mean).powi(2), lse - log_total)
            }
        })
        .reduce(|| (0, 0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    let n = y.len().max(1) as f64;
    let scale = y_sd.unwrap_or(1.0);
    TestSummary {
        accuracy: bernoulli.then(|| hits as f64 / n),
        log_lik_per_datum: ll / n - if bernoulli { 0.0 } else { scale.ln() },
        rmse: (!bernoulli).then(|| (se / n).sqrt() * scale),
    }
}

/// The step-size grid searched by `--step-size auto`: K-FAC's steps are in the units of
/// its Fisher preconditioner and pSGLD's in those of its RMS preconditioner, so theirs
/// do not depend on the data size; plain SGLD's stable step falls as `1/N`.
pub fn grid(sampler: SamplerKind, n: usize) -> Vec<f32> {
    match sampler {
        SamplerKind::Kfac => vec![0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0],
        SamplerKind::Psgld => vec![1e-5, 3e-5, 1e-4, 3e-4, 1e-3],
        _ => [0.005f32, 0.015, 0.05, 0.15, 0.5]
            .iter()
            .map(|c| c / n as f32)
            .collect(),
    }
}

/// Burn-in, thinning and length of every chain of a run.
#[derive(Debug, Clone, Copy)]
struct Protocol {
    steps: u64,
    burn_in: u64,
    thin: u64,
    batch: usize,
}

impl Protocol {
    fn of(cfg: &SampleOptions, n: usize) -> Self {
        let steps = cfg.steps.unwrap_or(DEFAULT_STEPS);
        // The reproduction's share: 300 of 1,300 steps.
        let burn_in = match cfg.burn_in {
            BurnIn::Steps(b) => b,
            BurnIn::Auto => 3 * steps / 13,
        };
        let thin = match cfg.thin {
            Thin::Every(k) => k,
            Thin::Auto => auto_thin(steps.saturating_sub(burn_in)),
        };
        Self {
            steps,
            burn_in,
            thin,
            batch: cfg.batch.unwrap_or(DEFAULT_BATCH).min(n),
        }
    }

    fn stretch<'s, S: Schedule>(&self, schedule: &'s S) -> Stretch<'s, S> {
        Stretch {
            schedule,
            steps: self.steps,
            total: self.steps,
            batch: self.batch,
            full: false,
            burn_in: BurnIn::Steps(self.burn_in),
            alpha: f64::INFINITY,
            temperature: 1.0, // no α check: the burn-in is fixed
            thin: self.thin,
            count_moves: false,
        }
    }
}

/// Runs `chains` on `net` with the configured sampler; returns its per-example gradients
/// per step.
fn advance<S: Schedule + Sync>(
    cfg: &SampleOptions,
    net: &Mlp<'_>,
    chains: &mut [Chain],
    stretch: &Stretch<'_, S>,
    bars: &[indicatif::ProgressBar],
) -> Result<f64, String> {
    let est = MiniBatch::new(net);
    let inputs = samplers::Inputs::network(net);
    let advance = samplers::Advance {
        chains,
        model: net,
        est: &est,
        stretch,
        bars,
    };
    samplers::build(cfg, &inputs, advance)
}

/// The rows of `net` split into nine tenths to fit and every tenth held out.
fn holdout(net: &Mlp<'_>) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
    let (x, y) = net.data();
    let d = net.d_in();
    let (mut xf, mut yf, mut xv, mut yv) = (vec![], vec![], vec![], vec![]);
    for (i, &yi) in y.iter().enumerate() {
        let (xs, ys) = if i % HOLDOUT_EVERY == HOLDOUT_EVERY - 1 {
            (&mut xv, &mut yv)
        } else {
            (&mut xf, &mut yf)
        };
        xs.extend_from_slice(&x[i * d..(i + 1) * d]);
        ys.push(yi);
    }
    (xf, yf, xv, yv)
}

/// `--step-size auto`: every grid value runs chain 0 (its start and stream) on the fitted
/// rows; the step whose draws give the held-out rows the highest log predictive density
/// wins (the smaller on a tie).
fn tune(
    cfg: &SampleOptions,
    net: &Mlp<'_>,
    proto: Protocol,
    start: &[f32],
) -> Result<(f32, Vec<GridPoint>), String> {
    let n = net.len();
    if n < 2 * HOLDOUT_EVERY {
        return Err(format!(
            "--step-size auto holds out every {HOLDOUT_EVERY}th training row to choose the step, and {n} rows are too few: give the step, e.g. --step-size const:{}",
            grid(cfg.sampler, n)[2]
        ));
    }
    let (xf, yf, xv, yv) = holdout(net);
    let d = net.d_in();
    let err = |e: sgld::Error| format!("the held-out split: {e}");
    let fit = Mlp::new(&xf, &yf, d, net.width(), net.prior_var(), net.noise()).map_err(err)?;
    let val = Mlp::new(&xv, &yv, d, net.width(), net.prior_var(), net.noise()).map_err(err)?;
    let proto = Protocol {
        batch: proto.batch.min(yf.len()),
        ..proto
    };
    let points: Vec<GridPoint> = grid(cfg.sampler, n)
        .into_par_iter()
        .map(|eps| -> Result<GridPoint, String> {
            let schedule = StepSpec::Const(eps as f64)
                .schedule(proto.steps)
                .map_err(|e| e.to_string())?;
            let mut chain = vec![Chain::new(
                0,
                start.to_vec(),
                Stream::Chain(0).seed(cfg.seed),
            )];
            advance(cfg, &fit, &mut chain, &proto.stretch(&schedule), &[])?;
            let ch = &chain[0];
            let mut draws = Vec::with_capacity(ch.kept());
            ch.draws.rows(0..ch.kept(), |_, row| {
                draws.push((row.to_vec(), 1.0));
                Ok(())
            })?;
            let score = if ch.failure.is_some() || draws.is_empty() {
                f64::NEG_INFINITY
            } else {
                predictive(&val, &draws, None).log_lik_per_datum
            };
            Ok(GridPoint {
                step_size: eps as f64,
                validation_log_lik: if score.is_finite() {
                    score
                } else {
                    f64::NEG_INFINITY
                },
            })
        })
        .collect::<Result<_, String>>()?;
    let best = points
        .iter()
        .fold(None::<&GridPoint>, |best, p| match best {
            Some(b) if b.validation_log_lik >= p.validation_log_lik => Some(b),
            _ if p.validation_log_lik.is_finite() => Some(p),
            b => b,
        })
        .ok_or_else(|| {
            format!(
                "--step-size auto: every step of the grid {:?} diverged on the held-out split; give a smaller step with --step-size const:EPS",
                grid(cfg.sampler, n)
            )
        })?;
    Ok((best.step_size as f32, points))
}

/// A network's chains with their starts and the step search.
pub struct NetworkRun {
    /// What the pipeline summarises.
    pub sampled: Sampled,
    /// Each chain's start.
    pub starts: Vec<Vec<f32>>,
    /// The step search of `--step-size auto`.
    pub step_grid: Vec<GridPoint>,
}

/// The chains of a network run: the starts, the step (searched or given), the chains.
pub fn run(
    cfg: &SampleOptions,
    net: &Mlp<'_>,
    names: &[String],
    bars: &Bars,
) -> Result<NetworkRun, String> {
    let proto = Protocol::of(cfg, net.len());
    let init = warmup::init_rows(cfg, names)?;
    let starts: Vec<Vec<f32>> = (0..cfg.chains)
        .map(|c| match &init {
            Some(rows) => rows[c.min(rows.len() - 1)].clone(),
            None => start(net, Stream::NetworkStart(c).seed(cfg.seed)),
        })
        .collect();
    let started = Instant::now();
    let (spec, grid_points, notes) = match cfg.given_step() {
        Some(spec) => (spec, vec![], vec![]),
        None => {
            let (eps, points) = tune(cfg, net, proto, &starts[0])?;
            let note = format!(
                "step size {eps} (auto): the best log predictive density on every {HOLDOUT_EVERY}th training row held out, of {}",
                points
                    .iter()
                    .map(|p| format!("{} -> {:.3}", p.step_size as f32, p.validation_log_lik))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            (StepSpec::Const(eps as f64), points, vec![note])
        }
    };
    let tuning = started.elapsed().as_secs_f64();
    let schedule = spec
        .schedule(proto.steps)
        .map_err(|e| format!("--step-size {spec}: {e}"))?;
    let mut chains = chains::from_starts(&starts, cfg.seed, Some(&cfg.out))?;
    chains::select(&mut chains, cfg.chain_ids.as_ref());
    bars.extend(proto.steps);
    let t0 = Instant::now();
    let grads = advance(cfg, net, &mut chains, &proto.stretch(&schedule), &bars.bars)?;
    let sampling = t0.elapsed().as_secs_f64();
    let last_eps = schedule.step_size(proto.steps.saturating_sub(1)) as f64;
    Ok(NetworkRun {
        sampled: Sampled {
            chains,
            burn_in: proto.burn_in,
            total_steps: proto.steps,
            warmup: WarmupSummary {
                preconditioner: match cfg.sampler {
                    SamplerKind::Kfac => "kfac",
                    SamplerKind::Psgld => "rmsprop",
                    _ => "none",
                }
                .into(),
                steps: proto.burn_in,
                ..WarmupSummary::given(cfg.sampler.name(), proto.batch, last_eps)
            },
            thin: proto.thin,
            batch: proto.batch,
            step_label: match cfg.given_step() {
                Some(s) => s.to_string(),
                None => "auto".into(),
            },
            grad_evals_per_step: grads * proto.batch as f64,
            seconds: tuning + sampling,
            sampling: (sampling, proto.steps),
            constant_step: matches!(spec, StepSpec::Const(_)),
            notes,
            warnings: vec![],
            alpha: None,
            stability: None,
            acceptance: None,
            divergent: None,
        },
        starts,
        step_grid: grid_points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::config::NetOutput;

    #[test]
    fn names_follow_the_parameter_order() {
        let n = names(&["a".into(), "b".into()], 2, noise(NetOutput::Gaussian));
        assert_eq!(
            n,
            [
                "w1[1:a]",
                "w1[1:b]",
                "b1[1]",
                "w1[2:a]",
                "w1[2:b]",
                "b1[2]",
                "w2[1]",
                "w2[2]",
                "b2",
                "log_precision"
            ]
        );
        let x = [0.0f32; 4];
        let y = [1.0f32, -1.0];
        let net = Mlp::new(&x, &y, 2, 2, 1.0, noise(NetOutput::Bernoulli)).unwrap();
        let n = names(&["a".into(), "b".into()], 2, net.noise());
        assert_eq!(n.len(), net.dim());
        assert_eq!(n.last().map(String::as_str), Some("b2"));
    }

    #[test]
    fn scaling_standardises_and_keeps_constant_columns() {
        let mut x = vec![1.0f32, 5.0, 3.0, 5.0, 5.0, 5.0];
        let mut y = vec![10.0f32, 20.0, 30.0];
        let s = Scaling::fit(&x, 2, Some(&y));
        s.inputs(&mut x);
        s.targets(&mut y);
        assert_eq!(s.x_sd[1], 1.0);
        let c0: Vec<f32> = x.iter().step_by(2).copied().collect();
        assert!((c0.iter().sum::<f32>()).abs() < 1e-6);
        assert!((c0.iter().map(|v| v * v).sum::<f32>() / 3.0 - 1.0).abs() < 1e-5);
        assert_eq!([x[1], x[3], x[5]], [0.0; 3]);
        assert!((y[0] + 1.2247449).abs() < 1e-5 && y[1].abs() < 1e-6);
    }

    /// The predictive of one draw is that draw's likelihood; of two equal draws, the same.
    #[test]
    fn predictive_of_equal_draws_is_the_likelihood() {
        let x = [0.5f32, -1.0, 2.0];
        let y = [0.3f32, -0.2, 1.1];
        let net = Mlp::new(&x, &y, 1, 3, 1.0, noise(NetOutput::Gaussian)).unwrap();
        let theta: Vec<f32> = (0..net.dim()).map(|j| 0.1 * j as f32 - 0.4).collect();
        let one = predictive(&net, &[(theta.clone(), 1.0)], Some(2.0));
        let two = predictive(
            &net,
            &[(theta.clone(), 0.3), (theta.clone(), 0.7)],
            Some(2.0),
        );
        let direct = net.log_lik(&theta, &[0, 1, 2]) / 3.0 - 2f64.ln();
        assert!((one.log_lik_per_datum - direct).abs() < 1e-9);
        assert!((two.log_lik_per_datum - direct).abs() < 1e-9);
        let se: f64 = (0..3)
            .map(|i| (y[i] as f64 - net.predict(&theta, &x[i..=i]) as f64).powi(2))
            .sum();
        assert!((one.rmse.unwrap() - 2.0 * (se / 3.0).sqrt()).abs() < 1e-6);
    }
}
