//! `sgld sample`'s per-chain outputs: CmdStan CSV files (`chain_1.csv`, …) and NumPy
//! arrays (`chain_1.npy`, …) hold exactly the draws of `draws.csv`, with the header that
//! CmdStan readers parse, and `lp__` is the log posterior at each draw. (`.ci/run` also
//! reads them with a real ArviZ and compares its ESS and R̂ with summary.json's.) A run
//! split with `--chain-ids` and merged by `sgld summarize` is the whole run.

use std::path::Path;

mod common;
use common::{sgld, summary};

/// 200 rows of two features and a 0/1 label (deterministic, not separable).
fn data(path: &Path) -> Vec<(f64, f64, f64)> {
    let mut csv = String::from("a,b,y\n");
    let mut rows = vec![];
    for i in 0..200 {
        let (a, b) = ((i as f64 * 0.37).sin(), (i as f64 * 0.71).cos());
        let y = if (a - 0.5 * b + 0.3 * (i as f64 * 1.3).sin()) > 0.0 {
            1.0
        } else {
            0.0
        };
        csv += &format!("{a},{b},{y}\n");
        // The values as the CLI reads them (f32).
        rows.push((
            a as f32 as f64,
            b as f32 as f64,
            if y == 1.0 { 1.0 } else { -1.0 },
        ));
    }
    std::fs::write(path, csv).unwrap();
    rows
}

/// The comment lines, the header row and the data rows of a CmdStan file.
fn cmdstan(path: &Path) -> (Vec<String>, Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let (comments, rest): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.starts_with('#'));
    let header = rest[0].split(',').map(String::from).collect();
    let rows = rest[1..]
        .iter()
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    (
        comments.into_iter().map(String::from).collect(),
        header,
        rows,
    )
}

#[test]
fn chain_files_hold_the_draws_with_cmdstan_names_and_lp() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.csv");
    let rows = data(&train);
    let out = dir.path().join("out");
    let o = sgld()
        .args([
            "sample",
            "--model",
            "logistic",
            "--prior",
            "gaussian:1",
            "--step-size",
        ])
        .args([
            "const:2e-3",
            "--steps",
            "3000",
            "--burn-in",
            "1000",
            "--chains",
            "2",
        ])
        .args(["--seed", "3", "--train"])
        .arg(&train)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&out);
    let draws = std::fs::read_to_string(out.join("draws.csv")).unwrap();
    let draws: Vec<Vec<&str>> = draws
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    for c in 0..2 {
        let (comments, header, data) = cmdstan(&out.join(format!("chain_{}.csv", c + 1)));
        for want in [
            "# method = sample (Default)",
            "#     num_samples = 2000",
            "#     num_warmup = 1000",
            "#     save_warmup = 0",
            "#     thin = 1",
            "#   seed = 3",
            "# beta.1 = beta[a]",
            "#  Elapsed Time: ",
        ] {
            assert!(
                comments.iter().any(|l| l.starts_with(want)),
                "chain {c}: no {want:?} in {comments:?}"
            );
        }
        assert_eq!(header, ["lp__", "stepsize__", "beta.1", "beta.2", "bias"]);
        // The same draws, digit for digit, as draws.csv's rows of this chain.
        let mine: Vec<&Vec<&str>> = draws.iter().filter(|r| r[0] == c.to_string()).collect();
        assert_eq!(mine.len(), 2000);
        let text = std::fs::read_to_string(out.join(format!("chain_{}.csv", c + 1))).unwrap();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .skip(1)
            .collect();
        for (line, row) in lines.iter().zip(&mine) {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields[1..], row[2..], "step {}", row[1]);
        }
        // lp__ is log p(θ) + Σ log σ(y xᵀθ) up to a constant: its differences from the
        // first draw's, recomputed here in f64 from the printed (exact f32) values.
        let lp = |r: &[f64]| {
            let (b1, b2, bias) = (r[2], r[3], r[4]);
            let prior = -0.5 * (b1 * b1 + b2 * b2 + bias * bias);
            let lik: f64 = rows
                .iter()
                .map(|&(a, b, y)| {
                    let m = y * (b1 * a + b2 * b + bias);
                    -(-m).exp().ln_1p()
                })
                .sum();
            prior + lik
        };
        let (lp0, mine0) = (data[0][0], lp(&data[0]));
        for r in &data {
            let (got, want) = (r[0] - lp0, lp(r) - mine0);
            // f32 margins summed over 200 rows: a few 10⁻⁶ of the sum's size.
            assert!(
                (got - want).abs() < 1e-4,
                "lp__ difference {got}, recomputed {want}"
            );
        }
        // The .npy: a (draws, parameters) f32 array of the same values.
        let npy = std::fs::read(out.join(format!("chain_{}.npy", c + 1))).unwrap();
        assert_eq!(&npy[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([npy[8], npy[9]]) as usize;
        let head = std::str::from_utf8(&npy[10..10 + hlen]).unwrap();
        assert!(
            head.contains("'descr': '<f4'") && head.contains("'shape': (2000, 3)"),
            "{head}"
        );
        let values: Vec<f32> = npy[10 + hlen..]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(values.len(), 2000 * 3);
        for (k, r) in data.iter().enumerate() {
            for j in 0..3 {
                assert_eq!(values[k * 3 + j] as f64, r[2 + j] as f32 as f64);
            }
        }
    }
    assert_eq!(s["thin"], 1);
}

