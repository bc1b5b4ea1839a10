//! `sgld sample --model poisson` and `--model probit` with their defaults against a
//! reference posterior from a long exact-gradient MALA run on the same data (the core's
//! `Glm` model, built here independently of the CLI's data path).
//!
//! Tolerances: a mean passes within `z·sd/√ESS_bulk` plus `z` times the reference's
//! batch-means MCSE; an sd within `z·sd·√(1/(2·ESS))` plus `z` times the reference sd's
//! MCSE plus the discretisation inflation of the adapted run, `(ε/4 + α)/2` relative (ε
//! the warm-up's step in the preconditioned coordinates, α the sampling threshold it
//! reached, both from summary.json). `z = 4.5` (two-sided family error below 10⁻³).

use std::path::{Path, PathBuf};
mod common;

use rand_core::Rng;
use sgld::models::{DenseRows, Family, Glm, Laplace, Poisson, Probit};
use sgld::noise::{default_rng, fill_normal};

use common::{mala_reference, param_names, sgld, summary};

const Z: f64 = 4.5;

/// `n` rows of three standard-normal features; the response of row `i` from
/// `response(η, u)` with `η = 0.5 + xᵀβ` and `u` uniform in (0, 1).
fn data(n: usize, beta: [f32; 3], seed: u64, response: impl Fn(f64, f64) -> f32) -> Vec<[f32; 4]> {
    let mut z = vec![0.0f32; 3 * n];
    fill_normal(&mut default_rng(seed), &mut z);
    let mut u = default_rng(seed + 1);
    z.chunks_exact(3)
        .map(|x| {
            let eta = 0.5 + x.iter().zip(beta).map(|(a, b)| a * b).sum::<f32>();
            let uu = ((u.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            [x[0], x[1], x[2], response(eta as f64, uu)]
        })
        .collect()
}

/// A Poisson(λ) count by inversion of its cdf at `u`.
fn poisson(lambda: f64, u: f64) -> f32 {
    let (mut k, mut p) = (0u32, (-lambda).exp());
    let mut cdf = p;
    while cdf < u && k < 10_000 {
        k += 1;
        p *= lambda / k as f64;
        cdf += p;
    }
    k as f32
}

fn write(path: &Path, header: &str, rows: &[[f32; 4]], y: impl Fn(f32) -> f32) {
    let mut s = format!("{header}\n");
    for r in rows {
        s += &format!("{},{},{},{}\n", r[0], r[1], r[2], y(r[3]));
    }
    std::fs::write(path, s).unwrap();
}

/// Runs `sgld sample` with its defaults and checks the summary against the reference of
/// `F` on the same rows (bias last, Laplace(1) prior, ±1 labels for probit).
fn check_against_reference<F: Family>(
    model: &str,
    family: F,
    rows: &[[f32; 4]],
    dir: &Path,
) -> serde_json::Value {
    let train: PathBuf = dir.join(format!("{model}.csv"));
    // Probit labels are written as 0/1, as a user's file would have them.
    write(&train, "x1,x2,x3,y", rows, |y| {
        if model == "probit" {
            f32::from(y > 0.0)
        } else {
            y
        }
    });
    let out = dir.join(model);
    let o = sgld()
        .args(["sample", "--model", model, "--train"])
        .arg(&train)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!stdout.contains("warning:"), "{stdout}");
    let s = summary(&out);
    assert_eq!(s["model"], model);
    assert_eq!(
        param_names(&s),
        ["beta[x1]", "beta[x2]", "beta[x3]", "bias"]
    );
    assert_eq!(s["prior"], "laplace:1");

    // The reference on the same rows, with the bias as a fourth column of ones.
    let x: Vec<f32> = rows.iter().flat_map(|r| [r[0], r[1], r[2], 1.0]).collect();
    let y: Vec<f32> = rows.iter().map(|r| r[3]).collect();
    let m = Glm::new(
        DenseRows::new(&x, 4).unwrap(),
        &y,
        family,
        Laplace::new(1.0).unwrap(),
    )
    .unwrap();
    let r = mala_reference(&m, 300_000);
    assert!(r.acceptance > 0.3, "reference acceptance {}", r.acceptance);
    let w = &s["warmup"];
    let bias = (w["step_size"].as_f64().unwrap() / 4.0 + w["alpha"].as_f64().unwrap()) / 2.0;
    for (j, p) in s["params"].as_array().unwrap().iter().enumerate() {
        let (mean, sd, ess) = (
            p["mean"].as_f64().unwrap(),
            p["sd"].as_f64().unwrap(),
            p["ess_bulk"].as_f64().unwrap(),
        );
        assert!(p["rhat"].as_f64().unwrap() <= 1.01, "{p}");
        let tol = Z * sd / ess.sqrt() + Z * r.mean_se[j];
        eprintln!(
            "{model} {}: mean {mean:.4} vs {:.4} (tol {tol:.4}); sd {sd:.4} vs {:.4}",
            p["name"], r.mean[j], r.sd[j]
        );
        assert!(
            (mean - r.mean[j]).abs() <= tol,
            "{model} {}: mean {mean} vs {}",
            p["name"],
            r.mean[j]
        );
        let sd_tol = Z * sd * (1.0 / (2.0 * ess)).sqrt() + Z * r.sd_se[j] + bias * r.sd[j];
        assert!(
            (sd - r.sd[j]).abs() <= sd_tol,
            "{model} {}: sd {sd} vs {}",
            p["name"],
            r.sd[j]
        );
    }
    s
}

#[test]
fn poisson_regression_matches_a_long_mala_run() {
    let dir = tempfile::tempdir().unwrap();
    let rows = data(600, [0.5, -0.3, 0.2], 11, |eta, u| poisson(eta.exp(), u));
    check_against_reference("poisson", Poisson, &rows, dir.path());
}

#[test]
fn probit_regression_matches_a_long_mala_run() {
    let dir = tempfile::tempdir().unwrap();
    let phi = |t: f64| sgld::models::log_normal_cdf(t).exp();
    let rows = data(600, [1.0, -0.7, 0.4], 21, |eta, u| {
        if u < phi(eta) { 1.0 } else { -1.0 }
    });
    check_against_reference("probit", Probit, &rows, dir.path());
}

#[test]
fn glm_responses_are_checked_and_test_sets_scored() {
    let dir = tempfile::tempdir().unwrap();
    let rows = data(300, [0.5, -0.3, 0.2], 31, |eta, u| poisson(eta.exp(), u));
    let (train, test) = (dir.path().join("train.csv"), dir.path().join("test.csv"));
    write(&train, "x1,x2,x3,count", &rows[..200], |y| y);
    write(&test, "x1,x2,x3,count", &rows[200..], |y| y);
    let out = dir.path().join("out");
    let o = sgld()
        .args(["sample", "--model", "poisson", "--steps", "2000", "--train"])
        .arg(&train)
        .arg("--test")
        .arg(&test)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = &summary(&out)["test"];
    // Counts of mean e^0.5·(about 1.2) have an RMSE near √λ ≈ 1.3 under the truth.
    let rmse = t["rmse"].as_f64().unwrap();
    assert!((0.5..3.0).contains(&rmse), "{t}");
    assert!(t["log_lik_per_datum"].as_f64().unwrap() < 0.0);
    assert!(t["accuracy"].is_null());

    // A count that is not a whole number, and a probit label that is not 0/1 or ±1, are
    // refused at their line.
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "x,y\n1,2\n2,1.5\n").unwrap();
    for (model, want) in [
        ("poisson", "line 3: response 1.5 is not a count"),
        ("probit", "line 2: label 2 is not ±1 or 0/1"),
    ] {
        let o = sgld()
            .args(["sample", "--model", model, "--train"])
            .arg(&bad)
            .arg("--out")
            .arg(dir.path().join("bad"))
            .output()
            .unwrap();
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{model}: {err}");
    }
    // The linreg prior does not apply.
    let o = sgld()
        .args([
            "sample",
            "--model",
            "probit",
            "--prior",
            "nig:1,1,1",
            "--train",
        ])
        .arg(&train)
        .arg("--out")
        .arg(dir.path().join("nig"))
        .output()
        .unwrap();
    assert!(!o.status.success());
}
