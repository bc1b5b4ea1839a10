//! What `sgld sample` makes of its input files and what it records of a run that
//! stopped: test columns matched by name, a LIBSVM test file's unknown features, the
//! steps that ran, one training row.

use std::path::Path;

mod common;

use common::{normals, run_ok, sgld, summary, write_csv};

/// `sgld sample --model MODEL --train TRAIN --test TEST --out OUT`, which must succeed.
fn sample_with_test(model: &str, train: &Path, test: &Path, out: &Path) {
    let [train, test, out] = [train, test, out].map(|p| p.to_str().unwrap());
    run_ok(&[
        "sample", "--model", model, "--train", train, "--test", test, "--out", out,
    ]);
}

#[test]
fn test_columns_are_matched_by_name() {
    // The same 100 test rows in three column orders give the same test metrics; a
    // renamed or an extra column is an error naming it.
    let dir = tempfile::tempdir().unwrap();
    let z = normals(900, 21);
    let row = |k: usize| {
        let (a, b) = (z[3 * k], z[3 * k + 1]);
        vec![a, b, 1.0 + 2.0 * a - b + 0.3 * z[3 * k + 2]]
    };
    let train = dir.path().join("train.csv");
    write_csv(
        &train,
        &["a", "b", "y"],
        &(0..200).map(row).collect::<Vec<_>>(),
    );
    let test_rows: Vec<Vec<f32>> = (200..300).map(row).collect();
    let reorder = |idx: [usize; 3]| -> Vec<Vec<f32>> {
        test_rows
            .iter()
            .map(|r| idx.iter().map(|&j| r[j]).collect())
            .collect()
    };
    let tests = [
        ("same.csv", ["a", "b", "y"], [0, 1, 2]),
        ("swapped.csv", ["b", "a", "y"], [1, 0, 2]),
        ("target_first.csv", ["y", "b", "a"], [2, 1, 0]),
    ];
    let mut metrics = vec![];
    for (name, header, idx) in tests {
        let path = dir.path().join(name);
        write_csv(&path, &header, &reorder(idx));
        let out = dir.path().join(format!("out_{name}"));
        sample_with_test("linreg", &train, &path, &out);
        let s = summary(&out);
        assert!(
            s["warnings"].as_array().unwrap().is_empty(),
            "{name}: {}",
            s["warnings"]
        );
        metrics.push(s["test"].to_string());
    }
    assert_eq!(metrics[0], metrics[1]);
    assert_eq!(metrics[0], metrics[2]);
    for (name, header, what) in [
        ("renamed.csv", ["a", "bb", "y"], "\"bb\""),
        ("no_target.csv", ["a", "b", "z"], "\"y\""),
    ] {
        let path = dir.path().join(name);
        write_csv(&path, &header, &test_rows);
        let out = sgld()
            .args(["sample", "--model", "linreg", "--train"])
            .arg(&train)
            .arg("--test")
            .arg(&path)
            .arg("--out")
            .arg(dir.path().join("bad"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}");
        assert!(err.contains(what) && err.contains(name), "{name}: {err}");
    }
}

#[test]
fn a_libsvm_test_file_with_unknown_features_warns() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = (dir.path().join("train.svm"), dir.path().join("test.svm"));
    let rows: String = (0..60)
        .map(|i| format!("{} {}:1 3:1\n", if i % 3 == 0 { -1 } else { 1 }, 1 + i % 2))
        .collect();
    std::fs::write(&train, rows).unwrap();
    std::fs::write(&test, "1 1:1 5:1\n-1 2:1 7:1\n1 1:1\n").unwrap();
    let out = dir.path().join("out");
    sample_with_test("logistic", &train, &test, &out);
    let s = summary(&out);
    let w = s["warnings"].to_string();
    assert!(
        w.contains("2 test rows use feature indices beyond the training data's 3"),
        "{w}"
    );
}

