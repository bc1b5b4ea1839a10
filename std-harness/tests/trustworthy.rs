//! `sgld sample` with its defaults: the adapted warm-up reaches the exact posterior,
//! records how it got there, and every run that cannot be trusted says why.
//!
//! Tolerances: a mean within `z·sd/√ESS_bulk` plus the O(ε) bias the adapted step allows
//! (α ≤ `--alpha`/2 and ε ≤ 0.1 in the preconditioned coordinates: under 0.05 sd), an sd
//! within `z/√(2·ESS)` relative plus that bias (under 5%); `z = 4.5`.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use sgld::noise::{default_rng, fill_normal};
use sgld_harness::exact::NigPosterior;

use common::{param_names, sgld, summary};

const Z: f64 = 4.5;

fn run(args: &[&str], out: &Path) -> Output {
    sgld()
        .arg("sample")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// 500 rows of `y = 1.5 + 2a − b + 0.7e`.
fn data_with_intercept(dir: &Path) -> (PathBuf, Vec<[f64; 3]>) {
    let n = 500;
    let mut z = vec![0.0f32; 3 * n];
    fill_normal(&mut default_rng(21), &mut z);
    let rows: Vec<[f64; 3]> = (0..n)
        .map(|i| {
            let (a, b) = (z[3 * i] as f64, z[3 * i + 1] as f64);
            [a, b, 1.5 + 2.0 * a - b + 0.7 * z[3 * i + 2] as f64]
        })
        .collect();
    let mut s = "a,b,y\n".to_string();
    for r in &rows {
        s += &format!("{},{},{}\n", r[0] as f32, r[1] as f32, r[2] as f32);
    }
    let path = dir.join("lin.csv");
    std::fs::write(&path, s).unwrap();
    // The values as the harness reads them.
    let rows = rows.iter().map(|r| r.map(|v| v as f32 as f64)).collect();
    (path, rows)
}

/// Exact means and sds of (β, bias, log σ²) under `nig:100,1,1` (the default prior).
fn nig_exact(rows: &[[f64; 3]]) -> (Vec<f64>, Vec<f64>) {
    let x: Vec<f32> = rows
        .iter()
        .flat_map(|r| [r[0] as f32, r[1] as f32, 1.0])
        .collect();
    let y: Vec<f32> = rows.iter().map(|r| r[2] as f32).collect();
    let p = NigPosterior::new(&x, &y, 3, 100.0, 1.0, 1.0).unwrap();
    (p.mean(), p.sd())
}

#[test]
fn defaults_reach_the_exact_posterior_with_an_intercept_and_record_how() {
    let dir = tempfile::tempdir().unwrap();
    let (train, rows) = data_with_intercept(dir.path());
    let out = dir.path().join("out");
    let o = run(
        &["--model", "linreg", "--train", train.to_str().unwrap()],
        &out,
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!stdout.contains("warning:"), "{stdout}");
    let s = summary(&out);
    assert_eq!(
        param_names(&s),
        ["beta[a]", "beta[b]", "bias", "log_sigma2"]
    );
    let (mean, sd) = nig_exact(&rows);
    for (j, p) in s["params"].as_array().unwrap().iter().enumerate() {
        let (m, q, ess) = (
            p["mean"].as_f64().unwrap(),
            p["sd"].as_f64().unwrap(),
            p["ess_bulk"].as_f64().unwrap(),
        );
        assert!(
            ess >= 400.0 && p["ess_tail"].as_f64().unwrap() >= 400.0,
            "{p}"
        );
        assert!(p["rhat"].as_f64().unwrap() <= 1.01, "{p}");
        let mean_tol = Z / ess.sqrt() + 0.05;
        assert!(
            (m - mean[j]).abs() <= mean_tol * sd[j],
            "{}: mean {m} vs exact {} (sd {})",
            p["name"],
            mean[j],
            sd[j]
        );
        let sd_tol = Z / (2.0 * ess).sqrt() + 0.05;
        assert!(
            (q / sd[j] - 1.0).abs() <= sd_tol,
            "{}: sd {q} vs exact {}",
            p["name"],
            sd[j]
        );
    }
    // What reproduces the run.
    assert_eq!(s["warnings"].as_array().unwrap().len(), 0);
    assert_eq!(s["seed"], 2011);
    assert_eq!(s["prior"], "nig:100,1,1");
    assert_eq!(s["step_size"], "auto");
    assert_eq!(s["weighting"], "uniform");
    assert_eq!(s["data"]["train"]["sha256"].as_str().unwrap().len(), 64);
    assert!(s["version"].is_string() && s["command_line"].is_array());
    let w = &s["warmup"];
    assert_eq!(w["adapted"], true);
    assert_eq!(w["converged"], true);
    assert!(w["alpha"].as_f64().unwrap() <= 0.1, "{w}");
    assert!(w["step_size"].as_f64().unwrap() > 0.0);
    assert_eq!(s["burn_in"], w["steps"]);
    // Four different starts, none of them kept.
    let starts = s["starts"].as_array().unwrap();
    assert_eq!(starts.len(), 4);
    assert_ne!(starts[0], starts[1]);
    let draws = std::fs::read_to_string(out.join("draws.csv")).unwrap();
    let first_step: u64 = draws
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(first_step > s["burn_in"].as_u64().unwrap());

    // --no-bias keeps the intercept-free model.
    let o = run(
        &[
            "--model",
            "linreg",
            "--train",
            train.to_str().unwrap(),
            "--no-bias",
            "--steps",
            "500",
        ],
        &dir.path().join("nb"),
    );
    assert!(o.status.success());
    assert_eq!(summary(&dir.path().join("nb"))["dim"], 3);
}

#[test]
fn same_seed_same_numbers_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _) = data_with_intercept(dir.path());
    let mut params = vec![];
    for threads in ["1", "2"] {
        let out = dir.path().join(format!("t{threads}"));
        let o = sgld()
            .env("RAYON_NUM_THREADS", threads)
            .args([
                "sample",
                "--model",
                "linreg",
                "--train",
                train.to_str().unwrap(),
            ])
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success());
        let s = summary(&out);
        params.push((
            s["params"].clone(),
            s["warmup"]["step_size"].clone(),
            s["steps"].clone(),
        ));
    }
    assert_eq!(params[0], params[1]);
}

