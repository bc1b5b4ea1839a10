//! Lasri & Chaoui: Bayesian logistic regression (prior `N(0, I)`) by SGLD, SGHD and SGD
//! on the bank-marketing data (their Tables 1–2), and on two toy sets — linearly
//! separable (1500 points) and circles (700 points) — with decision-boundary figures and
//! trace plots of SGLD against SGHD (their Figures 1–3).
//!
//! Their protocol, where they give it: batch 10, 5000 iterations, `εₜ = a(b + t)^{−γ}`
//! with `a = 0.01, b = 500, γ = 0.6` on the bank data; `a = 0.1, b = 40, γ = 0.7` and
//! batches of 750 / 50 on the toy sets; accuracies as mean ± sd over the posterior
//! samples (the last 1000 iterations); SGHD's mass matrix the covariance of the SGLD
//! samples. Where they do not: the split (sklearn's `train_test_split` default, 75/25,
//! random), the encoding (one-hot categoricals, numerics standardised with training
//! statistics, a bias), SGHD's leapfrog steps (10), the toy generators (two Gaussian
//! blobs; sklearn-style circles with factor 0.5 and noise 0.1, given the quadratic
//! features `x₁², x₂², x₁x₂` so that a linear boundary can separate them), and the toy
//! runs' length (5000 iterations, as on the bank data). In place of their NUTS
//! reference: MALA on the full data.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use rand_core::{Rng, SeedableRng};
use sgld::gradient::{MiniBatch, sample_batch};
use sgld::models::{Gaussian, LogisticDense};
use sgld::noise::{DefaultRng, fill_normal};
use sgld::sampler::{Metric, Sampler, Sghd};
use sgld::schedule::{Polynomial, Schedule};
use sgld::{ChainState, Sgld};

use super::Context;
use crate::diagnostics;
use crate::plot::{self, Heat, Panel, Series};
use crate::sample::chain_seed;

const KEEP: usize = 1000;
const LEAPFROG: u32 = 10;

/// A dense design with ±1 labels; the last column is the bias.
struct Design {
    x: Vec<f32>,
    y: Vec<f32>,
    d: usize,
    names: Vec<String>,
}

impl Design {
    fn len(&self) -> usize {
        self.y.len()
    }
    fn rows(&self, idx: &[usize]) -> Design {
        let mut x = Vec::with_capacity(idx.len() * self.d);
        for &i in idx {
            x.extend_from_slice(&self.x[i * self.d..(i + 1) * self.d]);
        }
        Design {
            x,
            y: idx.iter().map(|&i| self.y[i]).collect(),
            d: self.d,
            names: self.names.clone(),
        }
    }
    /// Fraction of rows classified correctly by `θ` (sign of `θᵀx`).
    fn accuracy(&self, theta: &[f32]) -> f64 {
        let ok = self
            .x
            .chunks_exact(self.d)
            .zip(&self.y)
            .filter(|(r, y)| {
                let s: f32 = r.iter().zip(theta).map(|(a, b)| a * b).sum();
                (s >= 0.0) == (**y > 0.0)
            })
            .count();
        ok as f64 / self.len() as f64
    }
}

const NUMERIC: [&str; 7] = [
    "age", "balance", "day", "duration", "campaign", "pdays", "previous",
];