#[test]
fn a_stopped_run_records_the_steps_that_ran_and_one_row_samples() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.csv");
    let z = normals(60, 5);
    let rows: Vec<Vec<f32>> = (0..20).map(|i| z[3 * i..3 * i + 3].to_vec()).collect();
    write_csv(&train, &["a", "b", "y"], &rows);
    let out = dir.path().join("explodes");
    let status = sgld()
        .args([
            "sample",
            "--model",
            "linreg",
            "--step-size",
            "const:1e9",
            "--train",
        ])
        .arg(&train)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap()
        .status;
    assert!(!status.success());
    let steps = summary(&out)["steps"].as_u64().unwrap();
    assert!(steps < 100, "summary.json says {steps} steps ran");
    // One training row, a given step: its gradient noise is none, not an error.
    let one = dir.path().join("one.csv");
    write_csv(&one, &["a", "b", "y"], &rows[..1]);
    let out = dir.path().join("one");
    run_ok(&[
        "sample",
        "--model",
        "linreg",
        "--step-size",
        "const:0.01",
        "--train",
        one.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(summary(&out)["steps"].as_u64(), Some(10_000));
}

/// The draws of a run, without the header (the column names differ between formats).
fn draw_rows(out: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(out.join("draws.csv")).unwrap();
    text.lines().skip(1).map(str::to_string).collect()
}

#[test]
fn npy_data_sample_as_the_csv_they_came_from() {
    // `sgld data convert` writes the CSV's values as a .npy matrix; sampling it, with the
    // response as its last column or as a labels file, gives the CSV run's draws, bit for
    // bit, under the columns' indices.
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let z = normals(600, 31);
    let rows: Vec<Vec<f32>> = (0..200)
        .map(|k| {
            let (a, b) = (z[3 * k], z[3 * k + 1]);
            vec![
                a,
                b,
                if a - 0.5 * b + z[3 * k + 2] > 0.0 {
                    1.0
                } else {
                    0.0
                },
            ]
        })
        .collect();
    write_csv(&p("d.csv"), &["a", "b", "y"], &rows);
    let s = |x: &Path| x.to_str().unwrap().to_string();
    let said = run_ok(&["data", "convert", &s(&p("d.csv")), &s(&p("d.npy"))]);
    assert!(said.contains("200 x 3 float32"), "{said}");
    let sample = |train: &str, extra: &[&str], out: &str| {
        let mut args = vec![
            "sample", "--model", "logistic", "--train", train, "--out", out,
        ];
        args.extend_from_slice(extra);
        run_ok(&args)
    };
    sample(&s(&p("d.csv")), &[], &s(&p("csv")));
    sample(&s(&p("d.npy")), &[], &s(&p("npy")));
    assert_eq!(draw_rows(&p("csv")), draw_rows(&p("npy")));
    let names = summary(&p("npy"));
    assert_eq!(
        common::param_names(&names),
        vec!["beta[0]", "beta[1]", "bias"]
    );
    // The labels in a file of their own (the design's last column is then a feature:
    // here the design is the CSV's first two columns).
    let ab: Vec<f32> = rows.iter().flat_map(|r| [r[0], r[1]]).collect();
    let y: Vec<f32> = rows.iter().map(|r| r[2]).collect();
    write_npy(&p("x.npy"), &ab, 200, 2);
    write_npy(&p("y.npy"), &y, 200, 0);
    sample(
        &s(&p("x.npy")),
        &[
            "--labels",
            &s(&p("y.npy")),
            "--test",
            &s(&p("x.npy")),
            "--test-labels",
            &s(&p("y.npy")),
        ],
        &s(&p("lab")),
    );
    assert_eq!(draw_rows(&p("csv")), draw_rows(&p("lab")));
    // A mapped design is hashed beside the run: summary.json still records each file's
    // sha256, the test file's too.
    let sha = |f: &str| sgld_harness::data::registry::sha256_file(&p(f)).unwrap();
    assert_eq!(names["data"]["train"]["sha256"], sha("d.npy").as_str());
    let lab = summary(&p("lab"));
    assert_eq!(lab["data"]["train"]["sha256"], sha("x.npy").as_str());
    assert_eq!(lab["data"]["test"]["sha256"], sha("x.npy").as_str());
    assert_eq!(lab["data"]["test"]["path"], s(&p("x.npy")).as_str());
}

/// A little-endian f32 .npy of `rows × cols` (`cols` 0: a 1-D array).
fn write_npy(path: &Path, values: &[f32], rows: usize, cols: usize) {
    let shape = if cols == 0 {
        format!("({rows},)")
    } else {
        format!("({rows}, {cols})")
    };
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}\n");
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    bytes.extend_from_slice(dict.as_bytes());
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn bad_npy_inputs_are_one_line_errors_that_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let x: Vec<f32> = (0..40).map(|k| (k % 7) as f32 - 3.0).collect();
    write_npy(&p("x.npy"), &x, 20, 2);
    let mut truncated = std::fs::read(p("x.npy")).unwrap();
    truncated.truncate(truncated.len() - 6);
    std::fs::write(p("short.npy"), truncated).unwrap();
    write_npy(&p("y19.npy"), &[1.0; 19], 19, 0);
    let s = |x: &Path| x.to_str().unwrap().to_string();
    let cases: [(Vec<String>, &str); 4] = [
        (vec!["--train".into(), s(&p("short.npy"))], "truncated"),
        (
            vec![
                "--train".into(),
                s(&p("x.npy")),
                "--labels".into(),
                s(&p("y19.npy")),
            ],
            "19 labels for a design of 20 rows",
        ),
        (
            vec![
                "--train".into(),
                s(&p("x.npy")),
                "--target".into(),
                "a".into(),
            ],
            "0-based column index",
        ),
        (
            vec![
                "--train".into(),
                s(&p("x.npy")),
                "--target".into(),
                "5".into(),
            ],
            "columns 0 to 1",
        ),
    ];
    for (k, (args, what)) in cases.iter().enumerate() {
        let out = p(&format!("out{k}"));
        let o = common::sgld()
            .args(["sample", "--model", "linreg", "--out", &s(&out)])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!out.join("draws.csv").exists() && !out.join("summary.json").exists());
    }
}

