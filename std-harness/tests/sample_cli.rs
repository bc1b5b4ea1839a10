//! `sgld sample` end to end through the binary: the contract (flags, parameter names,
//! output files), a logistic regression checked against a long reference run, the
//! Normal–inverse-gamma regression checked against its closed form, determinism across
//! thread counts, burn-in by the sampling threshold, and clear errors.
//!
//! Tolerances: a posterior mean passes within `z·sd/√ESS_bulk` (the Monte Carlo standard
//! error from the summary's own bulk ESS) plus the reference's own MCSE; `z = 4.5` over all
//! the checks of a test (two-sided family error below 10⁻³). Standard deviations get the
//! MCSE of an sd, `sd·√(1/(2·ESS))`, plus the discretisation inflation of the variance at
//! step ε, `ε(λ_max(A) + λ_max(V))/4` relative (A the posterior precision, V the
//! stochastic-gradient noise covariance), which is computed from the data in each test.

use std::path::{Path, PathBuf};
mod common;

use nalgebra::{DMatrix, DVector};
use sgld::gradient::MiniBatch;
use sgld::models::{Gaussian, LogisticDense};
use sgld::noise::default_rng;
use sgld::schedule::Constant;

use common::{lin_data, normals, param_names, run_ok, sgld, summary, write_csv};

const Z: f64 = 4.5;

/// 600 rows, 3 features; labels from a logistic model with β = (1.5, −1, 0.5), bias −0.3.
fn logistic_data(dir: &Path) -> (PathBuf, PathBuf, Vec<f32>, Vec<f32>) {
    let n = 600;
    let z = normals(n * 3, 1);
    let mut urng = default_rng(2);
    let mut rows = vec![];
    let (mut x, mut y) = (vec![], vec![]);
    for i in 0..n {
        let xi = &z[i * 3..i * 3 + 3];
        let eta = 1.5 * xi[0] - 1.0 * xi[1] + 0.5 * xi[2] - 0.3;
        // Label 1 with probability σ(η).
        let p = 1.0 / (1.0 + (-eta).exp());
        let uu = (rand_core::Rng::next_u64(&mut urng) >> 40) as f32 / (1u64 << 24) as f32;
        let label = if uu < p { 1.0 } else { 0.0 };
        rows.push(vec![xi[0], xi[1], xi[2], label]);
        x.extend_from_slice(xi);
        x.push(1.0);
        y.push(if label == 1.0 { 1.0 } else { -1.0 });
    }
    let train = dir.join("train.csv");
    let test = dir.join("test.csv");
    write_csv(&train, &["x1", "x2", "x3", "y"], &rows[..500]);
    write_csv(&test, &["x1", "x2", "x3", "y"], &rows[500..]);
    (train, test, x[..500 * 4].to_vec(), y[..500].to_vec())
}

/// Mean and sd per parameter of a long full-batch Langevin run (no gradient noise) with
/// a small step, and the batch-means MCSE of each mean.
fn reference_run(
    x: &[f32],
    y: &[f32],
    d: usize,
    eps: f32,
    steps: u64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let model = LogisticDense::new(x, y, d, Gaussian::new(1.0).unwrap()).unwrap();
    let est = MiniBatch::new(&model);
    let all: Vec<usize> = (0..y.len()).collect();
    let mut theta = vec![0.0f32; d];
    let mut scratch = vec![0.0f32; sgld::Sgld::scratch_len(d)];
    let mut state = sgld::Sgld::init(&mut theta, &mut scratch).unwrap();
    let mut rng = default_rng(99);
    let _ = Constant::new(eps).unwrap();
    let burn = steps / 10;
    let nb = 50usize;
    let per = (steps - burn) / nb as u64;
    let mut batch_means = vec![vec![0.0f64; d]; nb];
    let (mut s1, mut s2) = (vec![0.0f64; d], vec![0.0f64; d]);
    for t in 0..steps {
        sgld::Sgld::new()
            .step(&mut state, &est, &all, eps, &mut rng)
            .unwrap();
        if t >= burn {
            let b = (((t - burn) / per) as usize).min(nb - 1);
            for j in 0..d {
                let v = state.theta()[j] as f64;
                s1[j] += v;
                s2[j] += v * v;
                batch_means[b][j] += v / per as f64;
            }
        }
    }
    let m = (steps - burn) as f64;
    let mean: Vec<f64> = s1.iter().map(|s| s / m).collect();
    let sd: Vec<f64> = (0..d)
        .map(|j| (s2[j] / m - mean[j] * mean[j]).sqrt())
        .collect();
    let mcse: Vec<f64> = (0..d)
        .map(|j| {
            let v = batch_means
                .iter()
                .map(|b| (b[j] - mean[j]).powi(2))
                .sum::<f64>()
                / (nb - 1) as f64;
            (v / nb as f64).sqrt()
        })
        .collect();
    (mean, sd, mcse)
}