/// Reads `bank.csv`: the numeric columns raw, every other column one-hot (levels
/// sorted), `deposit` as the label, a trailing bias column.
fn load_bank(path: &Path) -> Result<Design, String> {
    let mut r = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let header: Vec<String> = r
        .headers()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .iter()
        .map(str::to_string)
        .collect();
    let target = header
        .iter()
        .position(|h| h == "deposit")
        .ok_or_else(|| format!("{}: no `deposit` column", path.display()))?;
    let records: Vec<csv::StringRecord> = r
        .records()
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if records.is_empty() {
        return Err(format!("{}: no rows", path.display()));
    }
    // Levels of each categorical column.
    let mut levels: Vec<Vec<String>> = vec![vec![]; header.len()];
    for rec in &records {
        for (c, v) in rec.iter().enumerate() {
            if c != target
                && !NUMERIC.contains(&header[c].as_str())
                && !levels[c].iter().any(|l| l == v)
            {
                levels[c].push(v.to_string());
            }
        }
    }
    let mut names = Vec::new();
    for (c, h) in header.iter().enumerate() {
        if c == target {
            continue;
        }
        if NUMERIC.contains(&h.as_str()) {
            names.push(h.clone());
        } else {
            levels[c].sort();
            names.extend(levels[c].iter().map(|l| format!("{h}={l}")));
        }
    }
    names.push("bias".into());
    let d = names.len();
    let mut x = Vec::with_capacity(records.len() * d);
    let mut y = Vec::with_capacity(records.len());
    for (i, rec) in records.iter().enumerate() {
        for (c, v) in rec.iter().enumerate() {
            if c == target {
                y.push(match v {
                    "yes" => 1.0,
                    "no" => -1.0,
                    other => {
                        return Err(format!(
                            "{}: row {}: deposit {other:?} is not yes/no",
                            path.display(),
                            i + 2
                        ));
                    }
                });
            } else if NUMERIC.contains(&header[c].as_str()) {
                x.push(v.trim().parse::<f32>().map_err(|_| {
                    format!(
                        "{}: row {}: {} = {v:?} is not a number",
                        path.display(),
                        i + 2,
                        header[c]
                    )
                })?);
            } else {
                x.extend(levels[c].iter().map(|l| if l == v { 1.0 } else { 0.0 }));
            }
        }
        x.push(1.0);
    }
    Ok(Design { x, y, d, names })
}

/// Standardises the numeric columns of `train` and `test` with `train`'s mean and sd.
fn standardise(train: &mut Design, test: &mut Design) {
    let d = train.d;
    for j in 0..train.names.len() {
        if !NUMERIC.contains(&train.names[j].as_str()) {
            continue;
        }
        let n = train.len() as f64;
        let m = train
            .x
            .iter()
            .skip(j)
            .step_by(d)
            .map(|&v| v as f64)
            .sum::<f64>()
            / n;
        let s = (train
            .x
            .iter()
            .skip(j)
            .step_by(d)
            .map(|&v| (v as f64 - m).powi(2))
            .sum::<f64>()
            / n)
            .sqrt()
            .max(1e-12);
        for set in [&mut *train, &mut *test] {
            for v in set.x.iter_mut().skip(j).step_by(d) {
                *v = ((*v as f64 - m) / s) as f32;
            }
        }
    }
}

fn shuffled(n: usize, rng: &mut DefaultRng) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        perm.swap(i, j);
    }
    perm
}

/// A run: every iterate (`d` floats each) and the sampling seconds.
struct Trace {
    theta: Vec<f32>,
    seconds: f64,
    d: usize,
}

impl Trace {
    /// The last `k` iterates.
    fn last(&self, k: usize) -> impl Iterator<Item = &[f32]> {
        let n = self.theta.len() / self.d;
        self.theta.chunks_exact(self.d).skip(n.saturating_sub(k))
    }
    /// Bulk ESS of each parameter over the last `k` iterates.
    fn ess(&self, k: usize) -> Vec<f64> {
        (0..self.d)
            .map(|j| {
                let v: Vec<f64> = self.last(k).map(|r| r[j] as f64).collect();
                diagnostics::ess_bulk(&[v])
            })
            .collect()
    }
}

/// Runs `sampler` from 0 with the schedule for `iters` iterations, recording every iterate.
fn trace<S: Sampler>(
    sampler: &S,
    model: &LogisticDense<'_, Gaussian>,
    schedule: &Polynomial,
    batch: usize,
    iters: usize,
    seed: u64,
) -> Result<Trace, String> {
    let d = sgld::models::Model::dim(model);
    let n = sgld::models::Model::len(model);
    let est = MiniBatch::new(model);
    let mut theta = vec![0.0f32; d];
    let mut scratch = vec![0.0f32; sampler.scratch_floats(d)];
    let mut state = sampler
        .start(&mut theta, &mut scratch)
        .map_err(|e| e.to_string())?;
    let mut rng = DefaultRng::seed_from_u64(seed);
    let mut idx = vec![0usize; batch];
    let mut out = Vec::with_capacity(iters * d);
    let t0 = Instant::now();
    for t in 0..iters {
        sample_batch(&mut rng, n, &mut idx).map_err(|e| e.to_string())?;
        let info = sampler
            .advance(
                &mut state,
                &est,
                &idx,
                schedule.step_size(t as u64),
                &mut rng,
            )
            .map_err(|e| e.to_string())?;
        if info.non_finite {
            return Err(format!("non-finite step at iteration {}", t + 1));
        }
        out.extend_from_slice(state.theta());
    }
    Ok(Trace {
        theta: out,
        seconds: t0.elapsed().as_secs_f64(),
        d,
    })
}

