//! Handout 6, §4: Bayesian linear regression with the Normal–inverse-gamma prior
//! (`μ = 0`, `V = 100`, `φ = ψ = 1`) in `w = (β, γ = log σ²)` — Figure 4.1 (SGD traces
//! against the exact MLE for several batch sizes), Figure 4.2 (SGLD histograms against
//! the exact posterior densities for several batch sizes, τ = 1) and Figure 4.3 (the same
//! at batch 100 for several temperatures).
//!
//! The handout does not give its data; ours: `N = 1000` rows, `x = (1, z₁, z₂)` with
//! `z ~ N(0, 1)`, `β* = (1, 2, −1)`, `σ* = 0.5`. Its learning rate `ηₜ` is our `ε/2`
//! (Algorithm 21: `w + η∇ + √(2ητ)·N(0, 1)`).

use std::fmt::Write as _;

use rayon::prelude::*;
use sgld::Sgld;
use sgld::gradient::{MiniBatch, sample_batch};
use sgld::models::LinearRegression;
use sgld::noise::{default_rng, fill_normal};

use super::Context;
use crate::exact::NigPosterior;
use crate::plot::{self, Panel, Series};
use crate::sample::chain_seed;

const N: usize = 1000;
const D: usize = 3;
const BETA: [f32; D] = [1.0, 2.0, -1.0];
const SIGMA: f32 = 0.5;
const NAMES: [&str; D + 1] = ["β₀ (intercept)", "β₁", "β₂", "γ = log σ²"];
const BATCHES: [usize; 3] = [1, 10, 100];
const TEMPERATURES: [f32; 4] = [0.5, 1.0, 2.0, 4.0];
/// SGD step (ε = 2η): stable for `ε·λ_max(A)/2 < 2`, `λ_max ≈ N/σ² = 4000`.
const SGD_EPS: f32 = 1e-4;
/// SGLD step: small enough that batch 100 is nearly exact; at batch 1 the mini-batch
/// noise inflates the variance by about `ε·(N/n)·λ/4` — the handout's point.
const SGLD_EPS: f32 = 1e-6;

/// The synthetic data set: dense rows with the intercept column, and responses.
fn data(seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut z = vec![0.0f32; N * (D - 1)];
    let mut e = vec![0.0f32; N];
    let mut rng = default_rng(chain_seed(seed, 0x11_4E));
    fill_normal(&mut rng, &mut z);
    fill_normal(&mut rng, &mut e);
    let mut x = Vec::with_capacity(N * D);
    let mut y = Vec::with_capacity(N);
    for i in 0..N {
        let row = [1.0, z[2 * i], z[2 * i + 1]];
        x.extend_from_slice(&row);
        y.push(row.iter().zip(&BETA).map(|(a, b)| a * b).sum::<f32>() + SIGMA * e[i]);
    }
    (x, y)
}

/// Runs SGLD (or SGD at `tau = 0`) from 0 with constant `eps` and batch `n`; returns
/// every `keep`-th state after `burn_in` steps, `D + 1` floats each.
#[allow(clippy::too_many_arguments)]
fn chain(
    model: &LinearRegression<'_>,
    n: usize,
    eps: f32,
    tau: f32,
    steps: u64,
    burn_in: u64,
    keep: u64,
    seed: u64,
) -> Result<Vec<f32>, String> {
    let d = D + 1;
    let sampler = Sgld::new()
        .with_temperature(tau)
        .map_err(|e| e.to_string())?;
    let mut theta = vec![0.0f32; d];
    let mut scratch = vec![0.0f32; Sgld::scratch_len(d)];
    let mut state = Sgld::init(&mut theta, &mut scratch).map_err(|e| e.to_string())?;
    let est = MiniBatch::new(model);
    let mut rng = default_rng(seed);
    let mut batch = vec![0usize; n];
    let mut out = Vec::new();
    for t in 0..steps {
        sample_batch(&mut rng, N, &mut batch).map_err(|e| e.to_string())?;
        let info = sampler
            .step(&mut state, &est, &batch, eps, &mut rng)
            .map_err(|e| e.to_string())?;
        if info.non_finite {
            return Err(format!(
                "batch {n}, τ = {tau}: non-finite at step {}",
                t + 1
            ));
        }
        if t >= burn_in && (t - burn_in).is_multiple_of(keep) {
            out.extend_from_slice(state.theta());
        }
    }
    Ok(out)
}

