//! §5.1: SGLD on the tied-means mixture — Figure 1 (exact posterior beside the SGLD
//! estimate), Figure 2 left (stochastic-gradient noise against injected noise over the
//! run) and Figure 2 right (Metropolis–Hastings rejection probability of the Langevin
//! proposal against the step size).

use std::fmt::Write as _;

use rand_core::{Rng, SeedableRng};
use sgld::Sgld;
use sgld::gradient::{GradientEstimator, MiniBatch, sample_batch};
use sgld::models::{Model, TiedMixture};
use sgld::noise::{DefaultRng, fill_normal};
use sgld::schedule::{Polynomial, Schedule};

use super::Context;
use crate::plot::{self, Heat, Panel, Series};

const N: usize = 100;
/// The grid of Figure 1 and of the total-variation distance.
const GRID: (f64, f64, f64, f64, usize) = (-1.5, 2.5, -3.0, 3.0, 60);

/// The two paper modes: (θ₁, θ₂) = (0, 1) and (1, −1).
const MODES: [(f64, f64); 2] = [(0.0, 1.0), (1.0, -1.0)];

fn draw_data(seed: u64) -> Vec<f32> {
    let mut rng = DefaultRng::seed_from_u64(seed);
    let mut z = vec![0.0f32; N];
    fill_normal(&mut rng, &mut z);
    z.iter()
        .map(|&v| {
            let second = rng.next_u64() & 1 == 1;
            v * 2f32.sqrt() + if second { 1.0 } else { 0.0 }
        })
        .collect()
}

/// Cell masses of a density on the grid from its log values at cell centres.
fn exact_grid(model: &TiedMixture<'_>) -> Vec<f64> {
    let (x0, x1, y0, y1, k) = GRID;
    let all: Vec<usize> = (0..N).collect();
    let mut lp = Vec::with_capacity(k * k);
    for r in 0..k {
        for c in 0..k {
            let t1 = x0 + (c as f64 + 0.5) * (x1 - x0) / k as f64;
            let t2 = y0 + (r as f64 + 0.5) * (y1 - y0) / k as f64;
            let th = [t1 as f32, t2 as f32];
            lp.push(model.log_prior(&th) + model.log_lik(&th, &all));
        }
    }
    let m = lp.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = lp.iter().map(|l| (l - m).exp()).collect();
    let s: f64 = w.iter().sum();
    w.iter().map(|v| v / s).collect()
}

fn cell(t1: f64, t2: f64) -> Option<usize> {
    let (x0, x1, y0, y1, k) = GRID;
    let c = ((t1 - x0) / (x1 - x0) * k as f64).floor();
    let r = ((t2 - y0) / (y1 - y0) * k as f64).floor();
    (c >= 0.0 && r >= 0.0 && (c as usize) < k && (r as usize) < k)
        .then(|| r as usize * k + c as usize)
}

fn centre(i: usize) -> (f64, f64) {
    let (x0, x1, y0, y1, k) = GRID;
    let (r, c) = (i / k, i % k);
    (
        x0 + (c as f64 + 0.5) * (x1 - x0) / k as f64,
        y0 + (r as f64 + 0.5) * (y1 - y0) / k as f64,
    )
}

/// Which paper mode a point is nearer to.
fn basin(t1: f64, t2: f64) -> usize {
    let d = |m: (f64, f64)| (t1 - m.0).powi(2) + (t2 - m.1).powi(2);
    usize::from(d(MODES[1]) < d(MODES[0]))
}

fn tv(p: &[f64], q: &[f64]) -> f64 {
    0.5 * p.iter().zip(q).map(|(a, b)| (a - b).abs()).sum::<f64>()
}

fn basin_mass(p: &[f64]) -> [f64; 2] {
    let mut m = [0.0; 2];
    for (i, v) in p.iter().enumerate() {
        let (a, b) = centre(i);
        m[basin(a, b)] += v;
    }
    m
}