#[test]
fn logistic_contract_and_agreement_with_a_long_reference_run() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test, x, y) = logistic_data(dir.path());
    let out = dir.path().join("out");
    let eps = 2e-4;
    let stdout = run_ok(&[
        "sample",
        "--model",
        "logistic",
        "--train",
        train.to_str().unwrap(),
        "--test",
        test.to_str().unwrap(),
        "--prior",
        "gaussian:1",
        "--batch",
        "50",
        "--steps",
        "60000",
        "--step-size",
        "const:2e-4",
        "--burn-in",
        "5000",
        "--chains",
        "4",
        "--seed",
        "7",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        stdout.contains("beta[x1]") && stdout.contains("bias"),
        "{stdout}"
    );
    // draws.csv: header and kept draws. --thin auto keeps at most 4,000 of the 55,000
    // steps after burn-in: every 14th (steps 5,012 to 59,990, 3,928 a chain).
    let draws = std::fs::read_to_string(out.join("draws.csv")).unwrap();
    let mut lines = draws.lines();
    assert_eq!(
        lines.next(),
        Some("chain,step,step_size,beta[x1],beta[x2],beta[x3],bias")
    );
    assert_eq!(lines.count(), 4 * (60_000 / 14 - 5_000 / 14));
    let s = summary(&out);
    assert_eq!(s["thin"], 14);
    for key in [
        "model",
        "sampler",
        "n_train",
        "dim",
        "steps",
        "chains",
        "burn_in",
        "weighting",
        "seconds",
        "steps_per_second",
        "params",
        "test",
    ] {
        assert!(s.get(key).is_some(), "summary.json lacks {key}");
    }
    assert_eq!(s["model"], "logistic");
    assert_eq!(s["sampler"], "sgld");
    assert_eq!(s["n_train"], 500);
    assert_eq!(s["dim"], 4);
    assert_eq!(s["burn_in"], 5000);
    // A constant step weights the draws uniformly.
    assert_eq!(s["weighting"], "uniform");
    let acc = s["test"]["accuracy"].as_f64().unwrap();
    assert!((0.6..=1.0).contains(&acc), "accuracy {acc}");
    assert!(s["test"]["log_lik_per_datum"].as_f64().unwrap() < 0.0);
    assert!(s["test"].get("rmse").is_none());

    // Long reference: full-batch Langevin (no gradient noise) at a 4x smaller step.
    let (rm, rsd, rse) = reference_run(&x, &y, 4, 5e-5, 400_000);
    // Variance inflation of the SGLD run at ε = 2e-4: posterior precision ≲ N/4·λ_max(XᵀX/N)
    // + 1 and gradient noise V ≲ (N²/n)·λ_max(Cov scores) ≤ (N²/n)/4·λ_max(XᵀX/N).
    let xm = DMatrix::from_row_iterator(500, 4, x.iter().map(|&v| v as f64));
    let lam = (xm.transpose() * &xm / 500.0).symmetric_eigenvalues().max();
    let inflation = eps * (500.0 / 4.0 * lam + 1.0 + 500.0 * 500.0 / 50.0 / 4.0 * lam) / 4.0;
    eprintln!("variance inflation bound {inflation:.3}");
    for (j, p) in s["params"].as_array().unwrap().iter().enumerate() {
        let (mean, sd, ess) = (
            p["mean"].as_f64().unwrap(),
            p["sd"].as_f64().unwrap(),
            p["ess_bulk"].as_f64().unwrap(),
        );
        assert!(p["rhat"].as_f64().unwrap() < 1.05, "{p}");
        for k in ["q05", "q50", "q95", "ess_tail"] {
            assert!(p[k].as_f64().unwrap().is_finite(), "{p}");
        }
        let tol = Z * (sd / ess.sqrt()) + Z * rse[j];
        eprintln!(
            "{}: mean {mean:.4} vs reference {:.4} (tol {tol:.4}); sd {sd:.4} vs {:.4}",
            p["name"], rm[j], rsd[j]
        );
        assert!(
            (mean - rm[j]).abs() <= tol,
            "{}: mean {mean} vs reference {} (tolerance {tol})",
            p["name"],
            rm[j]
        );
        let sd_tol = Z * sd * (1.0 / (2.0 * ess)).sqrt() + rsd[j] * (inflation / 2.0 + Z * 0.02);
        assert!(
            (sd - rsd[j]).abs() <= sd_tol,
            "{}: sd {sd} vs reference {} (tolerance {sd_tol})",
            p["name"],
            rsd[j]
        );
    }
}

fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 6.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + 1.0 / x
        + 0.5 * x2
        + x2 / x * (1.0 / 6.0 - x2 * (1.0 / 30.0 - x2 * (1.0 / 42.0 - x2 / 30.0)))
}

/// Closed-form posterior means and sds of (β, log σ²) under `nig:V,PHI,PSI`.
fn nig_exact(rows: &[Vec<f32>], v: f64, phi: f64, psi: f64) -> (Vec<f64>, Vec<f64>) {
    let (n, d) = (rows.len(), rows[0].len() - 1);
    let xm = DMatrix::from_fn(n, d, |i, j| rows[i][j] as f64);
    let yv = DVector::from_fn(n, |i, _| rows[i][d] as f64);
    let prec = xm.transpose() * &xm + DMatrix::identity(d, d) / v;
    let vn = prec.clone().try_inverse().unwrap();
    let mun = &vn * (xm.transpose() * &yv);
    let an = phi + n as f64 / 2.0;
    let bn = psi + 0.5 * (yv.dot(&yv) - mun.dot(&(&prec * &mun)));
    let mut mean: Vec<f64> = mun.iter().copied().collect();
    mean.push(bn.ln() - statrs::function::gamma::digamma(an));
    let mut sd: Vec<f64> = (0..d)
        .map(|j| (vn[(j, j)] * bn / (an - 1.0)).sqrt())
        .collect();
    sd.push(trigamma(an).sqrt());
    (mean, sd)
}

#[test]
fn every_sampler_and_option_reaches_the_closed_form() {
    let dir = tempfile::tempdir().unwrap();
    let (train, rows) = lin_data(dir.path());
    let (mean, sd) = nig_exact(&rows, 10.0, 2.0, 1.0);
    let cases: &[(&str, &[&str], f64)] = &[
        ("sgld", &["--step-size", "const:2e-5"], 1.0),
        ("sgld", &["--cv", "--step-size", "const:2e-5"], 1.0),
        (
            "sgld",
            &["--temperature", "2", "--step-size", "const:2e-5"],
            2.0,
        ),
        ("precond", &["--step-size", "const:4e-5"], 1.0),
        (
            "psgld",
            &["--step-size", "const:2.5e-6", "--decay", "0.999"],
            1.0,
        ),
        ("sghmc", &["--cv", "--step-size", "const:1e-5"], 1.0),
        (
            "sghd",
            &["--step-size", "const:2e-5", "--leapfrog", "3"],
            1.0,
        ),
        ("sgnht", &["--cv", "--step-size", "const:1e-5"], 1.0),
        ("mala", &["--step-size", "const:0.8"], 1.0),
        ("sgld", &["--step-size", "cyclical:4e-5,4"], 1.0),
    ];
    for (k, (sampler, extra, tau)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("s{k}"));
        let mut args = vec![
            "sample",
            "--model",
            "linreg",
            "--train",
            train.to_str().unwrap(),
            "--prior",
            "nig:10,2,1",
            "--no-bias",
            "--batch",
            "40",
            "--steps",
            "60000",
            "--burn-in",
            "10000",
            "--chains",
            "2",
            "--weighting",
            "uniform",
            "--sampler",
            sampler,
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        if *sampler == "mala" {
            args[11] = "6000";
            args[13] = "1000";
        }
        run_ok(&args);
        let s = summary(&out);
        assert_eq!(s["sampler"], *sampler);
        assert_eq!(s["temperature"].as_f64().unwrap(), *tau);
        for (j, p) in s["params"].as_array().unwrap().iter().enumerate() {
            let (m, s_, ess) = (
                p["mean"].as_f64().unwrap(),
                p["sd"].as_f64().unwrap(),
                p["ess_bulk"].as_f64().unwrap(),
            );
            let want_sd = sd[j] * tau.sqrt();
            eprintln!(
                "{sampler} {extra:?} {}: mean {m:.5} vs {:.5}, sd {s_:.5} vs {want_sd:.5}, ess {ess:.0}",
                p["name"], mean[j]
            );
            // Tolerances from the reported ESS; 10% of an sd for the O(ε) bias and the
            // sampler's documented approximations (pSGLD without Γ, SGNHT's a/2).
            assert!(
                (m - mean[j]).abs() <= Z * s_ / ess.sqrt() + 0.1 * sd[j],
                "{sampler} {extra:?}: {} mean {m} vs closed form {}",
                p["name"],
                mean[j]
            );
            let tol = Z * s_ * (1.0 / (2.0 * ess)).sqrt() + 0.1 * want_sd;
            assert!(
                (s_ - want_sd).abs() <= tol,
                "{sampler} {extra:?}: {} sd {s_} vs {want_sd} (tolerance {tol})",
                p["name"]
            );
        }
    }
}

