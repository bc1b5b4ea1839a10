//! §5.3: Bayesian ICA with natural-gradient SGLD and corrected Langevin — artificial data
//! (§5.3.1, Figures 4 and 5) and recorded EEG/MEG (§5.3.2, Figure 6).

use std::fmt::Write as _;
use std::time::Instant;

use rand_core::{Rng, SeedableRng};
use sgld::estimate::{MixingThinner, threshold_scratch_len};
use sgld::gradient::sample_batch;
use sgld::ica::Ica;
use sgld::noise::{DefaultRng, fill_normal};

use super::Context;
use crate::ica_tools::{
    amari_distance, components, fastica, instability, kurtosis, matmul, whiten,
};
use crate::plot::{self, Heat, Panel, Series};

/// Settings of one ICA run.
pub struct IcaPlan {
    /// SGLD iterations.
    pub sgld_steps: u64,
    /// `a` of `ε_t = a t^{-0.55}` (the paper: 4/N artificial, 0.1/N MEG).
    pub sgld_a: f64,
    /// Corrected-Langevin samples.
    pub mala_steps: u64,
    /// Its constant step (the paper: 0.1/N artificial, 1/N MEG).
    pub mala_eps: f64,
    /// Mini-batch size.
    pub batch: usize,
    /// Sampling-threshold target.
    pub alpha: f64,
    /// Prior precision λ.
    pub lambda: f64,
}

/// What one ICA run produced.
pub struct IcaRun {
    /// Channels.
    pub d: usize,
    /// Rows.
    pub n: usize,
    /// SGLD: iteration at which α fell below the target (if it did), and D₀ = ε there.
    pub threshold_at: Option<(u64, f64)>,
    /// Amari distance over time: (iteration, distance) for SGLD and MALA (when a true
    /// mixing is known).
    pub amari_sgld: Vec<(f64, f64)>,
    /// Likewise for MALA.
    pub amari_mala: Vec<(f64, f64)>,
    /// Kept SGLD samples (by mixing distance), each `d²`.
    pub sgld_samples: Vec<Vec<f64>>,
    /// Kept MALA samples (every k-th), each `d²`.
    pub mala_samples: Vec<Vec<f64>>,
    /// MALA acceptance rate.
    pub acceptance: f64,
    /// Samples (iterations) per second.
    pub sgld_per_second: f64,
    /// Likewise for MALA.
    pub mala_per_second: f64,
    /// Whitened data (the samplers' data), `n × d`.
    pub z: Vec<f64>,
}

/// A plotting range in two dimensions.
type Range2 = ((f64, f64), (f64, f64));

fn mean_var(samples: &[Vec<f64>], k: usize) -> (Vec<f64>, Vec<f64>) {
    let m = samples.len().max(1) as f64;
    let mean: Vec<f64> = (0..k)
        .map(|j| samples.iter().map(|s| s[j]).sum::<f64>() / m)
        .collect();
    let var = (0..k)
        .map(|j| {
            samples
                .iter()
                .map(|s| (s[j] - mean[j]).powi(2))
                .sum::<f64>()
                / m
        })
        .collect();
    (mean, var)
}