/// The Cholesky factor of the covariance of the last `KEEP` iterates (plus a ridge of
/// 10⁻⁶ of the mean variance), the mass matrix of SGHD.
fn covariance_factor(t: &Trace) -> Result<Vec<f32>, String> {
    let d = t.d;
    let rows: Vec<&[f32]> = t.last(KEEP).collect();
    let k = rows.len() as f64;
    let mean: Vec<f64> = (0..d)
        .map(|j| rows.iter().map(|r| r[j] as f64).sum::<f64>() / k)
        .collect();
    let mut c = vec![0.0f64; d * d];
    for r in &rows {
        for i in 0..d {
            for j in 0..=i {
                c[i * d + j] += (r[i] as f64 - mean[i]) * (r[j] as f64 - mean[j]) / (k - 1.0);
            }
        }
    }
    let ridge = 1e-6 * (0..d).map(|i| c[i * d + i]).sum::<f64>() / d as f64 + 1e-12;
    for i in 0..d {
        c[i * d + i] += ridge;
    }
    sgld::linalg::cholesky(&mut c, d).map_err(|e| format!("SGHD mass matrix: {e}"))?;
    Ok(c.iter().map(|&v| v as f32).collect())
}

/// Mean and sd of the accuracy over the last `KEEP` iterates.
fn accuracy(t: &Trace, data: &Design) -> (f64, f64) {
    let acc: Vec<f64> = t.last(KEEP).map(|th| data.accuracy(th)).collect();
    let n = acc.len() as f64;
    let m = acc.iter().sum::<f64>() / n;
    let s = (acc.iter().map(|a| (a - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    (m, s)
}

/// MALA on the full training data — the exact reference in place of the paper's NUTS:
/// the step adapts (Robbins–Monro on log ε towards acceptance 0.574) over the first half
/// of the iterations and is then frozen; the second half is the sample.
fn mala_reference(train: &Design, iters: usize, seed: u64) -> Result<(Trace, f64, f64), String> {
    let prior = Gaussian::new(1.0).map_err(|e| e.to_string())?;
    let model =
        LogisticDense::new(&train.x, &train.y, train.d, prior).map_err(|e| e.to_string())?;
    let mala = sgld::sampler::Mala::new(&model);
    let d = train.d;
    let mut theta = vec![0.0f32; d];
    let mut scratch = vec![0.0f32; sgld::sampler::Mala::<()>::scratch_len(d)];
    let mut state = mala
        .init(&mut theta, &mut scratch)
        .map_err(|e| e.to_string())?;
    let mut rng = DefaultRng::seed_from_u64(seed);
    let mut log_eps = (1.0 / train.len() as f64).ln();
    let (mut out, mut accepted) = (Vec::with_capacity(iters * d), 0usize);
    let t0 = Instant::now();
    for t in 0..iters {
        let info = mala
            .step(&mut state, log_eps.exp() as f32, &mut rng)
            .map_err(|e| e.to_string())?;
        if t < iters / 2 {
            log_eps += (info.accept_prob - 0.574) / ((t + 1) as f64).powf(0.6);
        } else {
            accepted += usize::from(info.accepted);
        }
        out.extend_from_slice(state.theta());
    }
    let trace = Trace {
        theta: out,
        seconds: t0.elapsed().as_secs_f64(),
        d,
    };
    Ok((
        trace,
        log_eps.exp(),
        accepted as f64 / (iters - iters / 2) as f64,
    ))
}

/// SGLD, SGD and SGHD (mass from the SGLD run) on one design.
struct Runs {
    sgld: Trace,
    sgd: Trace,
    sghd: Trace,
}

fn three_runs(
    train: &Design,
    schedule: &Polynomial,
    batch: usize,
    iters: usize,
    seed: u64,
) -> Result<Runs, String> {
    let prior = Gaussian::new(1.0).map_err(|e| e.to_string())?;
    let model =
        LogisticDense::new(&train.x, &train.y, train.d, prior).map_err(|e| e.to_string())?;
    let sgld = trace(
        &Sgld::new(),
        &model,
        schedule,
        batch,
        iters,
        chain_seed(seed, 1),
    )?;
    let sgd_sampler = Sgld::new()
        .with_temperature(0.0)
        .map_err(|e| e.to_string())?;
    let sgd = trace(
        &sgd_sampler,
        &model,
        schedule,
        batch,
        iters,
        chain_seed(seed, 2),
    )?;
    let l = covariance_factor(&sgld)?;
    let sghd_sampler =
        Sghd::new(Metric::Cholesky(&l), train.d, LEAPFROG).map_err(|e| e.to_string())?;
    let sghd = trace(
        &sghd_sampler,
        &model,
        schedule,
        batch,
        iters,
        chain_seed(seed, 3),
    )?;
    Ok(Runs { sgld, sgd, sghd })
}

fn trace_panels(runs: &[(&str, &Trace)], params: &[(usize, String)], k: usize) -> Vec<Panel> {
    params
        .iter()
        .map(|(j, name)| Panel {
            title: name.clone(),
            x_label: "iteration (last samples)".into(),
            y_label: "value".into(),
            series: runs
                .iter()
                .map(|(label, t)| {
                    let v: Vec<f64> = t.last(k).map(|r| r[*j] as f64).collect();
                    Series {
                        label: label.to_string(),
                        x: (0..v.len()).map(|i| i as f64).collect(),
                        y: v,
                        ..Series::default()
                    }
                })
                .collect(),
            ..Panel::default()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// The two toy sets: raw 2-D points, labels, and the design (with features and bias).
fn toy(name: &str, rng: &mut DefaultRng) -> (Vec<[f32; 2]>, Design) {
    let (n, circles) = if name == "separable" {
        (1500, false)
    } else {
        (700, true)
    };
    let mut z = vec![0.0f32; 2 * n];
    fill_normal(rng, &mut z);
    let mut pts = Vec::with_capacity(n);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let label = if i % 2 == 0 { 1.0f32 } else { -1.0 };
        let p = if circles {
            let a = (rng.next_u64() >> 11) as f32 / (1u64 << 53) as f32 * std::f32::consts::TAU;
            let r = if label > 0.0 { 0.5 } else { 1.0 };
            [
                r * a.cos() + 0.1 * z[2 * i],
                r * a.sin() + 0.1 * z[2 * i + 1],
            ]
        } else {
            let c = 2.0 * label;
            [c + 0.8 * z[2 * i], c + 0.8 * z[2 * i + 1]]
        };
        pts.push(p);
        y.push(label);
    }
    let (x, names): (Vec<f32>, Vec<String>) = if circles {
        (
            pts.iter()
                .flat_map(|p| [p[0], p[1], p[0] * p[0], p[1] * p[1], p[0] * p[1], 1.0])
                .collect(),
            ["x1", "x2", "x1^2", "x2^2", "x1*x2", "bias"]
                .map(String::from)
                .to_vec(),
        )
    } else {
        (
            pts.iter().flat_map(|p| [p[0], p[1], 1.0]).collect(),
            ["x1", "x2", "bias"].map(String::from).to_vec(),
        )
    };
    let d = names.len();
    (pts, Design { x, y, d, names })
}

/// Posterior-predictive `P(y = 1 | x)` over a grid, averaged over the last 500 iterates.
fn boundary(t: &Trace, circles: bool, lo: f64, hi: f64, cells: usize, title: String) -> Heat {
    let draws: Vec<&[f32]> = t.last(500).collect();
    let mut z = Vec::with_capacity(cells * cells);
    for iy in 0..cells {
        for ix in 0..cells {
            let (a, b) = (
                lo + (hi - lo) * (ix as f64 + 0.5) / cells as f64,
                lo + (hi - lo) * (iy as f64 + 0.5) / cells as f64,
            );
            let f: Vec<f64> = if circles {
                vec![a, b, a * a, b * b, a * b, 1.0]
            } else {
                vec![a, b, 1.0]
            };
            let p = draws
                .iter()
                .map(|th| {
                    let s: f64 = th.iter().zip(&f).map(|(w, x)| *w as f64 * x).sum();
                    1.0 / (1.0 + (-s).exp())
                })
                .sum::<f64>()
                / draws.len() as f64;
            z.push(p);
        }
    }
    Heat {
        title,
        x: (lo, hi),
        y: (lo, hi),
        z,
        nx: cells,
        ny: cells,
        labels: ("x1".into(), "x2".into()),
        z_label: "P(y = 1 | x), posterior mean".into(),
    }
}

/// Runs the experiment into `ctx.out`.
pub fn run(ctx: &Context) -> Result<(), String> {
    let dir = ctx
        .data_dir
        .as_deref()
        .ok_or("bank needs the data directory")?;
    let all = load_bank(&dir.join("bank_marketing/bank.csv"))?;
    let mut rng = DefaultRng::seed_from_u64(chain_seed(ctx.seed, 0xBA4C));
    let perm = shuffled(all.len(), &mut rng);
    let n_train = all.len() * 3 / 4;
    let (mut train, mut test) = (all.rows(&perm[..n_train]), all.rows(&perm[n_train..]));
    standardise(&mut train, &mut test);
    let iters = if ctx.quick { 2000 } else { 5000 };
    let schedule = Polynomial::new(0.01, 500.0, 0.6).map_err(|e| e.to_string())?;
    let runs = three_runs(&train, &schedule, 10, iters, ctx.seed)?;
    let mala_iters = if ctx.quick { 2000 } else { 10_000 };
    let (mala, mala_eps, mala_acc) = mala_reference(&train, mala_iters, chain_seed(ctx.seed, 4))?;

    let mut rep =
        String::from("# Lasri & Chaoui: SGLD and SGHD for Bayesian logistic regression\n\n");
    let _ = writeln!(
        rep,
        "## Bank marketing (Tables 1–2)\n\n`bank.csv` ({} rows, {} features after one-hot encoding, plus a bias), a random 75/25 split ({} / {} rows), numerics standardised with the training statistics. Prior N(0, I); batch 10; {iters} iterations of εₜ = 0.01·(500 + t)^−0.6; SGHD with {LEAPFROG} leapfrog steps and the covariance of the last {KEEP} SGLD samples as mass. Accuracy: mean ± sd over the last {KEEP} iterates.{}\n",
        all.len(),
        all.d - 1,
        train.len(),
        test.len(),
        if ctx.quick { " **Quick run.**" } else { "" }
    );
    rep += "| method | train acc. | test acc. | paper train | paper test | ESS/s (median over params) |\n|---|---|---|---|---|---|\n";
    let paper = [
        ("SGLD", "0.801 ± 0.001", "0.788 ± 0.003"),
        ("SGHD", "0.713 ± 0.042", "0.708 ± 0.040"),
        ("SGD", "–", "–"),
        ("MALA (exact)", "NUTS 0.801 ± 0.001", "NUTS 0.790 ± 0.002"),
    ];
    let mut csv_cols: Vec<Vec<f64>> = vec![vec![]; 5];
    for ((name, ptr, pte), t) in paper.iter().zip([&runs.sgld, &runs.sghd, &runs.sgd, &mala]) {
        let (a, sa) = accuracy(t, &train);
        let (b, sb) = accuracy(t, &test);
        let ess = if *name == "SGD" {
            f64::NAN
        } else {
            median(t.ess(KEEP)) / t.seconds
        };
        let _ = writeln!(
            rep,
            "| {name} | {a:.3} ± {sa:.3} | {b:.3} ± {sb:.3} | {ptr} | {pte} | {} |",
            rate(ess)
        );
        for (c, v) in csv_cols.iter_mut().zip([a, sa, b, sb, ess]) {
            c.push(v);
        }
    }
    rep += "\nESS/s: each parameter's ESS over the last iterates, over the run's seconds; the median over parameters. SGD has none: an optimiser's iterates are not draws.\n";
    let _ = writeln!(
        rep,
        "\nMALA: {mala_iters} full-data iterations, the step adapted over the first half to {mala_eps:.2e} (acceptance {mala_acc:.2} after), the exact reference in place of the paper's NUTS.\n"
    );
    plot::write_csv(
        &ctx.out.join("accuracy.csv"),
        &[
            ("train_mean", &csv_cols[0]),
            ("train_sd", &csv_cols[1]),
            ("test_mean", &csv_cols[2]),
            ("test_sd", &csv_cols[3]),
            ("ess_per_second", &csv_cols[4]),
        ],
    )?;
    let params: Vec<(usize, String)> = (0..4).map(|j| (j, train.names[j].clone())).collect();
    plot::line_chart(
        &ctx.out.join("bank_traces"),
        &trace_panels(&[("SGLD", &runs.sgld), ("SGHD", &runs.sghd)], &params, KEEP),
    )?;
    rep += "`accuracy.csv` has these rows in this order (SGLD, SGHD, SGD, MALA). Trace plots of the first four parameters over the last 1000 iterations:\n\n![traces](bank_traces.svg)\n\n";

    // Toy sets.
    rep += "## Toy sets (Figures 1–3)\n\n| set | method | train acc. | ESS/s (median) | ESS (median, last 1000) |\n|---|---|---|---|---|\n";
    let toy_iters = if ctx.quick { 1000 } else { 5000 };
    let toy_schedule = Polynomial::new(0.1, 40.0, 0.7).map_err(|e| e.to_string())?;
    let mut heats = Vec::new();
    for (k, (name, batch)) in [("separable", 750usize), ("circles", 50)]
        .into_iter()
        .enumerate()
    {
        let mut trng = DefaultRng::seed_from_u64(chain_seed(ctx.seed, 0x70 + k as u64));
        let (_, design) = toy(name, &mut trng);
        let r = three_runs(
            &design,
            &toy_schedule,
            batch,
            toy_iters,
            chain_seed(ctx.seed, 10 + k as u64),
        )?;
        for (m, t) in [("SGLD", &r.sgld), ("SGHD", &r.sghd)] {
            let (a, _) = accuracy(t, &design);
            let ess = median(t.ess(KEEP.min(toy_iters / 2)));
            let _ = writeln!(
                rep,
                "| {name} | {m} | {a:.3} | {} | {ess:.0} |",
                rate(ess / t.seconds)
            );
        }
        let circles = name == "circles";
        let (lo, hi) = if circles { (-1.6, 1.6) } else { (-5.0, 5.0) };
        heats.push(boundary(
            &r.sgld,
            circles,
            lo,
            hi,
            80,
            format!("{name}: SGLD, P(y = 1 | x)"),
        ));
        heats.push(boundary(
            &r.sghd,
            circles,
            lo,
            hi,
            80,
            format!("{name}: SGHD, P(y = 1 | x)"),
        ));
        if !circles {
            let params = vec![(0, "θ₁ (x1)".to_string()), (1, "θ₂ (x2)".to_string())];
            plot::line_chart(
                &ctx.out.join("toy_traces"),
                &trace_panels(
                    &[("SGLD", &r.sgld), ("SGHD", &r.sghd)],
                    &params,
                    KEEP.min(toy_iters / 2),
                ),
            )?;
        }
    }
    plot::heat_maps(&ctx.out.join("toy_boundaries"), &heats)?;
    rep += "\nPosterior-predictive probability (decision boundary at 0.5), averaged over the last 500 iterates:\n\n![boundaries](toy_boundaries.svg)\n\nTrace plots on the separable set:\n\n![traces](toy_traces.svg)\n";
    std::fs::write(ctx.out.join("report.md"), rep)
        .map_err(|e| format!("cannot write report.md: {e}"))
}
/// An ESS per second for a table: three significant digits below 100 (a slow sampler's
/// rate is not rounded to 0), whole numbers above; "–" where there is none.
fn rate(v: f64) -> String {
    if !v.is_finite() {
        "–".into()
    } else if v == 0.0 {
        "0".into()
    } else if v < 100.0 {
        let decimals = (2 - v.abs().log10().floor() as i32).max(0) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::rate;

    #[test]
    fn rates_keep_three_significant_digits() {
        assert_eq!(rate(f64::NAN), "–");
        assert_eq!(rate(0.0), "0");
        assert_eq!(rate(0.012345), "0.0123");
        assert_eq!(rate(0.4), "0.400");
        assert_eq!(rate(45.67), "45.7");
        assert_eq!(rate(1234.5), "1234");
    }
}