#[test]
fn linreg_matches_the_normal_inverse_gamma_closed_form() {
    let dir = tempfile::tempdir().unwrap();
    let (n, d) = (400usize, 2usize);
    let (train, rows) = lin_data(dir.path());
    let out = dir.path().join("out");
    let (v, phi, psi) = (10.0f64, 2.0f64, 1.0f64);
    let eps = 1e-5;
    run_ok(&[
        "sample",
        "--model",
        "linreg",
        "--train",
        train.to_str().unwrap(),
        "--prior",
        "nig:10,2,1",
        "--no-bias",
        "--batch",
        "40",
        "--steps",
        "200000",
        "--step-size",
        "const:1e-5",
        "--burn-in",
        "20000",
        "--chains",
        "4",
        "--thin",
        "5",
        "--seed",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s = summary(&out);
    let names = param_names(&s);
    assert_eq!(names, ["beta[a]", "beta[b]", "log_sigma2"]);
    let header = std::fs::read_to_string(out.join("draws.csv"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert_eq!(header, "chain,step,step_size,beta[a],beta[b],log_sigma2");

    // Closed form from the f32 values in the file.
    let (mean, sd) = nig_exact(&rows, v, phi, psi);
    let xm = DMatrix::from_fn(n, d, |i, j| rows[i][j] as f64);
    let an = phi + n as f64 / 2.0;
    let bn = {
        let yv = DVector::from_fn(n, |i, _| rows[i][2] as f64);
        let prec = xm.transpose() * &xm + DMatrix::identity(d, d) / v;
        let mun = prec.clone().try_inverse().unwrap() * (xm.transpose() * &yv);
        psi + 0.5 * (yv.dot(&yv) - mun.dot(&(&prec * &mun)))
    };
    // Discretisation inflation: A ≈ XᵀX/σ² (and N/2 for log σ²), V ≈ (N²/n)·Cov(scores) ≈ (N/n)·A.
    let sigma2 = bn / an;
    let a_max = (xm.transpose() * &xm).symmetric_eigenvalues().max() / sigma2;
    let inflation = eps * (a_max * (1.0 + n as f64 / 40.0)) / 4.0;
    eprintln!("variance inflation bound {inflation:.4}");
    for (j, p) in s["params"].as_array().unwrap().iter().enumerate() {
        let (m, s_, ess) = (
            p["mean"].as_f64().unwrap(),
            p["sd"].as_f64().unwrap(),
            p["ess_bulk"].as_f64().unwrap(),
        );
        eprintln!(
            "{}: mean {m:.5} vs {:.5}, sd {s_:.5} vs {:.5}, ess {ess:.0}",
            p["name"], mean[j], sd[j]
        );
        assert!(
            (m - mean[j]).abs() <= Z * s_ / ess.sqrt(),
            "{}: mean {m} vs closed form {}",
            p["name"],
            mean[j]
        );
        let tol = Z * s_ * (1.0 / (2.0 * ess)).sqrt() + sd[j] * inflation / 2.0;
        assert!(
            (s_ - sd[j]).abs() <= tol,
            "{}: sd {s_} vs closed form {} (tolerance {tol})",
            p["name"],
            sd[j]
        );
    }
}

#[test]
fn same_seed_same_draws_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _, _, _) = logistic_data(dir.path());
    let run = |threads: &str, out: &str| {
        let o = sgld()
            .env("RAYON_NUM_THREADS", threads)
            .args([
                "sample",
                "--model",
                "logistic",
                "--train",
                train.to_str().unwrap(),
                "--steps",
                "3000",
                "--chains",
                "3",
                "--seed",
                "5",
                "--burn-in",
                "100",
            ])
            .arg("--out")
            .arg(dir.path().join(out))
            .output()
            .unwrap();
        assert!(o.status.success());
        std::fs::read(dir.path().join(out).join("draws.csv")).unwrap()
    };
    assert_eq!(run("1", "one"), run("2", "two"));
}

/// `--thin auto` on a decreasing schedule: the same trajectories as `--thin 1` (thinning
/// draws no numbers), and each kept draw weighted by the step sizes of the steps it
/// stands for, so the means agree with every step's to a small part of a posterior sd.
#[test]
fn auto_thinning_keeps_at_most_4000_draws_and_weighs_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _, _, _) = logistic_data(dir.path());
    let run = |thin: &str| {
        let out = dir.path().join(format!("thin-{thin}"));
        run_ok(&[
            "sample",
            "--model",
            "logistic",
            "--train",
            train.to_str().unwrap(),
            "--step-size",
            "range:1e-3,1e-5,0.55",
            "--steps",
            "80000",
            "--burn-in",
            "8000",
            "--chains",
            "2",
            "--thin",
            thin,
            "--out",
            out.to_str().unwrap(),
        ]);
        summary(&out)
    };
    let (all, auto) = (run("1"), run("auto"));
    assert_eq!(
        (all["thin"].as_u64(), auto["thin"].as_u64()),
        (Some(1), Some(18))
    );
    assert_eq!(auto["weighting"], "step");
    for (a, b) in all["params"]
        .as_array()
        .unwrap()
        .iter()
        .zip(auto["params"].as_array().unwrap())
    {
        let (m1, m2, sd) = (
            a["mean"].as_f64().unwrap(),
            b["mean"].as_f64().unwrap(),
            a["sd"].as_f64().unwrap(),
        );
        assert!(
            (m1 - m2).abs() < 0.02 * sd,
            "{}: mean {m1} with every step, {m2} thinned (sd {sd})",
            a["name"]
        );
        let sd2 = b["sd"].as_f64().unwrap();
        assert!(
            (sd2 / sd - 1.0).abs() < 0.03,
            "{}: sd {sd} with every step, {sd2} thinned",
            a["name"]
        );
    }
}