#[test]
fn hostile_runs_end_in_a_warning_or_an_error_that_names_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _) = data_with_intercept(dir.path());
    let t = train.to_str().unwrap();
    let runs = std::cell::Cell::new(0);
    let warned = |args: &[&str], want: &str| {
        runs.set(runs.get() + 1);
        let out = dir.path().join(format!("w{}", runs.get()));
        let o = run(args, &out);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            stdout.contains("warning:") && stdout.contains(want),
            "{args:?}: {stdout}"
        );
        let s = summary(&out);
        let ws = s["warnings"].as_array().unwrap();
        assert!(
            ws.iter().any(|w| w.as_str().unwrap().contains(want)),
            "{ws:?}"
        );
        // --strict turns the warnings into a failure.
        let mut strict = args.to_vec();
        strict.extend(["--strict", "--overwrite"]);
        let o = run(&strict, &out);
        assert!(!o.status.success(), "{args:?} --strict");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--strict: "), "{args:?}: {err}");
    };
    // A step far too large for the posterior.
    warned(
        &[
            "--model",
            "linreg",
            "--train",
            t,
            "--step-size",
            "const:3e-3",
            "--steps",
            "2000",
        ],
        "random walk",
    );
    // Too short to mix from dispersed starts.
    warned(
        &[
            "--model",
            "linreg",
            "--train",
            t,
            "--step-size",
            "range:1e-5,1e-6",
            "--steps",
            "300",
            "--burn-in",
            "100",
        ],
        "R̂ > 1.01",
    );
    // A sampling threshold the step cannot reach.
    warned(
        &[
            "--model",
            "linreg",
            "--train",
            t,
            "--step-size",
            "const:1e-3",
            "--steps",
            "3000",
            "--batch",
            "1",
        ],
        "above --alpha",
    );

    // No draws kept: an error, not a table of NaN.
    let o = run(
        &[
            "--model",
            "linreg",
            "--train",
            t,
            "--step-size",
            "const:1e-4",
            "--steps",
            "100",
            "--burn-in",
            "50",
            "--thin",
            "500",
        ],
        &dir.path().join("e"),
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no draws were kept") && err.contains("--thin"),
        "{err}"
    );

    // --init: a start per parameter, checked.
    let o = run(
        &["--model", "linreg", "--train", t, "--init", "1,2"],
        &dir.path().join("i"),
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("4 parameters"));
    let o = run(
        &[
            "--model",
            "linreg",
            "--train",
            t,
            "--init",
            "2,-1,1.5,-0.7",
            "--steps",
            "500",
        ],
        &dir.path().join("i"),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&dir.path().join("i"));
    assert_eq!(s["starts"][0][0].as_f64().unwrap(), 2.0);
    assert_eq!(s["starts"][3][3].as_f64().unwrap() as f32, -0.7f32);
}