/// Parts of a run (`--chain-ids`) have the whole run's chains bit for bit, and
/// `sgld summarize` of the parts gives the whole run's per-parameter summary and
/// warnings: for a given schedule and for an adapted run with `--steps`.
#[test]
fn a_run_split_by_chain_ids_and_summarized_is_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.csv");
    data(&train);
    for (mode, schedule) in [
        (
            "given",
            &["--step-size", "const:2e-3", "--burn-in", "500"][..],
        ),
        ("adapted", &[][..]),
    ] {
        let run = |name: &str, ids: Option<&str>| {
            let out = dir.path().join(format!("{mode}-{name}"));
            let mut cmd = sgld();
            cmd.args([
                "sample", "--model", "logistic", "--steps", "2000", "--chains", "4",
            ])
            .args(schedule)
            .arg("--train")
            .arg(&train)
            .arg("--out")
            .arg(&out);
            if let Some(ids) = ids {
                cmd.args(["--chain-ids", ids]);
            }
            let o = cmd.output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            out
        };
        let whole = run("whole", None);
        let parts = [run("a", Some("0..1")), run("b", Some("1..4"))];
        let rows = |p: &Path| -> Vec<String> {
            let text = std::fs::read_to_string(p.join("draws.csv")).unwrap();
            text.lines().skip(1).map(String::from).collect()
        };
        let joined: Vec<String> = parts.iter().flat_map(|p| rows(p)).collect();
        assert_eq!(joined, rows(&whole), "{mode}: the parts' draws");
        assert_eq!(
            summary(&parts[1])["chain_ids"],
            serde_json::json!([1, 2, 3])
        );
        let merged = dir.path().join(format!("{mode}-merged"));
        let o = sgld()
            .arg("summarize")
            .args(&parts)
            .arg("--out")
            .arg(&merged)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (m, w) = (summary(&merged), summary(&whole));
        assert_eq!(m["params"], w["params"], "{mode}: merged summary");
        assert_eq!(m["warnings"], w["warnings"], "{mode}: merged warnings");
        assert_eq!(m["chain_ids"], serde_json::json!([0, 1, 2, 3]));
        // Each part's provenance is carried: seed, command line, data and its sha256.
        let parts = m["parts"].as_array().unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1]["chain_ids"], serde_json::json!([1, 2, 3]));
        for p in parts {
            assert_eq!(p["seed"], w["seed"]);
            assert_eq!(p["complete"], true);
            assert_eq!(p["data"]["train"]["sha256"], w["data"]["train"]["sha256"]);
            assert!(p["command_line"].as_array().unwrap().len() > 3, "{p}");
        }
        assert_eq!(m["notes"], serde_json::json!([]));
    }
    // Parts of other seeds are a note; parts of other settings or data, warnings.
    let part = |name: &str, extra: &[&str], train: &Path| {
        let out = dir.path().join(name);
        let o = sgld()
            .args(["sample", "--model", "logistic", "--steps", "2000"])
            .args(["--step-size", "const:2e-3", "--burn-in", "500"])
            .args(["--chains", "4", "--chain-ids", "1..4"])
            .args(extra)
            .arg("--train")
            .arg(train)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let other = dir.path().join("other.csv");
    let text = std::fs::read_to_string(&train).unwrap();
    std::fs::write(&other, text.replacen('\n', "\n\n", 1)).unwrap();
    let first = dir.path().join("given-a");
    for (name, extra, file, said) in [
        (
            "seed7",
            &["--seed", "7"][..],
            &train,
            "note: the parts ran with different seeds: 2011 vs 7",
        ),
        (
            "prior",
            &["--prior", "gaussian:1"][..],
            &train,
            "different settings (prior:",
        ),
        (
            "data",
            &[][..],
            &other,
            "different training data (training data sha256:",
        ),
    ] {
        let p = part(name, extra, file);
        let o = sgld()
            .arg("summarize")
            .arg(&first)
            .arg(&p)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(text.contains(said), "{name}: {text}");
        let warned = text.contains("warning: the parts");
        assert_eq!(warned, name != "seed7", "{name}: {text}");
    }
    // A chain given twice is refused.
    let a = dir.path().join("given-a");
    let o = sgld().arg("summarize").args([&a, &a]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("chain 0 appears twice"));
    // A draws.csv whose steps go back is refused at its line.
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("draws.csv"),
        "chain,step,step_size,a\n0,2,0.1,1.0\n0,3,0.1,1.5\n0,3,0.1,2.0\n",
    )
    .unwrap();
    let o = sgld().arg("summarize").arg(&bad).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("draws.csv line 4: chain 0's steps do not increase (step 3 after 3)"),
        "{err}"
    );
}

/// The files under their final names in `dir`, sorted.
fn final_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