/// Runs FastICA, SGLD (until the threshold, then collecting by mixing distance) and
/// corrected Langevin from SGLD's last state, on whitened `x` (`n × d`). `truth` is the
/// mixing matrix of the whitened data, for the Amari distance.
pub fn run_ica(
    x: &[f64],
    d: usize,
    plan: &IcaPlan,
    truth: Option<&[f64]>,
    seed: u64,
) -> Result<IcaRun, String> {
    let n = x.len() / d;
    let wh = whiten(x, d);
    let zf: Vec<f32> = wh.z.iter().map(|&v| v as f32).collect();
    let ica = Ica::new(&zf, d, plan.lambda).map_err(|e| e.to_string())?;
    let eye: Vec<f64> = (0..d * d)
        .map(|k| if k / d == k % d { 1.0 } else { 0.0 })
        .collect();
    let (w0, _) = fastica(&wh.z, d, &eye, 500, 1e-9);
    let mut w = w0;
    let mut scratch = vec![0.0; Ica::scratch_len(d)];
    let mut rng = DefaultRng::seed_from_u64(seed);
    let mut batch = vec![0usize; plan.batch.min(n)];
    let nb = batch.len();
    let mut scores = vec![0.0f32; nb * d * d];
    let mut tscratch = vec![0.0; threshold_scratch_len(nb, d * d)];
    let amari_every = (plan.sgld_steps / 2000).max(1);
    // The threshold's eigenproblem is min(n, d²)-dimensional: check every 1000 steps
    // at most.
    let check_every = (plan.sgld_steps / 500).max(1000.min(plan.sgld_steps / 10).max(1));
    let mut run = IcaRun {
        d,
        n,
        threshold_at: None,
        amari_sgld: vec![],
        amari_mala: vec![],
        sgld_samples: vec![],
        mala_samples: vec![],
        acceptance: 0.0,
        sgld_per_second: 0.0,
        mala_per_second: 0.0,
        z: wh.z.clone(),
    };
    let mut thinner: Option<MixingThinner> = None;
    let t0 = Instant::now();
    for t in 1..=plan.sgld_steps {
        let eps = plan.sgld_a * (t as f64).powf(-0.55);
        sample_batch(&mut rng, n, &mut batch).map_err(|e| e.to_string())?;
        if !ica
            .sgld_step(&mut w, &batch, eps, &mut rng, &mut scratch)
            .map_err(|e| e.to_string())?
        {
            return Err(format!("SGLD went non-finite at iteration {t}"));
        }
        if run.threshold_at.is_none() && t % check_every == 0 {
            let th = ica
                .threshold(&w, &batch, eps, &mut scores, &mut scratch, &mut tscratch)
                .map_err(|e| e.to_string())?;
            if th.alpha < plan.alpha {
                run.threshold_at = Some((t, eps));
                thinner = Some(MixingThinner::new(eps).map_err(|e| e.to_string())?);
            }
        }
        if let Some(th) = thinner.as_mut()
            && th.push(eps)
        {
            run.sgld_samples.push(w.clone());
        }
        if let Some(a) = truth
            && t % amari_every == 0
        {
            run.amari_sgld.push((t as f64, amari_distance(&w, a, d)));
        }
    }
    run.sgld_per_second = plan.sgld_steps as f64 / t0.elapsed().as_secs_f64();
    if run.sgld_samples.len() < 10 {
        // The threshold was not met (or too late): keep the second half of the run at
        // every thinning point instead, and say so in the report.
        run.sgld_samples.clear();
        let mut w2 = w.clone();
        let extra = (plan.sgld_steps / 10).max(1000);
        let eps = plan.sgld_a * (plan.sgld_steps as f64).powf(-0.55);
        for k in 0..extra {
            sample_batch(&mut rng, n, &mut batch).map_err(|e| e.to_string())?;
            ica.sgld_step(&mut w2, &batch, eps, &mut rng, &mut scratch)
                .map_err(|e| e.to_string())?;
            if k % 10 == 0 {
                run.sgld_samples.push(w2.clone());
            }
        }
        w = w2;
    }

    // Corrected Langevin from SGLD's last W.
    let mut prop = vec![0.0; d * d];
    let keep_every = (plan.mala_steps / 20_000).max(1);
    let amari_every = (plan.mala_steps / 2000).max(1);
    let mut accepted = 0u64;
    let t0 = Instant::now();
    for t in 1..=plan.mala_steps {
        let info = ica
            .mala_step(&mut w, plan.mala_eps, &mut rng, &mut prop, &mut scratch)
            .map_err(|e| e.to_string())?;
        accepted += u64::from(info.accepted);
        if t % keep_every == 0 {
            run.mala_samples.push(w.clone());
        }
        if let Some(a) = truth
            && t % amari_every == 0
        {
            run.amari_mala.push((t as f64, amari_distance(&w, a, d)));
        }
    }
    run.mala_per_second = plan.mala_steps as f64 / t0.elapsed().as_secs_f64();
    run.acceptance = accepted as f64 / plan.mala_steps.max(1) as f64;
    Ok(run)
}

impl IcaRun {
    /// Instability indices (eq. 21) of SGLD and MALA; the data are whitened, var(xⱼ) = 1.
    pub fn instabilities(&self) -> (Vec<f64>, Vec<f64>) {
        let d = self.d;
        let ones = vec![1.0; d];
        let (_, v1) = mean_var(&self.sgld_samples, d * d);
        let (_, v2) = mean_var(&self.mala_samples, d * d);
        (instability(&v1, &ones, d), instability(&v2, &ones, d))
    }

    /// Kurtosis of each component recovered by the MALA posterior mean.
    pub fn kurtoses(&self) -> Vec<f64> {
        let (m, _) = mean_var(&self.mala_samples, self.d * self.d);
        components(&m, &self.z, self.d)
            .iter()
            .map(|c| kurtosis(c))
            .collect()
    }