#[test]
fn libsvm_values_sample_as_their_dense_matrix() {
    // 300 LIBSVM rows of 200 features with about six non-zeros of varied values each (3%
    // filled: read as sparse rows with values, logistic regression as the logit GLM) and
    // the same matrix written out in full by `sgld data convert` (the dense logistic
    // model): the two posteriors agree within their Monte Carlo errors.
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let (n, d) = (300usize, 200usize);
    let z = normals(n * 8, 41);
    let mut text = String::new();
    for i in 0..n {
        let mut cols: Vec<usize> = (0..6).map(|k| (i * 53 + k * 31 + k * k * 7) % d).collect();
        cols.sort_unstable();
        cols.dedup();
        let vals: Vec<f32> = (0..cols.len()).map(|k| 0.3 + z[i * 8 + k].abs()).collect();
        let margin: f32 = cols
            .iter()
            .zip(&vals)
            .map(|(&j, v)| v * (j % 5) as f32 * 0.4 - 0.8 * v)
            .sum();
        let y = if margin + z[i * 8 + 7] > 0.0 { 1 } else { -1 };
        text.push_str(&y.to_string());
        for (j, v) in cols.iter().zip(&vals) {
            text.push_str(&format!(" {}:{v}", j + 1));
        }
        text.push('\n');
    }
    std::fs::write(p("v.libsvm"), text).unwrap();
    let s = |x: &Path| x.to_str().unwrap().to_string();
    run_ok(&["data", "convert", &s(&p("v.libsvm")), &s(&p("v.npy"))]);
    for (train, out) in [("v.libsvm", "sparse"), ("v.npy", "dense")] {
        run_ok(&[
            "sample",
            "--model",
            "logistic",
            "--prior",
            "gaussian:1",
            "--train",
            &s(&p(train)),
            "--out",
            &s(&p(out)),
        ]);
    }
    let (a, b) = (summary(&p("sparse")), summary(&p("dense")));
    let (a, b) = (
        a["params"].as_array().unwrap(),
        b["params"].as_array().unwrap(),
    );
    assert_eq!((a.len(), b.len()), (d + 1, d + 1));
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap();
    for (pa, pb) in a.iter().zip(b) {
        let z = (f(pa, "mean") - f(pb, "mean")) / f(pa, "mcse_mean").hypot(f(pb, "mcse_mean"));
        // The sd's relative error is about 1/√(2·ESS) in each run.
        let sd_tol = 5.0 * (0.5 / f(pa, "ess_bulk") + 0.5 / f(pb, "ess_bulk")).sqrt();
        let ratio = f(pa, "sd") / f(pb, "sd");
        assert!(
            z.abs() < 5.0 && (ratio - 1.0).abs() < sd_tol,
            "{pa} vs {pb}: z {z}, sd ratio {ratio}"
        );
    }
}

#[test]
fn sparse_rows_with_a_laplace_prior_run_hmc_sheared_into_the_bias() {
    // 800 LIBSVM rows of 12 of 1,500 binary features (a diagonal metric) with the
    // default Laplace prior: exact HMC, its metric sheared into the intercept, which the
    // warm-up line and summary.json name; and no warning that blames the step for the
    // intercept's draws being wider than its conditional sd at the mode.
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let (n, d) = (800usize, 1500usize);
    let z = normals(n, 43);
    let mut text = String::new();
    for (i, zi) in z.iter().enumerate() {
        let mut cols: Vec<usize> = (0..12).map(|k| (i * 97 + k * 131) % d).collect();
        cols.sort_unstable();
        cols.dedup();
        let margin: f64 = cols.iter().map(|&j| 0.2 * ((j % 7) as f64 - 3.0)).sum();
        text.push_str(if margin + 0.5 + *zi as f64 > 0.0 {
            "1"
        } else {
            "-1"
        });
        for j in cols {
            text.push_str(&format!(" {}:1", j + 1));
        }
        text.push('\n');
    }
    std::fs::write(p("s.libsvm"), text).unwrap();
    let s = |x: &Path| x.to_str().unwrap().to_string();
    let stdout = run_ok(&[
        "sample",
        "--model",
        "logistic",
        "--format",
        "libsvm",
        "--train",
        &s(&p("s.libsvm")),
        "--out",
        &s(&p("out")),
    ]);
    assert!(stdout.contains("metric sheared into bias"), "{stdout}");
    let sum = summary(&p("out"));
    assert_eq!(sum["sampler"], "hmc");
    let params = sum["params"].as_array().unwrap();
    assert_eq!(params.len(), d + 1);
    let hub = sum["warmup"]["sheared_into"].as_u64().expect("a shear") as usize;
    assert_eq!(params[hub]["name"], "bias");
    for w in sum["warnings"].as_array().unwrap() {
        assert!(!w.as_str().unwrap().contains("step size"), "{w}");
    }
}