/// Histogram density of `values` over `[lo, hi]` in `bins` bins: (centres, density).
fn histogram(
    values: impl Iterator<Item = f64>,
    lo: f64,
    hi: f64,
    bins: usize,
) -> (Vec<f64>, Vec<f64>) {
    let w = (hi - lo) / bins as f64;
    let mut counts = vec![0.0f64; bins];
    let mut total = 0.0;
    for v in values {
        total += 1.0;
        let k = ((v - lo) / w).floor();
        if k >= 0.0 && (k as usize) < bins {
            counts[k as usize] += 1.0;
        }
    }
    let centres = (0..bins).map(|k| lo + (k as f64 + 0.5) * w).collect();
    let density = counts.iter().map(|c| c / (total * w).max(1.0)).collect();
    (centres, density)
}

fn mean_sd(v: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = v.clone().count() as f64;
    let m = v.clone().sum::<f64>() / n;
    let var = v.map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, var.sqrt())
}

/// Density panels: one per parameter, a histogram per run plus the exact density.
fn density_panels(
    runs: &[(String, Vec<f32>)],
    post: &NigPosterior,
    extra: &dyn Fn(usize) -> Vec<Series>,
) -> Vec<Panel> {
    let (mean, sd) = (post.mean(), post.sd());
    (0..D + 1)
        .map(|j| {
            let spread = runs
                .iter()
                .map(|(_, d)| mean_sd(d.iter().skip(j).step_by(D + 1).map(|&v| v as f64)).1)
                .fold(sd[j], f64::max);
            let (lo, hi) = (mean[j] - 4.5 * spread, mean[j] + 4.5 * spread);
            let mut series: Vec<Series> = runs
                .iter()
                .map(|(label, d)| {
                    let (x, y) = histogram(
                        d.iter().skip(j).step_by(D + 1).map(|&v| v as f64),
                        lo,
                        hi,
                        60,
                    );
                    Series {
                        label: label.clone(),
                        x,
                        y,
                        ..Series::default()
                    }
                })
                .collect();
            let xs: Vec<f64> = (0..=300)
                .map(|k| lo + (hi - lo) * k as f64 / 300.0)
                .collect();
            series.push(Series {
                label: "exact posterior".into(),
                y: xs.iter().map(|&t| post.marginal_pdf(j, t)).collect(),
                x: xs,
                thick: true,
                ..Series::default()
            });
            series.extend(extra(j));
            Panel {
                title: NAMES[j].into(),
                x_label: "value".into(),
                y_label: "density".into(),
                series,
                ..Panel::default()
            }
        })
        .collect()
}

/// Per run and parameter: the chain's mean and sd beside the exact ones.
fn write_summary(
    path: &std::path::Path,
    key: &str,
    keys: &[f64],
    runs: &[(String, Vec<f32>)],
    mean: &[f64],
    sd: &[f64],
) -> Result<(), String> {
    let mut cols: Vec<Vec<f64>> = vec![vec![]; 6];
    for (k, (_, t)) in keys.iter().zip(runs) {
        for j in 0..D + 1 {
            let (m, s) = mean_sd(t.iter().skip(j).step_by(D + 1).map(|&v| v as f64));
            for (c, v) in cols.iter_mut().zip([*k, j as f64, m, s, mean[j], sd[j]]) {
                c.push(v);
            }
        }
    }
    plot::write_csv(
        path,
        &[
            (key, &cols[0]),
            ("param", &cols[1]),
            ("mean", &cols[2]),
            ("sd", &cols[3]),
            ("exact_mean", &cols[4]),
            ("exact_sd", &cols[5]),
        ],
    )
}

