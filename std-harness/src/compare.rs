//! `sgld compare`: every sampler on one model and data set, side by side — ESS per
//! second, ESS per gradient evaluation, and the error of the posterior means and sds
//! against a reference (the closed form for `linreg`, a long MALA run otherwise).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::exact::NigPosterior;
use crate::plot::{self, Panel, Series};
use crate::sample::{self, ModelKind, Problem, SampleConfig, SamplerKind, Summary, Weighting};
use crate::spec::{BurnIn, PriorSpec, StepChoice, StepSpec, Thin};

/// What `sgld compare` runs.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The model, data, batch, steps, chains and seed (its sampler is ignored).
    pub base: SampleConfig,
    /// The samplers to compare.
    pub samplers: Vec<SamplerKind>,
    /// Steps of each MALA run (a full pass over the data each).
    pub mala_steps: u64,
}

/// The reference posterior: means and sds per parameter.
#[derive(Debug, Clone, Serialize)]
pub struct Reference {
    /// Where it came from (`exact` or `mala`).
    pub source: String,
    /// Means.
    pub mean: Vec<f64>,
    /// Standard deviations.
    pub sd: Vec<f64>,
}

/// One row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The sampler.
    pub sampler: String,
    /// Control variates used.
    pub cv: bool,
    /// The step size used.
    pub step_size: String,
    /// Seconds of sampling (all chains, in parallel).
    pub seconds: f64,
    /// Steps per second (all chains).
    pub steps_per_second: f64,
    /// Per-example gradient evaluations per step.
    pub grad_evals_per_step: f64,
    /// Smallest bulk ESS over the parameters.
    pub min_ess: f64,
    /// `min_ess` per second.
    pub ess_per_second: f64,
    /// `min_ess` per 1000 per-example gradient evaluations.
    pub ess_per_kgrad: f64,
    /// Largest `|mean − reference|/sd_ref` over the parameters.
    pub mean_error: f64,
    /// Largest `|sd/sd_ref − 1|` over the parameters.
    pub sd_error: f64,
    /// Test accuracy (logistic) or RMSE (linreg), when a test set is given.
    pub test_metric: Option<f64>,
    /// The run's error, if it failed.
    pub failure: Option<String>,
    /// `ok`, `warned` (its summary.json lists warnings) or `failed`.
    pub status: String,
    /// The run's warnings (summary.json's), joined by " | ".
    pub warnings: String,
}

impl Row {
    /// The warnings, one by one.
    pub fn warning_list(&self) -> Vec<&str> {
        self.warnings
            .split(" | ")
            .filter(|w| !w.is_empty())
            .collect()
    }
}

/// `base` with sampler `s` as `sgld sample` runs it: the adaptive warm-up (mode, metric,
/// step, batch and estimator) for sgld, precond and mala, the default schedule from the
/// same mode for the others; outputs in `out/<sampler>`.
fn as_sample_runs(base: &SampleConfig, s: SamplerKind, out: &Path) -> SampleConfig {
    let mut c = base.clone();
    c.sampler = s;
    c.out = out.join(s.name());
    c.progress = false;
    c
}

/// [`as_sample_runs`] at the common step `step`, the draws weighted uniformly.
fn with_sampler(base: &SampleConfig, s: SamplerKind, out: &Path, step: StepSpec) -> SampleConfig {
    SampleConfig {
        step_size: StepChoice::Given(step),
        weighting: Weighting::Uniform,
        ..as_sample_runs(base, s, out)
    }
}

/// The step for each sampler from the base step `eps` (see the README's table).
fn step_for(s: SamplerKind, eps: f64, psgld_scale: f64, mala_eps: f64) -> StepSpec {
    StepSpec::Const(match s {
        SamplerKind::Psgld => eps * psgld_scale,
        SamplerKind::Mala => mala_eps,
        _ => eps,
    })
}

