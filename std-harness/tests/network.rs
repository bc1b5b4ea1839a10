//! `--model mlp` and `Target::network`: a small network's posterior predictive against a
//! long exact-gradient MALA run, classification, the checks, and the errors.

mod common;

use std::path::{Path, PathBuf};

use common::{mala_reference_of, sgld, summary};
use rand_core::SeedableRng;
use sgld::models::{Mlp, Model, Noise};
use sgld::noise::{DefaultRng, fill_normal};
use sgld_harness::sample::network::{self, names};
use sgld_harness::sample::{ModelKind, NetOutput, SampleConfig, SamplerKind, Target, sample_model};
use sgld_harness::spec::{StepChoice, StepSpec, Thin};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sgld-network-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Where the network's predictions are compared (inside and at the edge of the data).
const AT: [f32; 4] = [-1.5, -0.5, 0.5, 1.5];

/// A network's symmetry-free quantities at `theta`: its predictions at [`AT`] and (with
/// a learned precision) `log λ`.
fn functionals(net: &Mlp<'_>, theta: &[f32], out: &mut Vec<f64>) {
    out.extend(AT.iter().map(|x| net.predict(theta, &[*x]) as f64));
    if matches!(net.noise(), Noise::Learned { .. }) {
        out.push(theta[net.dim() - 1] as f64);
    }
}

/// 60 points of `sin(1.5x)` on [−2, 2] with noise sd 0.3.
fn sine_data() -> (Vec<f32>, Vec<f32>) {
    let mut rng = DefaultRng::seed_from_u64(77);
    let mut e = vec![0.0f32; 60];
    fill_normal(&mut rng, &mut e);
    let x: Vec<f32> = (0..60).map(|i| -2.0 + 4.0 * i as f32 / 59.0).collect();
    let y = x
        .iter()
        .zip(&e)
        .map(|(x, e)| (1.5 * x).sin() + 0.3 * e)
        .collect();
    (x, y)
}

/// The functionals of every draw in `dir/draws.csv`, grouped into ten batches per chain:
/// the pooled mean and its batch-means standard error.
fn sampled_functionals(net: &Mlp<'_>, dir: &Path) -> (Vec<f64>, Vec<f64>) {
    let text = std::fs::read_to_string(dir.join("draws.csv")).unwrap();
    let mut per_chain: Vec<Vec<Vec<f64>>> = Vec::new();
    for line in text.lines().skip(1) {
        let v: Vec<f64> = line.split(',').map(|t| t.parse().unwrap()).collect();
        let chain = v[0] as usize;
        let theta: Vec<f32> = v[3..].iter().map(|&a| a as f32).collect();
        let mut f = Vec::new();
        functionals(net, &theta, &mut f);
        if per_chain.len() <= chain {
            per_chain.resize(chain + 1, Vec::new());
        }
        per_chain[chain].push(f);
    }
    let k = per_chain[0][0].len();
    let batches: Vec<Vec<f64>> = per_chain
        .iter()
        .flat_map(|rows| {
            let per = rows.len() / 10;
            (0..10).map(move |b| {
                (0..k)
                    .map(|j| {
                        rows[b * per..(b + 1) * per]
                            .iter()
                            .map(|r| r[j])
                            .sum::<f64>()
                            / per as f64
                    })
                    .collect()
            })
        })
        .collect();
    let nb = batches.len() as f64;
    let mean: Vec<f64> = (0..k)
        .map(|j| batches.iter().map(|b| b[j]).sum::<f64>() / nb)
        .collect();
    let se = (0..k)
        .map(|j| {
            let v = batches
                .iter()
                .map(|b| (b[j] - mean[j]).powi(2))
                .sum::<f64>()
                / (nb - 1.0);
            (v / nb).sqrt()
        })
        .collect();
    (mean, se)
}

/// A network sampled through `Target::network` with each sampler at a small constant
/// step agrees with a long exact-gradient MALA run on the network's predictions and noise
/// precision — quantities its permuting units leave unchanged — within four combined
/// Monte Carlo standard errors plus the step's discretisation bias (at most `ε/2` of a
/// posterior sd for K-FAC's Fisher-scaled step, bounded here by 0.02 of the functional's
/// posterior sd).
#[test]
fn a_small_network_matches_a_long_mala_run() {
    let (x, y) = sine_data();
    let net = Mlp::new(&x, &y, 1, 4, 1.0, network::noise(NetOutput::Gaussian)).unwrap();
    matches_mala(
        &net,
        "sine",
        &[
            (SamplerKind::Kfac, 0.01, 200_000),
            (SamplerKind::Sgld, 2e-5, 400_000),
        ],
    );
}