    /// A 2-D histogram of entries `(a, b)` of the samples over a common range.
    fn hist2(samples: &[Vec<f64>], a: usize, b: usize, range: Range2, k: usize) -> Vec<f64> {
        let mut h = vec![0.0; k * k];
        for s in samples {
            let c = ((s[a] - range.0.0) / (range.0.1 - range.0.0) * k as f64).floor();
            let r = ((s[b] - range.1.0) / (range.1.1 - range.1.0) * k as f64).floor();
            if c >= 0.0 && r >= 0.0 && (c as usize) < k && (r as usize) < k {
                h[r as usize * k + c as usize] += 1.0;
            }
        }
        let t: f64 = h.iter().sum::<f64>().max(1.0);
        h.iter().map(|v| v / t).collect()
    }

    /// 2-D marginal histograms of SGLD and MALA on entries `(a, b)` over the range both
    /// cover, and their total-variation distance.
    pub fn marginals(&self, a: usize, b: usize, k: usize) -> (Vec<f64>, Vec<f64>, Range2, f64) {
        let all = self.sgld_samples.iter().chain(&self.mala_samples);
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for s in all {
            for (q, &idx) in [a, b].iter().enumerate() {
                lo[q] = lo[q].min(s[idx]);
                hi[q] = hi[q].max(s[idx]);
            }
        }
        let pad = |l: f64, h: f64| {
            let p = 0.05 * (h - l).max(1e-9);
            (l - p, h + p)
        };
        let range = (pad(lo[0], hi[0]), pad(lo[1], hi[1]));
        let h1 = Self::hist2(&self.sgld_samples, a, b, range, k);
        let h2 = Self::hist2(&self.mala_samples, a, b, range, k);
        let tv = 0.5 * h1.iter().zip(&h2).map(|(x, y)| (x - y).abs()).sum::<f64>();
        (h1, h2, range, tv)
    }

    /// The total-variation distance between the 2-D histograms of the first and second
    /// halves of the corrected-Langevin samples on entries `(a, b)`: the Monte Carlo
    /// noise floor for comparing two marginals.
    pub fn tv_halves(&self, a: usize, b: usize, k: usize) -> f64 {
        let (_, _, range, _) = self.marginals(a, b, k);
        let half = self.mala_samples.len() / 2;
        let h1 = Self::hist2(&self.mala_samples[..half], a, b, range, k);
        let h2 = Self::hist2(&self.mala_samples[half..], a, b, range, k);
        0.5 * h1.iter().zip(&h2).map(|(x, y)| (x - y).abs()).sum::<f64>()
    }
}

/// Heavy-tailed and Gaussian sources: 1000 × 6, three Laplace channels (kurtosis 6) and
/// three Gaussian, unit variance; mixed by `A = I + 0.5·G`.
fn artificial(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let d = 6;
    let mut rng = DefaultRng::seed_from_u64(seed);
    let mut g = vec![0.0f32; n * d + d * d];
    fill_normal(&mut rng, &mut g);
    let mut s = vec![0.0f64; n * d];
    for i in 0..n {
        for j in 0..d {
            s[i * d + j] = if j < 3 {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                -u.signum() * (1.0 - 2.0 * u.abs()).max(1e-300).ln() / 2f64.sqrt()
            } else {
                g[i * d + j] as f64
            };
        }
    }
    let a: Vec<f64> = (0..d * d)
        .map(|k| if k / d == k % d { 1.0 } else { 0.0 } + 0.5 * g[n * d + k] as f64)
        .collect();
    let mut x = vec![0.0; n * d];
    for i in 0..n {
        for r in 0..d {
            x[i * d + r] = (0..d).map(|c| a[r * d + c] * s[i * d + c]).sum();
        }
    }
    (x, a)
}

/// The values sorted from largest to smallest.
pub(crate) fn sorted_desc(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| b.total_cmp(a));
    v
}

fn amari_panel(title: &str, pts: &[(f64, f64)]) -> Panel {
    let x: Vec<f64> = pts.iter().map(|p| p.0).collect();
    let y: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let mut avg = Vec::with_capacity(y.len());
    let mut s = 0.0;
    for (k, v) in y.iter().enumerate() {
        s += v;
        avg.push(s / (k + 1) as f64);
    }
    let from = (x.len() / 20).min(x.len());
    Panel {
        title: title.into(),
        x_label: "iteration".into(),
        y_label: "Amari distance".into(),
        series: vec![
            Series {
                label: "current W".into(),
                x: x[from..].to_vec(),
                y: y[from..].to_vec(),
                ..Series::default()
            },
            Series {
                label: "online average".into(),
                x: x[from..].to_vec(),
                y: avg[from..].to_vec(),
                thick: true,
                ..Series::default()
            },
        ],
        ..Panel::default()
    }
}