/// MALA's step (its metric is the inverse Fisher, so steps are O(1)): the largest
/// `1.5·d^{-1/3}·2ᵏ` (k from 3 down to −20) whose acceptance rate over 300 steps after 100
/// is at least 0.6.
fn tune_mala(base: &SampleConfig, d: usize, out: &Path) -> Result<f64, String> {
    let eps = 1.5 / (d as f64).cbrt();
    for k in (-20..=3).rev() {
        let e = eps * 2f64.powi(k);
        let mut c = with_sampler(base, SamplerKind::Mala, out, StepSpec::Const(e));
        c.out = out.join("mala-tuning");
        c.steps = Some(300);
        c.chains = 1;
        c.burn_in = BurnIn::Steps(100);
        c.thin = Thin::Every(1);
        std::fs::create_dir_all(&c.out).map_err(|e| e.to_string())?;
        let (s, _) = sample::run_quiet(&c)?;
        if s.acceptance.unwrap_or(0.0) >= 0.6 {
            return Ok(e);
        }
    }
    Err("MALA: no step size down to 2^-20 of 1.5·d^(-1/3) reached acceptance 0.6".into())
}

/// The files of a previous comparison in `out`, sorted: its tables and figure, and the
/// run files in its per-sampler directories (each sampler's name, `mala-tuning`,
/// `reference-mala`). Nothing else in `out` counts.
pub fn previous_run(out: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = ["json", "csv", "md", "png", "svg"]
        .iter()
        .map(|ext| out.join(format!("compare.{ext}")))
        .filter(|p| p.is_file())
        .collect();
    let dirs = SamplerKind::ALL
        .iter()
        .chain([&SamplerKind::Kfac])
        .map(|s| s.name())
        .chain(["mala-tuning", "reference-mala"]);
    for d in dirs {
        found.extend(sample::files::previous_run(&out.join(d)));
    }
    found.sort();
    found
}

/// Claims `out` for a comparison: refuses it when it holds a previous one, unless
/// `overwrite`, which removes that comparison's files (only those) first.
pub fn claim(out: &Path, overwrite: bool) -> Result<(), String> {
    let found = previous_run(out);
    sample::files::refuse_previous(out, &found, overwrite)?;
    for p in found {
        std::fs::remove_file(&p).map_err(|e| format!("cannot remove {}: {e}", p.display()))?;
    }
    Ok(())
}

/// Checks what a comparison can take before anything runs or is written: not a network,
/// and either no step (each sampler's own, after the shared warm-up) or a constant one
/// for every sampler, which it returns.
pub fn check(cfg: &CompareConfig) -> Result<Option<f64>, String> {
    if cfg.base.model == ModelKind::Mlp {
        return Err("compare measures ESS per parameter against a MALA reference, which a network's permuting units make meaningless; compare networks by their held-out log-likelihood (sgld sample --model mlp --test ..., one run per --sampler)".into());
    }
    match cfg.base.step_size {
        StepChoice::Given(StepSpec::Const(e)) => Ok(Some(e)),
        StepChoice::Auto => Ok(None),
        StepChoice::Given(other) => Err(format!(
            "compare needs a constant step (const:EPS) so that ESS means the same for every sampler, or none (each sampler's step as sgld sample chooses it), got {other}"
        )),
    }
}