/// The same for a classifying network: labels the sign of `sin(1.5x)` with 10% flipped;
/// its logits at [`AT`] against MALA's.
#[test]
fn a_small_classifier_matches_a_long_mala_run() {
    let (x, y) = sine_data();
    let labels: Vec<f32> = y
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if (v > 0.0) != (i % 10 == 3) {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let net = Mlp::new(&x, &labels, 1, 4, 1.0, network::noise(NetOutput::Bernoulli)).unwrap();
    matches_mala(&net, "sign", &[(SamplerKind::Kfac, 0.01, 200_000)]);
}

/// Each `(sampler, ε, steps)` through `Target::network` against a long MALA run on `net`.
fn matches_mala(net: &Mlp<'_>, name: &str, runs: &[(SamplerKind, f64, u64)]) {
    let start = network::start(net, 5);
    let reference = mala_reference_of(net, 400_000, start, true, &|theta, out| {
        functionals(net, theta, out)
    });
    assert!(
        reference.acceptance > 0.3,
        "MALA acceptance {}",
        reference.acceptance
    );
    for &(sampler, eps, steps) in runs {
        let out = tmp(&format!("{name}-{}", sampler.name()));
        let mut cfg = SampleConfig::new(ModelKind::Mlp, "unused".into(), out.clone());
        cfg.sampler = sampler;
        cfg.step_size = StepChoice::Given(StepSpec::Const(eps));
        cfg.steps = Some(steps);
        cfg.burn_in = sgld_harness::spec::BurnIn::Steps(steps / 10);
        cfg.thin = Thin::Auto;
        let target = Target::network(net, name, names(&["x".into()], 4, net.noise()));
        let outcome = sample_model(&target, &cfg).unwrap();
        assert!(outcome.failure.is_none());
        let (mean, se) = sampled_functionals(net, &out);
        for j in 0..mean.len() {
            let tol = 4.0 * (se[j].powi(2) + reference.mean_se[j].powi(2)).sqrt()
                + 0.02 * reference.sd[j];
            let what = if j < AT.len() {
                format!("f({})", AT[j])
            } else {
                "log_precision".into()
            };
            eprintln!(
                "{name}, {}: {what}: {:.4} vs MALA {:.4} (tolerance {:.4}; sd {:.4})",
                sampler.name(),
                mean[j],
                reference.mean[j],
                tol,
                reference.sd[j]
            );
            assert!(
                (mean[j] - reference.mean[j]).abs() <= tol,
                "{name}, {}: {what}: {} vs MALA {} (tolerance {tol})",
                sampler.name(),
                mean[j],
                reference.mean[j]
            );
        }
        let s = summary(&out);
        assert_eq!(s["network"]["hidden"], 4);
        assert_eq!(s["network"]["groups"].as_array().unwrap().len(), 4);
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// Points in the square [−2, 2]² labelled 1 inside the circle of radius 1.2, 0 outside
/// (no straight boundary separates them), as a headed CSV.
fn write_circle(path: &Path, n: usize, seed: u64) {
    let mut rng = DefaultRng::seed_from_u64(seed);
    let u: Vec<f32> = (0..2 * n)
        .map(|_| (rand_core::Rng::next_u32(&mut rng) >> 8) as f32 / (1u32 << 24) as f32)
        .collect();
    let mut text = String::from("a,b,inside\n");
    for p in u.chunks_exact(2) {
        let (a, b) = (4.0 * p[0] - 2.0, 4.0 * p[1] - 2.0);
        let inside = u8::from(a * a + b * b < 1.44);
        text += &format!("{a},{b},{inside}\n");
    }
    std::fs::write(path, text).unwrap();
}

/// Classification from the command line with each sampler and the defaults: the
/// posterior predictive finds the circle that logistic regression cannot draw, and the
/// outputs describe the network.
#[test]
fn classification_from_the_command_line() {
    let dir = tmp("circle");
    let (train, test) = (dir.join("train.csv"), dir.join("test.csv"));
    write_circle(&train, 600, 1);
    write_circle(&test, 300, 2);
    for sampler in ["kfac", "psgld", "sgld"] {
        let out = dir.join(sampler);
        let o = sgld()
            .args([
                "sample",
                "--model",
                "mlp",
                "--output",
                "bernoulli",
                "--hidden",
                "16",
            ])
            .args(["--sampler", sampler, "--train"])
            .arg(&train)
            .arg("--test")
            .arg(&test)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{sampler}: {stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let s = summary(&out);
        let acc = s["test"]["accuracy"].as_f64().unwrap();
        eprintln!(
            "{sampler}: accuracy {acc}, step {}",
            s["warmup"]["step_size"]
        );
        assert!(acc > 0.9, "{sampler}: accuracy {acc}\n{stdout}");
        assert_eq!(s["model"], "mlp");
        assert_eq!(s["sampler"], sampler);
        assert_eq!(s["dim"], 16 * 3 + 16 + 1);
        assert_eq!(s["network"]["output"], "bernoulli");
        assert!(s["network"]["scaling"]["y_sd"].is_null());
        assert_eq!(
            s["network"]["step_grid"].as_array().unwrap().len(),
            network::grid(
                match sampler {
                    "kfac" => SamplerKind::Kfac,
                    "psgld" => SamplerKind::Psgld,
                    _ => SamplerKind::Sgld,
                },
                600
            )
            .len()
        );
        // The compact table, not 65 rows of weights; lp__ is what the checks read.
        assert!(
            stdout.contains("layer") && stdout.contains("lp__"),
            "{stdout}"
        );
        assert!(!stdout.contains("w1[1:a]"), "{stdout}");
        let header = std::fs::read_to_string(out.join("draws.csv")).unwrap();
        let header = header.lines().next().unwrap();
        assert!(header.starts_with("chain,step,step_size,w1[1:a],w1[1:b],b1[1],w1[2:a]"));
        assert!(header.ends_with("w2[16],b2"), "{header}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// What does not apply to a network, or a network's sampler to anything else, is refused
/// with a reason before any data are read.
#[test]
fn network_options_are_checked() {
    let dir = tmp("refused");
    let train = dir.join("train.csv");
    write_circle(&train, 50, 3);
    let cases: [(&[&str], &str); 7] = [
        (
            &["--model", "logistic", "--hidden", "3"],
            "need --model mlp",
        ),
        (
            &["--model", "logistic", "--sampler", "kfac"],
            "needs --model mlp",
        ),
        (
            &["--model", "mlp", "--sampler", "mala"],
            "kfac (the default), psgld or sgld",
        ),
        (&["--model", "mlp", "--prior", "laplace:1"], "gaussian:V"),
        (&["--model", "mlp", "--cv"], "many"),
        (&["--model", "mlp", "--hidden", "0"], "--hidden must be"),
        (
            &["--model", "mlp", "--output", "bernoulli", "--target", "a"],
            "not ±1 or 0/1",
        ),
    ];
    for (args, why) in cases {
        let o = sgld()
            .arg("sample")
            .args(args)
            .arg("--train")
            .arg(&train)
            .arg("--out")
            .arg(dir.join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} ran");
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // Too few rows to hold a tenth out: the step must be given.
    let tiny = dir.join("tiny.csv");
    write_circle(&tiny, 12, 4);
    let o = sgld()
        .args([
            "sample",
            "--model",
            "mlp",
            "--output",
            "bernoulli",
            "--train",
        ])
        .arg(&tiny)
        .arg("--out")
        .arg(dir.join("tiny"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--step-size const:"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Boston housing's 20 standard splits (PBP's), each as train and test CSVs in `dir`.
fn boston_splits(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets/uci_pbp/bostonHousing");
    let read = |name: &str| -> Vec<Vec<f64>> {
        std::fs::read_to_string(src.join(name))
            .unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (the shared data sets sit beside the repository)",
                    src.join(name).display()
                )
            })
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.split_whitespace().map(|t| t.parse().unwrap()).collect())
            .collect()
    };
    let data = read("data.txt");
    let features: Vec<usize> = read("index_features.txt")
        .iter()
        .map(|r| r[0] as usize)
        .collect();
    let target = read("index_target.txt")[0][0] as usize;
    let mut header: Vec<String> = features.iter().map(|j| format!("x{j}")).collect();
    header.push("medv".into());
    let header = header.join(",");
    (0..20)
        .map(|i| {
            let write = |kind: &str| {
                let path = dir.join(format!("{kind}_{i}.csv"));
                let mut text = header.clone() + "\n";
                for r in read(&format!("index_{kind}_{i}.txt")) {
                    let row = &data[r[0] as usize];
                    let mut cells: Vec<String> =
                        features.iter().map(|&j| row[j].to_string()).collect();
                    cells.push(row[target].to_string());
                    text += &(cells.join(",") + "\n");
                }
                std::fs::write(&path, text).unwrap();
                path
            };
            (write("train"), write("test"))
        })
        .collect()
}

/// `sgld sample --model mlp --sampler kfac` with the defaults (the reproduction's width,
/// batch, length and burn-in) on each of Boston's 20 standard splits: the mean test
/// log-likelihood is at least `sgld reproduce boston`'s K-FAC figure over the same splits,
/// −2.63 (the command pools four chains and every draw after burn-in where the
/// reproduction keeps ten draws of one chain).
#[test]
fn boston_from_the_command_line_matches_the_reproduction() {
    let dir = tmp("boston");
    let lls: Vec<f64> = boston_splits(&dir)
        .iter()
        .enumerate()
        .map(|(i, (train, test))| {
            let out = dir.join(format!("out_{i}"));
            let o = sgld()
                .args(["sample", "--model", "mlp", "--sampler", "kfac", "--train"])
                .arg(train)
                .arg("--test")
                .arg(test)
                .arg("--out")
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "split {i}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let s = summary(&out);
            assert_eq!(s["steps"], 1300);
            assert_eq!(s["burn_in"], 300);
            assert_eq!(s["batch"], 32);
            assert_eq!(s["network"]["hidden"], 50);
            s["test"]["log_lik_per_datum"].as_f64().unwrap()
        })
        .collect();
    let n = lls.len() as f64;
    let mean = lls.iter().sum::<f64>() / n;
    let sd = (lls.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    eprintln!("Boston, 20 splits: test log-likelihood {mean:.3} ± {sd:.3}");
    assert!(mean >= -2.63, "test log-likelihood {mean:.3} ± {sd:.3}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A network run split with `--chain-ids` merges into the whole run's summary, and
/// `sgld summarize` checks what `sgld sample` checks (log_precision), not single weights.
#[test]
fn summarize_merges_a_split_network_run() {
    let dir = tmp("split");
    let (x, y) = sine_data();
    let mut text = String::from("x,y\n");
    for (a, b) in x.iter().zip(&y) {
        text += &format!("{a},{b}\n");
    }
    let train = dir.join("sine.csv");
    std::fs::write(&train, text).unwrap();
    let run = |ids: Option<&str>, out: &str| {
        let mut c = sgld();
        c.args([
            "sample", "--model", "mlp", "--hidden", "6", "--steps", "1300", "--train",
        ])
        .arg(&train)
        .arg("--out")
        .arg(dir.join(out));
        if let Some(ids) = ids {
            c.args(["--chain-ids", ids]);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run(None, "whole");
    run(Some("0..2"), "a");
    run(Some("2..4"), "b");
    let o = sgld()
        .arg("summarize")
        .args([dir.join("a"), dir.join("b")])
        .arg("--out")
        .arg(dir.join("merged"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout.contains("layer") && !stdout.contains("w1[1:x]"),
        "{stdout}"
    );
    let (whole, merged) = (summary(&dir.join("whole")), summary(&dir.join("merged")));
    assert_eq!(whole["params"], merged["params"]);
    assert_eq!(whole["network"]["groups"], merged["network"]["groups"]);
    let checked = merged["network"]["checked"].as_array().unwrap();
    assert_eq!(checked.len(), 1);
    assert_eq!(checked[0]["name"], "log_precision");
    // No warning names a single weight.
    for w in merged["warnings"].as_array().unwrap() {
        assert!(!w.as_str().unwrap().contains("w1["), "{w}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
