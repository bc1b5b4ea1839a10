//! `sgld bench` through the command line: the JSON report's shape, the data it writes
//! for the peers, and its refusal of a bad budget.

use std::process::Command;

fn sgld(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sgld"))
        .args(args)
        .env_remove("SGLD_DATA_DIR")
        .output()
        .unwrap()
}

#[test]
fn bench_json_reports_every_workload_with_its_floor() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = sgld(&[
        "bench",
        "--json",
        "--seconds",
        "0.05",
        "--data-out",
        data.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["implementation"], "sgld");
    let peaks = &r["peaks"];
    for k in [
        "normals_per_ns",
        "gathers_per_ns",
        "fmas_f32_per_ns",
        "fmas_f64_per_ns",
        "tanh_per_ns",
    ] {
        assert!(peaks[k].as_f64().unwrap() > 0.0, "{k}");
    }
    let names: Vec<&str> = r["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a9a", "gmm", "ica", "noise"]);
    for w in r["workloads"].as_array().unwrap() {
        let (median, min) = (
            w["ns_median"].as_f64().unwrap(),
            w["ns_min"].as_f64().unwrap(),
        );
        assert!(min > 0.0 && min <= median, "{w}");
        // The floor is the larger of the operation counts at the peaks and, for the
        // mixture alone, the latency of its step's chain.
        let floor = w["floor_ns"].as_f64().unwrap();
        let ops = w["ops_floor_ns"].as_f64().unwrap();
        let chain = w["chain_ns"].as_f64();
        assert_eq!(chain.is_some(), w["name"] == "gmm", "{w}");
        assert!(ops > 0.0 && chain.is_none_or(|c| c > 0.0), "{w}");
        assert_eq!(floor, chain.map_or(ops, |c| ops.max(c)));
        assert!(
            (w["floor_ratio"].as_f64().unwrap() - median / floor).abs() < 1e-9 * median / floor
        );
        assert!(
            w["check"]["value"]
                .as_array()
                .unwrap()
                .iter()
                .all(|v| v.as_f64().unwrap().is_finite())
        );
    }
    // Without a data directory a9a runs on synthetic rows, and says so; their test
    // rows come from the same model, so the chain predicts them.
    let a9a = &r["workloads"][0];
    assert!(a9a["data"].as_str().unwrap().contains("synthetic"));
    assert!(a9a["check"]["value"][0].as_f64().unwrap() > 0.75, "{a9a}");
    let gmm = std::fs::read_to_string(data.join("gmm.csv")).unwrap();
    assert_eq!(gmm.lines().count(), 101);
    let ica = std::fs::read_to_string(data.join("ica.csv")).unwrap();
    assert_eq!(ica.lines().count(), 5000);
    assert!(ica.lines().all(|l| l.split(',').count() == 10));
}

#[test]
fn bench_refuses_a_bad_budget() {
    for s in ["0", "-1", "nan"] {
        let out = sgld(&["bench", "--workload", "noise", &format!("--seconds={s}")]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--seconds"), "{err}");
    }
}