/// Runs the comparison; writes `compare.csv`, `compare.json`, `compare.md` and the
/// figure `compare.{svg,png}` into `base.out`.
pub fn run(cfg: &CompareConfig) -> Result<(Reference, Vec<Row>), String> {
    let given = check(cfg)?;
    let base = &cfg.base;
    let out = base.out.clone();
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let problem = Problem::load(base)?;
    let needs_mala = base.model != ModelKind::Linreg
        || (given.is_some() && cfg.samplers.contains(&SamplerKind::Mala));
    let mala_eps = if needs_mala {
        tune_mala(base, problem.dim(), &out)?
    } else {
        f64::NAN
    };
    let psgld_scale = if given.is_some() && cfg.samplers.contains(&SamplerKind::Psgld) {
        sample::psgld_scale(base)?
    } else {
        1.0
    };
    let mala_cfg = |c: &mut SampleConfig| {
        c.steps = Some(cfg.mala_steps);
        c.burn_in = BurnIn::Steps(cfg.mala_steps / 5);
        c.thin = Thin::Every(1);
    };
    let reference = if base.model == ModelKind::Linreg {
        let Some(PriorSpec::Nig { v, phi, psi }) = problem.prior else {
            return Err("linreg needs a nig prior".into());
        };
        let x = problem
            .train
            .dense()
            .ok_or("linreg reference needs dense features")?;
        let p = NigPosterior::new(
            &x,
            &problem.y,
            problem.train.dim(),
            v as f64,
            phi as f64,
            psi as f64,
        )?;
        Reference {
            source: "exact (Normal–inverse-gamma closed form)".into(),
            mean: p.mean(),
            sd: p.sd(),
        }
    } else {
        let mut c = with_sampler(base, SamplerKind::Mala, &out, StepSpec::Const(mala_eps));
        c.out = out.join("reference-mala");
        mala_cfg(&mut c);
        let steps = 4 * cfg.mala_steps;
        c.steps = Some(steps);
        c.burn_in = BurnIn::Steps(steps / 5);
        std::fs::create_dir_all(&c.out).map_err(|e| e.to_string())?;
        let (s, fail) = sample::run_quiet(&c)?;
        if let Some(f) = fail {
            return Err(format!("reference MALA run failed: {f}"));
        }
        Reference {
            source: format!(
                "MALA, {} chains x {} steps, step {mala_eps:.3e}, acceptance {:.2}, min ESS {:.0}",
                c.chains,
                steps,
                s.acceptance.unwrap_or(f64::NAN),
                min_ess(&s)
            ),
            mean: s.params.iter().map(|p| p.mean).collect(),
            sd: s.params.iter().map(|p| p.sd).collect(),
        }
    };
    let mut rows = Vec::new();
    let mut summaries = Vec::new();
    for &s in &cfg.samplers {
        let (c, label) = match given {
            Some(eps) => {
                let step = step_for(s, eps, psgld_scale, mala_eps);
                let mut c = with_sampler(base, s, &out, step);
                if s == SamplerKind::Mala {
                    mala_cfg(&mut c);
                }
                (c, Some(step_label(step)))
            }
            None => (as_sample_runs(base, s, &out), None),
        };
        std::fs::create_dir_all(&c.out).map_err(|e| e.to_string())?;
        eprintln!(
            "compare: {} ({})",
            s.name(),
            label
                .as_deref()
                .unwrap_or("the step as sgld sample chooses it")
        );
        let cv = sample::cv_applies(s, base.cv);
        let (summary, failure) = match sample::run_quiet(&c) {
            Ok(r) => r,
            Err(e) => {
                let label = label.unwrap_or_else(|| "auto".into());
                rows.push(failed_row(s, cv, label, e.to_string()));
                continue;
            }
        };
        let label = label.unwrap_or_else(|| ran_step(&summary));
        rows.push(match failure {
            Some(f) => failed_row(s, cv, label, f),
            None => row(s, summary.cv, label, &summary, &reference),
        });
        summaries.push((s, summary));
    }
    write_outputs(&out, base, &reference, &rows, &summaries)?;
    Ok((reference, rows))
}

/// The smallest finite bulk ESS; NaN when no parameter has one (not ∞).
fn min_ess(s: &Summary) -> f64 {
    s.params
        .iter()
        .map(|p| p.ess_bulk)
        .filter(|e| e.is_finite())
        .reduce(f64::min)
        .unwrap_or(f64::NAN)
}

/// What an automatic step came to: for an adapted run the sampler the warm-up chose,
/// its step and batch; otherwise the default schedule.
fn ran_step(s: &Summary) -> String {
    let w = &s.warmup;
    if !w.adapted {
        return match s.step_size.parse::<StepSpec>() {
            Ok(spec) => step_label(spec),
            Err(_) => s.step_size.clone(),
        };
    }
    let rows = if w.full_batch {
        "every row".to_string()
    } else {
        format!("batch {}", w.batch)
    };
    format!("auto: {} at {:.3e}, {rows}", w.sampler, w.step_size)
}

/// A schedule with four significant digits (summary.json keeps the exact numbers).
fn step_label(step: StepSpec) -> String {
    match step {
        StepSpec::Const(e) => format!("const:{e:.3e}"),
        StepSpec::Range { start, end, gamma } => format!("range:{start:.3e},{end:.3e},{gamma}"),
        StepSpec::Poly { a, b, gamma } => format!("poly:{a:.3e},{b:.3e},{gamma}"),
        StepSpec::Cyclical { max, cycles } => format!("cyclical:{max:.3e},{cycles}"),
    }
}