/// Runs the experiment into `ctx.out`.
pub fn run(ctx: &Context) -> Result<(), String> {
    let sweeps: u64 = if ctx.quick { 300 } else { 10_000 };
    let steps = sweeps * N as u64;
    let x = draw_data(ctx.seed);
    let model = TiedMixture::paper(&x).map_err(|e| e.to_string())?;
    let est = MiniBatch::new(&model);
    let schedule = Polynomial::from_range(0.01, 0.0001, 0.55, steps).map_err(|e| e.to_string())?;

    // --- Figure 1 and Figure 2 left: the paper's run.
    let mut rng = DefaultRng::seed_from_u64(ctx.seed ^ 0x5EED);
    let mut theta = [0.0f32; 2];
    let mut scratch = [0.0f32; Sgld::scratch_len(2)];
    let mut state = Sgld::init(&mut theta, &mut scratch).map_err(|e| e.to_string())?;
    let burn = steps / 100;
    let k = GRID.4;
    let mut hist = vec![0.0f64; k * k];
    let mut kept = 0usize;
    let mut batch = [0usize; 1];
    let all: Vec<usize> = (0..N).collect();
    let mut per_datum = vec![[0.0f32; 2]; N];
    let (mut log_t, mut sg1, mut sg2, mut inj) = (vec![], vec![], vec![], vec![]);
    let mut next_log = 1u64;
    let mut crossover: Option<u64> = None;
    let mut draws_t1 = Vec::new();
    for t in 0..steps {
        let eps = schedule.step_size(t);
        if t + 1 >= next_log || t + 1 == steps {
            // V(θ) = N² Cov_i(∇ log p(x_i|θ)) for batch size 1; the noise of the gradient
            // step has variance (ε/2)² V.
            for (i, g) in per_datum.iter_mut().enumerate() {
                *g = [0.0; 2];
                model.add_log_lik_grad(state.theta(), &[i], g);
            }
            let mean: [f64; 2] =
                [0, 1].map(|j| per_datum.iter().map(|g| g[j] as f64).sum::<f64>() / N as f64);
            let var: [f64; 2] = [0, 1].map(|j| {
                per_datum
                    .iter()
                    .map(|g| (g[j] as f64 - mean[j]).powi(2))
                    .sum::<f64>()
                    / N as f64
            });
            let h = eps as f64 / 2.0;
            log_t.push((t + 1) as f64);
            sg1.push(h * h * (N * N) as f64 * var[0]);
            sg2.push(h * h * (N * N) as f64 * var[1]);
            inj.push(eps as f64);
            if crossover.is_none() && h * h * (N * N) as f64 * var[0].max(var[1]) < eps as f64 {
                crossover = Some(t + 1);
            }
            next_log = ((next_log as f64) * 1.05).ceil() as u64 + 1;
        }
        sample_batch(&mut rng, N, &mut batch).map_err(|e| e.to_string())?;
        let info = Sgld::new()
            .step(&mut state, &est, &batch, eps, &mut rng)
            .map_err(|e| e.to_string())?;
        if info.non_finite {
            return Err(format!("the chain went non-finite at step {}", t + 1));
        }
        if t >= burn {
            let (a, b) = (state.theta()[0] as f64, state.theta()[1] as f64);
            if let Some(c) = cell(a, b) {
                hist[c] += eps as f64;
            }
            kept += 1;
            if t % 10 == 0 {
                draws_t1.push((a, b, eps as f64));
            }
        }
    }
    let total: f64 = hist.iter().sum();
    let sgld_p: Vec<f64> = hist.iter().map(|v| v / total).collect();
    let exact = exact_grid(&model);
    // Exact samples of the same size from the grid posterior.
    let mut cdf = exact.clone();
    for i in 1..cdf.len() {
        cdf[i] += cdf[i - 1];
    }
    let mut iid = vec![0.0f64; k * k];
    let mut urng = DefaultRng::seed_from_u64(ctx.seed ^ 0x11D);
    for _ in 0..kept {
        let u = (urng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let i = cdf.partition_point(|&c| c < u).min(cdf.len() - 1);
        iid[i] += 1.0;
    }
    let iid: Vec<f64> = iid.iter().map(|v| v / kept as f64).collect();
    let (tv_sgld, tv_iid) = (tv(&exact, &sgld_p), tv(&exact, &iid));
    let (m_exact, m_sgld, m_iid) = (basin_mass(&exact), basin_mass(&sgld_p), basin_mass(&iid));

    let heat = |title: &str, z: &[f64]| Heat {
        title: title.into(),
        x: (GRID.0, GRID.1),
        y: (GRID.2, GRID.3),
        z: z.to_vec(),
        nx: k,
        ny: k,
        labels: ("theta1".into(), "theta2".into()),
        z_label: "posterior mass per cell".into(),
    };
    plot::heat_maps(
        &ctx.out.join("figure1"),
        &[
            heat("True posterior (grid)", &exact),
            heat("SGLD estimate (step-size weighted)", &sgld_p),
        ],
    )?;
    let centres: Vec<(f64, f64)> = (0..k * k).map(centre).collect();
    let c1: Vec<f64> = centres.iter().map(|c| c.0).collect();
    let c2: Vec<f64> = centres.iter().map(|c| c.1).collect();
    plot::write_csv(
        &ctx.out.join("figure1.csv"),
        &[
            ("theta1", &c1),
            ("theta2", &c2),
            ("exact", &exact),
            ("sgld", &sgld_p),
            ("exact_samples", &iid),
        ],
    )?;
    plot::line_chart(
        &ctx.out.join("figure2_left"),
        &[Panel {
            title: "Noise variances over the run".into(),
            x_label: "iteration".into(),
            y_label: "variance".into(),
            log_x: true,
            log_y: true,
            series: vec![
                Series {
                    label: "stochastic gradient noise, theta1".into(),
                    x: log_t.clone(),
                    y: sg1.clone(),
                    ..Series::default()
                },
                Series {
                    label: "stochastic gradient noise, theta2".into(),
                    x: log_t.clone(),
                    y: sg2.clone(),
                    ..Series::default()
                },
                Series {
                    label: "injected noise".into(),
                    x: log_t.clone(),
                    y: inj.clone(),
                    thick: true,
                    ..Series::default()
                },
            ],
            ..Panel::default()
        }],
    )?;
    plot::write_csv(
        &ctx.out.join("figure2_left.csv"),
        &[
            ("iteration", &log_t),
            ("sg_noise_var_theta1", &sg1),
            ("sg_noise_var_theta2", &sg2),
            ("injected_noise_var", &inj),
        ],
    )?;

    // --- Figure 2 right: the rejection probability of the Langevin proposal, step sizes
    // decreasing exponentially from 1e-2 to 1e-8, averaged per sweep.
    let rej_sweeps: u64 = if ctx.quick { 200 } else { 10_000 };
    let rej_steps = rej_sweeps * N as u64;
    let full = |th: &[f32], g: &mut [f32]| est.estimate(th, &all, g);
    let log_post = |th: &[f32]| model.log_prior(th) + model.log_lik(th, &all);
    let mut rng = DefaultRng::seed_from_u64(ctx.seed ^ 0xAE7);
    let mut theta = [state.theta()[0], state.theta()[1]];
    let mut scratch = [0.0f32; Sgld::scratch_len(2)];
    let mut st = Sgld::init(&mut theta, &mut scratch).map_err(|e| e.to_string())?;
    let (mut sweep_eps, mut sweep_rej) = (vec![], vec![]);
    let (mut acc_rej, mut acc_eps) = (0.0f64, 0.0f64);
    let ln_ratio = (1e-8f64 / 1e-2).ln();
    for t in 0..rej_steps {
        let eps = 1e-2 * (ln_ratio * t as f64 / (rej_steps - 1) as f64).exp();
        let before = [st.theta()[0], st.theta()[1]];
        sample_batch(&mut rng, N, &mut batch).map_err(|e| e.to_string())?;
        Sgld::new()
            .step(&mut st, &est, &batch, eps as f32, &mut rng)
            .map_err(|e| e.to_string())?;
        let after = [st.theta()[0], st.theta()[1]];
        let (mut g0, mut g1) = ([0.0f32; 2], [0.0f32; 2]);
        full(&before, &mut g0);
        full(&after, &mut g1);
        // log q(b|a) = −|b − a − (ε/2)g(a)|²/(2ε) + const
        let lq = |b: &[f32; 2], a: &[f32; 2], g: &[f32; 2]| {
            -(0..2)
                .map(|j| (b[j] as f64 - a[j] as f64 - 0.5 * eps * g[j] as f64).powi(2))
                .sum::<f64>()
                / (2.0 * eps)
        };
        let log_a = log_post(&after) - log_post(&before) + lq(&before, &after, &g1)
            - lq(&after, &before, &g0);
        acc_rej += 1.0 - log_a.min(0.0).exp();
        acc_eps += eps;
        if (t + 1) % N as u64 == 0 {
            sweep_eps.push(acc_eps / N as f64);
            sweep_rej.push(acc_rej / N as f64);
            acc_rej = 0.0;
            acc_eps = 0.0;
        }
    }
    plot::line_chart(
        &ctx.out.join("figure2_right"),
        &[Panel {
            title: "Rejection probability vs step size".into(),
            x_label: "step size".into(),
            y_label: "average rejection probability per sweep".into(),
            log_x: true,
            log_y: false,
            series: vec![Series {
                label: String::new(),
                x: sweep_eps.clone(),
                y: sweep_rej.clone(),
                ..Series::default()
            }],
            ..Panel::default()
        }],
    )?;
    plot::write_csv(
        &ctx.out.join("figure2_right.csv"),
        &[
            ("step_size", &sweep_eps),
            ("rejection_probability", &sweep_rej),
        ],
    )?;
    let rej_at = |target: f64| {
        let i = sweep_eps
            .iter()
            .enumerate()
            .min_by(|a, b| {
                (a.1.ln() - target.ln())
                    .abs()
                    .total_cmp(&(b.1.ln() - target.ln()).abs())
            })
            .map(|p| p.0);
        i.map(|i| (sweep_eps[i], sweep_rej[i]))
            .unwrap_or((f64::NAN, f64::NAN))
    };

    // Posterior moments from the kept draws (step-size weighted).
    let wsum: f64 = draws_t1.iter().map(|d| d.2).sum();
    let m1 = draws_t1.iter().map(|d| d.0 * d.2).sum::<f64>() / wsum;
    let m2 = draws_t1.iter().map(|d| d.1 * d.2).sum::<f64>() / wsum;
    let ex1: f64 = exact.iter().enumerate().map(|(i, p)| centre(i).0 * p).sum();
    let ex2: f64 = exact.iter().enumerate().map(|(i, p)| centre(i).1 * p).sum();

    let mut r = String::new();
    let _ = writeln!(
        r,
        "# §5.1 Mixture of Gaussians (Welling & Teh 2011, Figures 1 and 2)\n"
    );
    let _ = writeln!(
        r,
        "Setting: {N} points drawn with θ₁ = 0, θ₂ = 1 (σ₁² = 10, σ₂² = 1, σₓ² = 2); batch size 1; {sweeps} sweeps ({steps} steps); \
         ε from 0.01 to 0.0001 with γ = 0.55; the first {burn} steps discarded; seed {}.{}\n",
        ctx.seed,
        if ctx.quick {
            " **Quick run: fewer sweeps than the paper.**"
        } else {
            ""
        }
    );
    let _ = writeln!(r, "## Figure 1: true and estimated posterior\n");
    let _ = writeln!(r, "![Figure 1](figure1.png)\n");
    let _ = writeln!(
        r,
        "Both on a {k}×{k} grid over θ₁ ∈ [{}, {}], θ₂ ∈ [{}, {}].\n",
        GRID.0, GRID.1, GRID.2, GRID.3
    );
    let _ = writeln!(
        r,
        "| | total-variation distance to the exact grid posterior | mass nearer (0, 1) | mass nearer (1, −1) |"
    );
    let _ = writeln!(r, "|---|---|---|---|");
    let _ = writeln!(
        r,
        "| exact (grid) | 0 | {:.3} | {:.3} |",
        m_exact[0], m_exact[1]
    );
    let _ = writeln!(
        r,
        "| SGLD, {kept} draws, step-size weighted | {tv_sgld:.4} | {:.3} | {:.3} |",
        m_sgld[0], m_sgld[1]
    );
    let _ = writeln!(
        r,
        "| exact samples, same number | {tv_iid:.4} | {:.3} | {:.3} |",
        m_iid[0], m_iid[1]
    );
    let _ = writeln!(
        r,
        "\nPosterior mean: SGLD (θ₁, θ₂) = ({m1:.3}, {m2:.3}); exact grid ({ex1:.3}, {ex2:.3}).\n"
    );
    let _ = writeln!(
        r,
        "The paper gives no number for Figure 1; it states that \"the estimated posterior distribution is very accurate\". \
         The SGLD draws are autocorrelated, so their TV distance exceeds that of as many independent exact samples; the gap is the \
         price of the correlation and of the discretisation.\n"
    );
    let _ = writeln!(r, "## Figure 2 (left): the two phases\n");
    let _ = writeln!(r, "![Figure 2 left](figure2_left.png)\n");
    match crossover {
        Some(t) => {
            let _ = writeln!(
                r,
                "The variance of the stochastic-gradient noise, (ε/2)²·V(θ) with V(θ) = N²·Cov_i ∇log p(x_i|θ), falls below the injected \
                 variance ε at iteration {t} of {steps}: before it SGLD behaves like stochastic optimisation, after it like Langevin \
                 dynamics — the paper's \"two phases\".\n"
            );
        }
        None => {
            let _ = writeln!(
                r,
                "The stochastic-gradient noise stayed above the injected noise for the whole run.\n"
            );
        }
    }
    let _ = writeln!(
        r,
        "## Figure 2 (right): rejection probability against step size\n"
    );
    let _ = writeln!(r, "![Figure 2 right](figure2_right.png)\n");
    let _ = writeln!(
        r,
        "{rej_sweeps} sweeps with ε decreasing exponentially from 1e-2 to 1e-8. For each SGLD move θ → θ′ the Metropolis–Hastings \
         rejection probability 1 − min(1, p(θ′|X) q(θ|θ′) / p(θ|X) q(θ′|θ)) of the Langevin proposal q(·|θ) = N(θ + ε/2·∇log p(θ|X), εI) \
         (full-data gradient) is averaged per sweep.\n"
    );
    let _ = writeln!(
        r,
        "| step size | average rejection probability |\n|---|---|"
    );
    for target in [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8] {
        let (e, p) = rej_at(target);
        let _ = writeln!(r, "| {e:.1e} | {p:.2e} |");
    }
    let _ = writeln!(
        r,
        "\nThe paper shows this only as a figure: the rejection probability decreasing to zero as the step size decreases."
    );
    std::fs::write(ctx.out.join("report.md"), r)
        .map_err(|e| format!("cannot write report.md: {e}"))?;
    crate::out!(
        "gmm: TV(SGLD, exact) = {tv_sgld:.4} (exact samples of the same size: {tv_iid:.4}); mass near (0,1) / (1,-1): SGLD {:.3} / {:.3}, exact {:.3} / {:.3}",
        m_sgld[0],
        m_sgld[1],
        m_exact[0],
        m_exact[1]
    );
    Ok(())
}