#[test]
fn clipping_is_an_option_of_sample() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _, _, _) = logistic_data(dir.path());
    let out = dir.path().join("clip");
    run_ok(&[
        "sample",
        "--model",
        "logistic",
        "--train",
        train.to_str().unwrap(),
        "--steps",
        "2000",
        "--clip",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(out.join("summary.json").is_file());
}

/// A reader that goes away (`sgld sample … | head`) does not crash the command: it
/// writes its files and exits 0, quietly.
#[test]
fn a_closed_stdout_ends_quietly_after_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _, _, _) = logistic_data(dir.path());
    let out = dir.path().join("piped");
    let mut child = sgld()
        .args(["sample", "--model", "logistic", "--train"])
        .arg(&train)
        .args(["--steps", "2000", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the command prints anything.
    drop(child.stdout.take());
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "exit {:?}: {stderr}", done.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.join("summary.json").is_file() && out.join("draws.csv").is_file());
}

/// A negative number is a value (`--temperature -1` is refused for its value, not taken
/// for an unknown flag).
#[test]
fn negative_numbers_are_values() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _, _, _) = logistic_data(dir.path());
    let run = sgld()
        .args(["sample", "--model", "logistic", "--train"])
        .arg(&train)
        .args(["--steps", "100", "--temperature", "-1", "--out"])
        .arg(dir.path().join("neg"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("temperature must be finite and >= 0"),
        "{stderr}"
    );
}