fn failed_row(s: SamplerKind, cv: bool, step: String, e: String) -> Row {
    Row {
        sampler: s.name().into(),
        cv,
        step_size: step,
        seconds: f64::NAN,
        steps_per_second: f64::NAN,
        grad_evals_per_step: f64::NAN,
        min_ess: f64::NAN,
        ess_per_second: f64::NAN,
        ess_per_kgrad: f64::NAN,
        mean_error: f64::NAN,
        sd_error: f64::NAN,
        test_metric: None,
        failure: Some(e),
        status: "failed".into(),
        warnings: String::new(),
    }
}

fn row(s: SamplerKind, cv: bool, step: String, summary: &Summary, reference: &Reference) -> Row {
    let ess = min_ess(summary);
    let evals = summary.grad_evals_per_step * summary.steps as f64 * summary.chains as f64;
    let (mut mean_error, mut sd_error) = (0.0f64, 0.0f64);
    for (j, p) in summary.params.iter().enumerate() {
        mean_error = mean_error.max((p.mean - reference.mean[j]).abs() / reference.sd[j]);
        sd_error = sd_error.max((p.sd / reference.sd[j] - 1.0).abs());
    }
    Row {
        sampler: s.name().into(),
        cv,
        step_size: step,
        seconds: summary.seconds,
        steps_per_second: summary.steps_per_second,
        grad_evals_per_step: summary.grad_evals_per_step,
        min_ess: ess,
        ess_per_second: ess / summary.seconds,
        ess_per_kgrad: 1000.0 * ess / evals,
        mean_error,
        sd_error,
        test_metric: summary.test.as_ref().and_then(|t| t.accuracy.or(t.rmse)),
        failure: None,
        status: if summary.warnings.is_empty() {
            "ok"
        } else {
            "warned"
        }
        .into(),
        warnings: summary.warnings.join(" | "),
    }
}

/// The table as Markdown.
pub fn markdown(rows: &[Row]) -> String {
    let mut t = String::from(
        "| sampler | step | steps/s | grads/step | min ESS | ESS/s | ESS/1k grads | max mean err (sd) | max sd err | test | status |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        if let Some(f) = &r.failure {
            // No figures for a run that failed: they would be those of no draws.
            let _ = writeln!(
                t,
                "| {}{} | {} | – | – | – | – | – | – | – | – | failed: {f} |",
                r.sampler,
                if r.cv { "-cv" } else { "" },
                r.step_size,
            );
            continue;
        }
        let _ = writeln!(
            t,
            "| {}{} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {:.3} | {:.3} | {:.3} | {} | {} |",
            r.sampler,
            if r.cv { "-cv" } else { "" },
            r.step_size,
            r.steps_per_second,
            r.grad_evals_per_step,
            r.min_ess,
            r.ess_per_second,
            r.ess_per_kgrad,
            r.mean_error,
            r.sd_error,
            r.test_metric.map_or("–".into(), |m| format!("{m:.4}")),
            match r.warning_list().len() {
                0 => "ok".to_string(),
                k => format!("{k} warning{}", if k == 1 { "" } else { "s" }),
            }
        );
    }
    let warned: Vec<&Row> = rows.iter().filter(|r| !r.warnings.is_empty()).collect();
    if !warned.is_empty() {
        t.push_str("\nWarnings (each sampler's summary.json has them):\n\n");
        for r in warned {
            for w in r.warning_list() {
                let _ = writeln!(t, "- **{}**: {w}", r.sampler);
            }
        }
    }
    t
}