/// Runs the experiment into `ctx.out`.
pub fn run(ctx: &Context) -> Result<(), String> {
    let (x, y) = data(ctx.seed);
    // The data set itself, for `sgld sample|compare --model linreg --train data.csv`
    // (the intercept column included: run those with the default features).
    let col = |j: usize| -> Vec<f64> { x.iter().skip(j).step_by(D).map(|&v| v as f64).collect() };
    let yy: Vec<f64> = y.iter().map(|&v| v as f64).collect();
    plot::write_csv(
        &ctx.out.join("data.csv"),
        &[
            ("one", &col(0)),
            ("z1", &col(1)),
            ("z2", &col(2)),
            ("y", &yy),
        ],
    )?;
    let (v, phi, psi) = (100.0f32, 1.0f32, 1.0f32);
    let model = LinearRegression::new(&x, &y, D, v, phi, psi).map_err(|e| e.to_string())?;
    let post = NigPosterior::new(&x, &y, D, v as f64, phi as f64, psi as f64)?;
    let mle = NigPosterior::mle(&x, &y, D)?;
    let (mean, sd) = (post.mean(), post.sd());
    // MAP in (β, γ): β = μₙ, e^γ = bₙ/(N/2 + d/2 + φ) (the gradient of eq. 4.1–4.2 at 0).
    let mut map = post.mu.clone();
    map.push((post.b / (N as f64 / 2.0 + D as f64 / 2.0 + phi as f64)).ln());
    let scale = if ctx.quick { 10 } else { 1 };
    let mut rep = String::from("# Handout 6, §4: Bayesian linear regression by SGD and SGLD\n\n");
    let _ = writeln!(
        rep,
        "Data (`data.csv`): N = {N}, x = (1, z₁, z₂), z ~ N(0, 1), β* = {BETA:?}, σ* = {SIGMA} (the handout does not give its data). Prior: NIG with μ = 0, V = 100, φ = ψ = 1, sampled in (β, log σ²). Step ε = 2η (the handout's learning rate η).{}\n",
        if ctx.quick {
            " **Quick run** (a tenth of the steps)."
        } else {
            ""
        }
    );

    // Figure 4.1: SGD traces.
    let sgd_steps = 20_000 / scale as u64;
    let traces: Vec<(usize, Vec<f32>)> = BATCHES
        .par_iter()
        .map(|&n| {
            chain(
                &model,
                n,
                SGD_EPS,
                0.0,
                sgd_steps,
                0,
                1,
                chain_seed(ctx.seed, n as u64),
            )
            .map(|t| (n, t))
        })
        .collect::<Result<_, _>>()?;
    let stride = (sgd_steps as usize / 2000).max(1);
    let panels: Vec<Panel> = (0..D + 1)
        .map(|j| {
            let mut series: Vec<Series> = traces
                .iter()
                .map(|(n, t)| {
                    let idx: Vec<usize> = (0..sgd_steps as usize).step_by(stride).collect();
                    Series {
                        label: format!("SGD, batch {n}"),
                        x: idx.iter().map(|&k| (k + 1) as f64).collect(),
                        y: idx.iter().map(|&k| t[k * (D + 1) + j] as f64).collect(),
                        ..Series::default()
                    }
                })
                .collect();
            series.push(Series {
                label: "exact MLE".into(),
                x: vec![1.0, sgd_steps as f64],
                y: vec![mle[j]],
                reference: true,
                ..Series::default()
            });
            Panel {
                title: NAMES[j].into(),
                x_label: "iteration".into(),
                y_label: "value".into(),
                log_x: true,
                series,
                ..Panel::default()
            }
        })
        .collect();
    plot::line_chart(&ctx.out.join("figure_4_1"), &panels)?;
    let _ = writeln!(
        rep,
        "## Figure 4.1 — SGD against the exact MLE\n\n{sgd_steps} steps at ε = {SGD_EPS:e} from 0 (SGD on the log posterior, whose optimum, the MAP, the table also gives: the prior and the Jacobian of γ = log σ² move it from the MLE). Mean over the last half of each trace, and its sd (the oscillation from the gradient noise):\n\n| parameter | MLE | MAP | {} |\n|---|---|---|{}",
        BATCHES.map(|n| format!("batch {n}")).join(" | "),
        "---|".repeat(BATCHES.len())
    );
    for j in 0..D + 1 {
        let cells: Vec<String> = traces
            .iter()
            .map(|(_, t)| {
                let (m, s) = mean_sd(
                    t.iter()
                        .skip(j)
                        .step_by(D + 1)
                        .skip(sgd_steps as usize / 2)
                        .map(|&v| v as f64),
                );
                format!("{m:.4} ± {s:.4}")
            })
            .collect();
        let _ = writeln!(
            rep,
            "| {} | {:.4} | {:.4} | {} |",
            NAMES[j],
            mle[j],
            map[j],
            cells.join(" | ")
        );
    }
    rep += "\n![Figure 4.1](figure_4_1.svg)\n\n";
    let mut cols: Vec<Vec<f64>> = vec![vec![]; 6];
    for (n, t) in &traces {
        for j in 0..D + 1 {
            let (m, s) = mean_sd(
                t.iter()
                    .skip(j)
                    .step_by(D + 1)
                    .skip(sgd_steps as usize / 2)
                    .map(|&v| v as f64),
            );
            for (c, v) in cols
                .iter_mut()
                .zip([*n as f64, j as f64, m, s, mle[j], map[j]])
            {
                c.push(v);
            }
        }
    }
    plot::write_csv(
        &ctx.out.join("figure_4_1.csv"),
        &[
            ("batch", &cols[0]),
            ("param", &cols[1]),
            ("sgd_mean", &cols[2]),
            ("sgd_sd", &cols[3]),
            ("mle", &cols[4]),
            ("map", &cols[5]),
        ],
    )?;

    // Figure 4.2: SGLD, τ = 1, several batch sizes.
    // The burn-in is not shortened in the quick run: γ needs ~50k steps to arrive from 0.
    let (steps, burn) = (if ctx.quick { 500_000 } else { 2_000_000 }, 100_000);
    let by_batch: Vec<(String, Vec<f32>)> = BATCHES
        .par_iter()
        .map(|&n| {
            chain(
                &model,
                n,
                SGLD_EPS,
                1.0,
                steps,
                burn,
                10,
                chain_seed(ctx.seed, 100 + n as u64),
            )
            .map(|t| (format!("SGLD, batch {n}"), t))
        })
        .collect::<Result<_, _>>()?;
    plot::line_chart(
        &ctx.out.join("figure_4_2"),
        &density_panels(&by_batch, &post, &|_| vec![]),
    )?;
    let _ = writeln!(
        rep,
        "## Figure 4.2 — SGLD against the exact posterior, τ = 1\n\n{steps} steps at ε = {SGLD_EPS:e}, the first {burn} discarded, every 10th kept. Posterior mean and sd, exact and by batch size (smaller batches inflate the variance by about ε·(N/n)·λ/4 — the handout's observation that larger batches are closer):\n\n| parameter | exact | {} |\n|---|---|{}",
        BATCHES.map(|n| format!("batch {n}")).join(" | "),
        "---|".repeat(BATCHES.len())
    );
    for j in 0..D + 1 {
        let cells: Vec<String> = by_batch
            .iter()
            .map(|(_, t)| {
                let (m, s) = mean_sd(t.iter().skip(j).step_by(D + 1).map(|&v| v as f64));
                format!("{m:.4} ± {s:.4}")
            })
            .collect();
        let _ = writeln!(
            rep,
            "| {} | {:.4} ± {:.4} | {} |",
            NAMES[j],
            mean[j],
            sd[j],
            cells.join(" | ")
        );
    }
    rep += "\n![Figure 4.2](figure_4_2.svg)\n\n";
    write_summary(
        &ctx.out.join("figure_4_2.csv"),
        "batch",
        &BATCHES.map(|n| n as f64),
        &by_batch,
        &mean,
        &sd,
    )?;

    // Figure 4.3: batch 100, several temperatures.
    let by_tau: Vec<(String, Vec<f32>)> = TEMPERATURES
        .par_iter()
        .enumerate()
        .map(|(k, &tau)| {
            chain(
                &model,
                100,
                SGLD_EPS,
                tau,
                steps,
                burn,
                10,
                chain_seed(ctx.seed, 200 + k as u64),
            )
            .map(|t| (format!("SGLD, τ = {tau}"), t))
        })
        .collect::<Result<_, _>>()?;
    plot::line_chart(
        &ctx.out.join("figure_4_3"),
        &density_panels(&by_tau, &post, &|_| vec![]),
    )?;
    let _ = writeln!(
        rep,
        "## Figure 4.3 — SGLD at batch 100 for several temperatures\n\nThe chain targets p(w|data)^(1/τ); on this nearly Gaussian posterior its sds grow as √τ. Ratio sd(τ)/sd(exact, τ = 1), against √τ:\n\n| parameter | {} |\n|---|{}",
        TEMPERATURES
            .map(|t| format!("τ = {t} (√τ = {:.3})", t.sqrt()))
            .join(" | "),
        "---|".repeat(TEMPERATURES.len())
    );
    for j in 0..D + 1 {
        let cells: Vec<String> = by_tau
            .iter()
            .map(|(_, t)| {
                let (_, s) = mean_sd(t.iter().skip(j).step_by(D + 1).map(|&v| v as f64));
                format!("{:.3}", s / sd[j])
            })
            .collect();
        let _ = writeln!(rep, "| {} | {} |", NAMES[j], cells.join(" | "));
    }
    rep += "\n![Figure 4.3](figure_4_3.svg)\n";
    write_summary(
        &ctx.out.join("figure_4_3.csv"),
        "tau",
        &TEMPERATURES.map(|t| t as f64),
        &by_tau,
        &mean,
        &sd,
    )?;
    std::fs::write(ctx.out.join("report.md"), rep)
        .map_err(|e| format!("cannot write report.md: {e}"))
}