/// 300 correlated features (a factor shared by every column: the diagonal of the
/// precision understates each marginal variance about 16 times) and 900 rows: above
/// the dimension at which a dense metric is taken at any size of data, the Laplace
/// approximation is still dense where its cost is small beside a gradient's, and the
/// defaults reach the closed-form posterior.
#[test]
fn a_wide_regression_with_correlated_features_gets_a_dense_metric_and_is_exact() {
    let (n, d) = (900, 300);
    let dir = tempfile::tempdir().unwrap();
    let z = common::normals(n * (d + 2), 41);
    let mut x = vec![0.0f32; n * (d + 1)];
    let mut y = vec![0.0f32; n];
    let mut text = (0..d).map(|j| format!("x{j},")).collect::<String>() + "y\n";
    for i in 0..n {
        let zi = &z[i * (d + 2)..(i + 1) * (d + 2)];
        let shared = 4.0 * zi[d];
        let mut yi = 0.5 * zi[d + 1];
        for j in 0..d {
            // As the harness reads it back from the CSV.
            let v: f32 = (zi[j] + shared).to_string().parse().unwrap();
            x[i * (d + 1) + j] = v;
            yi += v * if j % 3 == 0 { 0.1 } else { 0.0 };
            text += &format!("{v},");
        }
        x[i * (d + 1) + d] = 1.0;
        let yi: f32 = yi.to_string().parse().unwrap();
        y[i] = yi;
        text += &format!("{yi}\n");
    }
    let train = dir.path().join("wide.csv");
    std::fs::write(&train, text).unwrap();
    let out = dir.path().join("out");
    let o = run(
        &["--model", "linreg", "--train", train.to_str().unwrap()],
        &out,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["dim"], d + 2);
    assert_eq!(s["warmup"]["preconditioner"], "dense", "{}", s["warmup"]);
    let exact = NigPosterior::new(&x, &y, d + 1, 100.0, 1.0, 1.0).unwrap();
    let (mean, sd) = (exact.mean(), exact.sd());
    for (j, p) in s["params"].as_array().unwrap().iter().enumerate() {
        let (m, q) = (p["mean"].as_f64().unwrap(), p["sd"].as_f64().unwrap());
        let ess = p["ess_bulk"]
            .as_f64()
            .unwrap()
            .min(p["ess_tail"].as_f64().unwrap());
        assert!(ess >= 400.0 && p["rhat"].as_f64().unwrap() <= 1.01, "{p}");
        // Exact (Metropolis-adjusted): the Monte Carlo error alone.
        assert!(
            (m - mean[j]).abs() <= Z / ess.sqrt() * sd[j],
            "{}: mean {m} vs exact {} (sd {})",
            p["name"],
            mean[j],
            sd[j]
        );
        assert!(
            (q / sd[j] - 1.0).abs() <= Z / (2.0 * ess).sqrt(),
            "{}: sd {q} vs exact {}",
            p["name"],
            sd[j]
        );
    }
}