#[test]
fn gmm_on_one_column_data() {
    let dir = tempfile::tempdir().unwrap();
    let z = normals(100, 21);
    let rows: Vec<Vec<f32>> = z
        .iter()
        .enumerate()
        .map(|(i, v)| vec![v * 2f32.sqrt() + (i % 2) as f32])
        .collect();
    let train = dir.path().join("x.csv");
    write_csv(&train, &["x"], &rows);
    let out = dir.path().join("out");
    run_ok(&[
        "sample",
        "--model",
        "gmm",
        "--train",
        train.to_str().unwrap(),
        "--batch",
        "1",
        "--steps",
        "20000",
        "--step-size",
        "range:0.01,0.0001",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s = summary(&out);
    let names = param_names(&s);
    assert_eq!(names, ["theta1", "theta2"]);
}

#[test]
fn auto_burn_in_reports_where_the_threshold_was_crossed_or_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _, _, _) = logistic_data(dir.path());
    let small = run_ok(&[
        "sample",
        "--model",
        "logistic",
        "--train",
        train.to_str().unwrap(),
        "--steps",
        "4000",
        "--batch",
        "10",
        "--step-size",
        "const:1e-6",
        "--out",
        dir.path().join("a").to_str().unwrap(),
    ]);
    assert!(small.contains("fell below alpha = 0.1 at step"), "{small}");
    let big = run_ok(&[
        "sample",
        "--model",
        "logistic",
        "--train",
        train.to_str().unwrap(),
        "--steps",
        "4000",
        "--batch",
        "10",
        "--step-size",
        "const:1e-2",
        "--out",
        dir.path().join("b").to_str().unwrap(),
    ]);
    assert!(
        big.contains("never fell below alpha = 0.1") && big.contains("at step size"),
        "{big}"
    );
    assert_eq!(summary(&dir.path().join("b"))["burn_in"], 2000);
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _, _, _) = logistic_data(dir.path());
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "1 1:1\n-1 3:1 2:1\n").unwrap();
    // A label that is neither ±1 nor 0/1, named by its file line: line 5 of a CSV (the
    // header is line 1) and line 4 of a LIBSVM file with a blank line and a comment.
    let bad_label_csv = dir.path().join("labels.csv");
    std::fs::write(&bad_label_csv, "x,y\n0.5,1\n-0.2,0\n0.1,1\n0.3,2\n").unwrap();
    let bad_label_svm = dir.path().join("labels.txt");
    std::fs::write(&bad_label_svm, "1 1:1\n\n# a comment\n3 2:1\n").unwrap();
    let mut cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--model".into(),
                "logistic".into(),
                "--train".into(),
                bad_label_csv.display().to_string(),
            ],
            "labels.csv: line 5: label 2 is not ±1 or 0/1",
        ),
        (
            vec![
                "--model".into(),
                "logistic".into(),
                "--train".into(),
                bad_label_svm.display().to_string(),
            ],
            "labels.txt: line 4: label 3 is not ±1 or 0/1",
        ),
    ];
    cases.extend(vec![
        (
            vec![
                "--model".into(),
                "logistic".into(),
                "--train".into(),
                bad.display().to_string(),
            ],
            "bad.txt:2: index 2 after 3",
        ),
        (
            vec![
                "--model".into(),
                "logistic".into(),
                "--train".into(),
                train.display().to_string(),
                "--prior".into(),
                "nig:1,1,1".into(),
            ],
            "does not apply",
        ),
        (
            vec![
                "--model".into(),
                "logistic".into(),
                "--train".into(),
                train.display().to_string(),
                "--batch".into(),
                "0".into(),
            ],
            "--batch",
        ),
        (
            vec![
                "--model".into(),
                "logistic".into(),
                "--train".into(),
                train.display().to_string(),
                "--batch".into(),
                "100000".into(),
            ],
            "exceeds",
        ),
        (
            vec![
                "--model".into(),
                "logistic".into(),
                "--train".into(),
                train.display().to_string(),
                "--step-size".into(),
                "const:-1".into(),
            ],
            "step",
        ),
        (
            vec![
                "--model".into(),
                "linreg".into(),
                "--train".into(),
                dir.path().join("missing.csv").display().to_string(),
            ],
            "cannot read",
        ),
    ]);
    for (args, want) in cases {
        let o = sgld()
            .arg("sample")
            .args(&args)
            .arg("--out")
            .arg(dir.path().join("o"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(err.contains(want), "{args:?}: stderr {err}");
    }
}

#[test]
fn a_chain_that_explodes_stops_with_its_step_and_keeps_its_draws() {
    let dir = tempfile::tempdir().unwrap();
    // Responses of order 1e25: the squared residuals overflow f32 in the first gradient.
    let rows: Vec<Vec<f32>> = (0..50)
        .map(|i| vec![i as f32, 1e25 * (1.0 + i as f32)])
        .collect();
    let train = dir.path().join("big.csv");
    write_csv(&train, &["x", "y"], &rows);
    let out = dir.path().join("out");
    let o = sgld()
        .args([
            "sample",
            "--model",
            "linreg",
            "--train",
            train.to_str().unwrap(),
            "--steps",
            "5000",
            "--step-size",
            "const:0.5",
            "--burn-in",
            "0",
            "--chains",
            "1",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("chain 0 stopped at step 1:") && err.contains("gradient is not finite"),
        "{err}"
    );
    assert!(out.join("draws.csv").is_file() && out.join("summary.json").is_file());
}