/// Sorted instability indices of both samplers.
pub(crate) fn instability_panel(title: &str, sg: &[f64], ma: &[f64]) -> Panel {
    let idx: Vec<f64> = (1..=sg.len()).map(|i| i as f64).collect();
    Panel {
        title: title.into(),
        x_label: "component (sorted)".into(),
        y_label: "instability index".into(),
        log_y: true,
        series: vec![
            Series {
                label: "stochastic Langevin".into(),
                x: idx.clone(),
                y: sg.to_vec(),
                ..Series::default()
            },
            Series {
                label: "corrected Langevin".into(),
                x: idx,
                y: ma.to_vec(),
                ..Series::default()
            },
        ],
        ..Panel::default()
    }
}

/// §5.3.1 on artificial data.
pub fn run(ctx: &Context) -> Result<(), String> {
    let n = 1000;
    let (x, a) = artificial(n, ctx.seed);
    let nf = n as f64;
    let plan = IcaPlan {
        sgld_steps: if ctx.quick { 20_000 } else { 500_000 },
        sgld_a: 4.0 / nf,
        mala_steps: if ctx.quick { 2_000 } else { 500_000 },
        mala_eps: 0.1 / nf,
        batch: 100,
        alpha: 0.1,
        lambda: 1.0,
    };
    let d = 6;
    // The samplers see whitened data z = V(x − μ); the mixing of z is V·A.
    let wh = whiten(&x, d);
    let truth = matmul(&wh.v, &a, d);
    let r = run_ica(&x, d, &plan, Some(&truth), ctx.seed)?;
    let (ins_s, ins_m) = r.instabilities();
    let kurt = r.kurtoses();
    let final_amari = |v: &[(f64, f64)]| {
        v.iter().rev().take(v.len() / 2).map(|p| p.1).sum::<f64>() / (v.len() / 2).max(1) as f64
    };
    let (am_s, am_m) = (final_amari(&r.amari_sgld), final_amari(&r.amari_mala));
    plot::line_chart(
        &ctx.out.join("figure4"),
        &[
            amari_panel("Stochastic Langevin: Amari distance", &r.amari_sgld),
            amari_panel("Corrected Langevin: Amari distance", &r.amari_mala),
            instability_panel(
                "Instability index (sorted)",
                &sorted_desc(ins_s.clone()),
                &sorted_desc(ins_m.clone()),
            ),
        ],
    )?;
    let xs: Vec<f64> = r.amari_sgld.iter().map(|p| p.0).collect();
    let ys: Vec<f64> = r.amari_sgld.iter().map(|p| p.1).collect();
    let xm: Vec<f64> = r.amari_mala.iter().map(|p| p.0).collect();
    let ym: Vec<f64> = r.amari_mala.iter().map(|p| p.1).collect();
    plot::write_csv(
        &ctx.out.join("figure4_amari.csv"),
        &[
            ("sgld_iteration", &xs),
            ("sgld_amari", &ys),
            ("mala_iteration", &xm),
            ("mala_amari", &ym),
        ],
    )?;
    let comp: Vec<f64> = (0..d).map(|i| i as f64).collect();
    plot::write_csv(
        &ctx.out.join("figure4_instability.csv"),
        &[
            ("component", &comp),
            ("sgld", &ins_s),
            ("mala", &ins_m),
            ("kurtosis", &kurt),
        ],
    )?;
    let k = 40;
    let mut heats = vec![];
    let mut tvs = vec![];
    for (name, (ea, eb)) in [("W11-W12", (0, 1)), ("W11-W21", (0, d))] {
        let (h1, h2, range, tv) = r.marginals(ea, eb, k);
        tvs.push((name, tv, r.tv_halves(ea, eb, k)));
        let labels = (
            format!("W{}{}", ea / d + 1, ea % d + 1),
            format!("W{}{}", eb / d + 1, eb % d + 1),
        );
        heats.push(Heat {
            title: format!("SGLD {name}"),
            x: range.0,
            y: range.1,
            z: h1,
            nx: k,
            ny: k,
            labels: labels.clone(),
            z_label: "share of draws per cell".into(),
        });
        heats.push(Heat {
            title: format!("corrected Langevin {name}"),
            x: range.0,
            y: range.1,
            z: h2,
            nx: k,
            ny: k,
            labels,
            z_label: "share of draws per cell".into(),
        });
    }
    plot::heat_maps(&ctx.out.join("figure5"), &heats)?;

    let mut rep = String::new();
    let _ = writeln!(
        rep,
        "# §5.3.1 ICA on artificial data (Welling & Teh 2011, Figures 4 and 5)\n"
    );
    let _ = writeln!(
        rep,
        "Setting: {n} cases, 6 channels (three Laplace sources, kurtosis 6; three Gaussian) mixed by A = I + 0.5·G; the samplers see the \
         centred, whitened data. FastICA initialisation; SGLD with batch 100, ε_t = (4/N)·t^-0.55, {} iterations; samples collected by \
         mixing distance once the sampling threshold (eq. 20) falls below α = 0.1; corrected Langevin from SGLD's last W with ε = 0.1/N, \
         {} samples. Prior precision λ = 1. The SGLD step includes the drift correction Γ = (D+1)W that eq. 16 omits (see `sgld::ica`). \
         Seed {}.{}\n",
        plan.sgld_steps,
        plan.mala_steps,
        ctx.seed,
        if ctx.quick {
            " **Quick run: far fewer iterations than the paper.**"
        } else {
            ""
        }
    );
    match r.threshold_at {
        Some((t, e)) => {
            let _ = writeln!(
                rep,
                "The sampling threshold was met at iteration {t} (paper: around 10,000); D₀ = ε there = {e:.3e}; {} SGLD samples collected.\n",
                r.sgld_samples.len()
            );
        }
        None => {
            let _ = writeln!(
                rep,
                "The sampling threshold was not met; {} samples were taken from an extra run at the final step size.\n",
                r.sgld_samples.len()
            );
        }
    }
    let _ = writeln!(
        rep,
        "![Figure 4](figure4.png)\n\n![Figure 5](figure5.png)\n"
    );
    let _ = writeln!(rep, "| | SGLD | corrected Langevin |\n|---|---|---|");
    let _ = writeln!(
        rep,
        "| Amari distance (average over the second half) | {am_s:.4} | {am_m:.4} |"
    );
    let _ = writeln!(
        rep,
        "| samples per second | {:.0} | {:.0} |",
        r.sgld_per_second, r.mala_per_second
    );
    let _ = writeln!(rep, "| acceptance rate | – | {:.3} |", r.acceptance);
    let _ = writeln!(
        rep,
        "\n| component | kurtosis (posterior mean W) | instability, SGLD | instability, corrected Langevin |\n|---|---|---|---|"
    );
    let mut order: Vec<usize> = (0..d).collect();
    order.sort_by(|&i, &j| ins_m[i].total_cmp(&ins_m[j]));
    for &i in &order {
        let _ = writeln!(
            rep,
            "| {} | {:.2} | {:.3e} | {:.3e} |",
            i + 1,
            kurt[i],
            ins_s[i],
            ins_m[i]
        );
    }
    let stable: Vec<String> = order
        .iter()
        .take(3)
        .map(|&i| format!("{} (kurtosis {:.1})", i + 1, kurt[i]))
        .collect();
    let _ = writeln!(
        rep,
        "\nThe three most stable components (lowest instability under corrected Langevin) are {}; a Gaussian component has kurtosis 3, \
         the Laplace sources 6. The paper reports (figure only) that the three high-kurtosis components are stable, while the \
         Gaussian ones are unstable and differ between samplers and runs.\n",
        stable.join(", ")
    );
    for (name, tv, floor) in &tvs {
        let _ = writeln!(
            rep,
            "Total-variation distance between the SGLD and corrected-Langevin 2-D marginals on {name} ({k}×{k} grid): {tv:.3} \
             (between the two halves of the corrected-Langevin run: {floor:.3})."
        );
    }
    std::fs::write(ctx.out.join("report.md"), rep)
        .map_err(|e| format!("cannot write report.md: {e}"))?;
    crate::out!(
        "ica: Amari distance SGLD {am_s:.4}, corrected Langevin {am_m:.4}; acceptance {:.3}; {:.0} and {:.0} samples/s",
        r.acceptance,
        r.sgld_per_second,
        r.mala_per_second
    );
    Ok(())
}