/// 140,000 rows (enough for the mode search to start on a subsample) of four features on
/// scales from 3·10⁻⁵ to 100 (coefficients from 0.01 to 2·10⁴) and a 0/1 response, and
/// the same rows with every feature brought to scale 1: under a vague prior the two
/// posteriors are one up to those scales, and each run must find it. A mode search that
/// stops by the gradient's size, or a preconditioner whose ridge swamps the small
/// feature's precision, starts the chains thousands of log-density units below the mode.
#[test]
fn features_on_any_scale_sample_as_their_rescaled_copy() {
    let dir = tempfile::tempdir().unwrap();
    let scales = [1.0f32, 0.01, 100.0, 3e-5];
    let beta = [1.0f32, -0.5, 1.0, 0.6];
    let n = 140_000;
    let z = common::normals(5 * n, 31);
    let (mut raw, mut unit) = (vec![], vec![]);
    for r in z.chunks(5) {
        let t: f32 = (0..4).map(|j| beta[j] * r[j]).sum();
        let p = 1.0 / (1.0 + (-t).exp());
        // A uniform from the fifth normal: Φ by the logistic's close fit.
        let u = 1.0 / (1.0 + (-1.702 * r[4]).exp());
        let y = if u < p { 1.0 } else { 0.0 };
        raw.push((0..4).map(|j| r[j] * scales[j]).chain([y]).collect());
        unit.push(r.iter().take(4).copied().chain([y]).collect());
    }
    let header = ["a", "b", "c", "d", "y"];
    let (a, b) = (dir.path().join("raw.csv"), dir.path().join("unit.csv"));
    common::write_csv(&a, &header, &raw);
    common::write_csv(&b, &header, &unit);
    let mut runs = vec![];
    for (train, out) in [(&a, "raw"), (&b, "unit")] {
        let out = dir.path().join(out);
        let o = run(
            &[
                "--model",
                "logistic",
                "--prior",
                "gaussian:1e10",
                "--train",
                train.to_str().unwrap(),
            ],
            &out,
        );
        let (stdout, stderr) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "{stderr}");
        assert!(!stdout.contains("warning:"), "{stdout}");
        let s = summary(&out);
        assert_eq!(s["warnings"].as_array().unwrap().len(), 0);
        runs.push(s);
    }
    let params = |s: &serde_json::Value| s["params"].as_array().unwrap().clone();
    let (pa, pb) = (params(&runs[0]), params(&runs[1]));
    assert_eq!((pa.len(), pb.len()), (5, 5));
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k}: {v}"));
    for (j, (x, y)) in pa.iter().zip(&pb).enumerate() {
        // θ on the raw scale is θ on the unit scale over the feature's scale.
        let s = scales.get(j).map_or(1.0, |&s| s as f64);
        // The two runs' Monte Carlo errors and each one's step bias (under 0.05 sd, 5%).
        let gap = (s * f(x, "mean") - f(y, "mean")).abs();
        let mean_tol = Z * (s * f(x, "mcse_mean")).hypot(f(y, "mcse_mean")) + 0.1 * f(y, "sd");
        let sd_tol = Z * (0.5 / f(x, "ess_bulk") + 0.5 / f(y, "ess_bulk")).sqrt() + 0.1;
        let ratio = s * f(x, "sd") / f(y, "sd");
        assert!(
            gap < mean_tol && (ratio - 1.0).abs() < sd_tol,
            "{}: means {gap} apart (tolerance {mean_tol}), sd ratio {ratio} (tolerance {sd_tol})",
            x["name"]
        );
    }
}