fn write_outputs(
    out: &Path,
    base: &SampleConfig,
    reference: &Reference,
    rows: &[Row],
    summaries: &[(SamplerKind, Summary)],
) -> Result<(), String> {
    let io = |p: PathBuf| move |e: std::io::Error| format!("cannot write {}: {e}", p.display());
    let json = serde_json::json!({ "reference": reference, "rows": rows });
    let p = out.join("compare.json");
    std::fs::write(
        &p,
        serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n",
    )
    .map_err(io(p.clone()))?;
    let mut w = csv::Writer::from_path(out.join("compare.csv")).map_err(|e| e.to_string())?;
    for r in rows {
        w.serialize(r).map_err(|e| e.to_string())?;
    }
    w.flush().map_err(|e| e.to_string())?;
    let table = markdown(rows);
    let how = match base.step_size {
        StepChoice::Auto => format!(
            "{} chains per sampler, each run as `sgld sample` runs it: sgld, precond and mala after the adaptive warm-up (the mode, the metric, then a step, batch, estimator and length of their own), the others on their default schedule from the same mode, weighted by step where it decays; each row's step is the one it ran",
            base.chains
        ),
        _ => format!(
            "batch {}, {} steps x {} chains per sampler (burn-in as `--burn-in`), uniform weights",
            base.batch_or_default(),
            base.steps.unwrap_or(sample::DEFAULT_STEPS),
            base.chains,
        ),
    };
    let md = format!(
        "# sgld compare\n\nModel `{:?}` on `{}`: {how}; seed {}{}.\n\nReference: {}.\n\nESS is the smallest bulk ESS over the parameters (rank-normalised, split chains); ESS/1k grads counts per-example gradient evaluations (MALA: the whole data set per step). Errors are in units of the reference sd.\n\n{table}\n![comparison](compare.svg)\n",
        base.model,
        base.train.display(),
        base.seed,
        if base.cv {
            ", control-variate gradients"
        } else {
            ""
        },
        reference.source
    );
    let p = out.join("compare.md");
    std::fs::write(&p, md).map_err(io(p.clone()))?;
    crate::out!("{table}");
    // Figure: per parameter, the mean error and the sd ratio, one line per sampler.
    let k = reference.mean.len().min(60);
    let x: Vec<f64> = (0..k).map(|j| j as f64).collect();
    let names: Vec<String> = summaries
        .first()
        .map(|(_, s)| s.params[..k].iter().map(|p| p.name.clone()).collect())
        .unwrap_or_default();
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| r.failure.is_some())
        .map(|r| r.sampler.as_str())
        .collect();
    let mut mean_panel = Panel {
        title: if failed.is_empty() {
            "posterior mean error / reference sd".into()
        } else {
            format!(
                "posterior mean error / reference sd (failed, not drawn: {})",
                failed.join(", ")
            )
        },
        x_label: "parameter".into(),
        y_label: "(mean − ref) / sd_ref".into(),
        x_names: names.clone(),
        ..Panel::default()
    };
    let mut sd_panel = Panel {
        title: "posterior sd / reference sd".into(),
        x_label: "parameter".into(),
        y_label: "sd / sd_ref".into(),
        x_names: names,
        ..Panel::default()
    };
    for (s, summary) in summaries {
        // A run that stopped has no draws to draw (the title names it).
        if failed.contains(&s.name()) {
            continue;
        }
        let p = &summary.params[..k];
        let label = if summary.warnings.is_empty() {
            s.name().to_string()
        } else {
            format!("{} (warned)", s.name())
        };
        mean_panel.series.push(Series {
            label: label.clone(),
            x: x.clone(),
            y: p.iter()
                .enumerate()
                .map(|(j, q)| (q.mean - reference.mean[j]) / reference.sd[j])
                .collect(),
            ..Series::default()
        });
        sd_panel.series.push(Series {
            label,
            x: x.clone(),
            y: p.iter()
                .enumerate()
                .map(|(j, q)| q.sd / reference.sd[j])
                .collect(),
            ..Series::default()
        });
    }
    sd_panel.series.push(Series {
        label: "reference".into(),
        x: x.clone(),
        y: vec![1.0],
        reference: true,
        ..Series::default()
    });
    plot::line_chart(&out.join("compare"), &[mean_panel, sd_panel])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed sampler's row says so and why, with no figures (not ∞ or 0).
    #[test]
    fn failed_rows_show_the_reason_and_no_figures() {
        let failed = failed_row(
            SamplerKind::Sghmc,
            false,
            step_label(StepSpec::Const(1e-3)),
            "step 12 went non-finite".into(),
        );
        assert_eq!(
            step_label("range:0.000020730945372648782,2e-7,0.55".parse().unwrap()),
            "range:2.073e-5,2.000e-7,0.55"
        );
        let table = markdown(&[failed]);
        let line = table.lines().last().unwrap();
        assert!(line.contains("failed: step 12 went non-finite"), "{line}");
        assert!(!line.contains("inf") && !line.contains("NaN") && !line.contains("0.000"));
    }
}