#[test]
fn a_second_run_into_the_same_out_is_refused_unless_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.csv");
    data(&train);
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let run = |chains: &str, overwrite: bool| {
        let mut cmd = sgld();
        cmd.args([
            "sample", "--model", "logistic", "--chains", chains, "--train",
        ])
        .arg(&train)
        .arg("--out")
        .arg(&out);
        if overwrite {
            cmd.arg("--overwrite");
        }
        cmd.output().unwrap()
    };
    // An out holding only the user's own files is free.
    let o = run("4", false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let first = std::fs::read(out.join("draws.csv")).unwrap();
    // A second run is refused by name and touches nothing.
    let o = run("2", false);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("holds a previous run (chain_1.csv, chain_1.npy, chain_2.csv and 7 more)")
            && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(std::fs::read(out.join("draws.csv")).unwrap(), first);
    assert_eq!(summary(&out)["chains"].as_u64(), Some(4));
    // With --overwrite: the second run's files, the user's own file, nothing of the first.
    let o = run("2", true);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        final_files(&out),
        [
            "chain_1.csv",
            "chain_1.npy",
            "chain_2.csv",
            "chain_2.npy",
            "draws.csv",
            "notes.txt",
            "summary.json"
        ]
    );
    assert_eq!(summary(&out)["complete"], serde_json::Value::Bool(true));
    assert_eq!(summary(&out)["chains"].as_u64(), Some(2));
}

#[test]
fn a_killed_run_leaves_no_file_under_a_final_name() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.csv");
    data(&train);
    let out = dir.path().join("out");
    let mut child = long_run(&train, &out);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(final_files(&out), Vec::<String>::new());
    let partial = std::fs::read_dir(&out).unwrap().count();
    assert!(partial > 0, "the partial files are where the run stopped");
}

/// Spawns a long run into `out` and waits until its chains write their draws.
fn long_run(train: &Path, out: &Path) -> std::process::Child {
    let child = sgld()
        .args([
            "sample",
            "--model",
            "logistic",
            "--step-size",
            "const:0.001",
        ])
        .args(["--steps", "50000000", "--thin", "1", "--train"])
        .arg(train)
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !(out.exists() && std::fs::read_dir(out).unwrap().count() > 0) {
        assert!(started.elapsed().as_secs() < 60, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    child
}

fn signal(child: &std::process::Child, name: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{name}");
}

/// SIGINT (or SIGTERM) stops the chains at their next block: the run writes what it drew
/// under the final names, summary.json says it is not complete and why, draws.csv ends
/// on a whole line, and the exit is non-zero. A second signal exits at once (130) and
/// leaves only temporary files.
#[cfg(unix)]
#[test]
fn a_signal_stops_the_run_and_keeps_what_it_drew() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.csv");
    data(&train);
    for name in ["INT", "TERM"] {
        let out = dir.path().join(format!("out-{name}"));
        let child = long_run(&train, &out);
        signal(&child, name);
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("stopping at the next block"), "{err}");
        assert!(err.contains("interrupted by a signal"), "{err}");
        let s = summary(&out);
        assert_eq!(s["complete"], false);
        let warned = s["warnings"].as_array().unwrap();
        assert!(
            warned.iter().any(|w| w
                .as_str()
                .unwrap()
                .contains("the run was interrupted by a signal (chain 0 at step")),
            "{warned:?}"
        );
        let text = std::fs::read_to_string(out.join("draws.csv")).unwrap();
        assert!(text.ends_with('\n'));
        let fields = text.lines().next().unwrap().split(',').count();
        let rows = text.lines().skip(1).count();
        assert!(rows > 1000, "{rows} draws");
        assert!(text.lines().all(|l| l.split(',').count() == fields));
        assert!(s["steps"].as_u64().unwrap() < 50_000_000);
    }
    let out = dir.path().join("out-twice");
    let child = long_run(&train, &out);
    signal(&child, "INT");
    std::thread::sleep(std::time::Duration::from_millis(300));
    signal(&child, "INT");
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert_eq!(final_files(&out), Vec::<String>::new());
}

/// `timeout -s INT` signals the command and then its process group: the one signal,
/// delivered twice within microseconds, stops the run as one signal does.
#[cfg(unix)]
#[test]
fn timeout_s_int_keeps_what_was_drawn() {
    let has_timeout = std::process::Command::new("timeout")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(has_timeout, "GNU timeout (coreutils) is needed");
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.csv");
    data(&train);
    let out = dir.path().join("out");
    let o = std::process::Command::new("timeout")
        .args(["-s", "INT", "3", env!("CARGO_BIN_EXE_sgld")])
        .args([
            "sample",
            "--model",
            "logistic",
            "--step-size",
            "const:0.001",
        ])
        .args(["--steps", "50000000", "--thin", "100", "--train"])
        .arg(&train)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(!err.contains("exiting at once"), "{err}");
    let s = summary(&out);
    assert_eq!(s["complete"], false);
    let text = std::fs::read_to_string(out.join("draws.csv")).unwrap();
    let rows = text.lines().count();
    assert!(text.ends_with('\n') && rows > 1, "{rows} lines; {err}");
}
