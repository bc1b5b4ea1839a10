//! What the `sgld sample` tests share: the binary and the reading of summary.json.

#![allow(dead_code, unused_imports)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sgld::noise::{default_rng, fill_normal};

mod reference;
pub use reference::{Reference, mala_reference, mala_reference_of};

/// The `sgld` binary of this build.
pub fn sgld() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sgld"))
}

/// `DIR/summary.json`, parsed.
pub fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// The parameter names of a summary, in order.
pub fn param_names(s: &Value) -> Vec<&str> {
    s["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect()
}

/// `n` standard normals from `seed`.
pub fn normals(n: usize, seed: u64) -> Vec<f32> {
    let mut v = vec![0.0; n];
    fill_normal(&mut default_rng(seed), &mut v);
    v
}

/// A headed CSV of `rows`.
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<f32>]) {
    let mut s = header.join(",") + "\n";
    for r in rows {
        s += &r
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(",");
        s += "\n";
    }
    std::fs::write(path, s).unwrap();
}

/// `sgld ARGS`, which must succeed; its stdout.
pub fn run_ok(args: &[&str]) -> String {
    let out = sgld().args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "sgld {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// 400 rows `y = 2a − b + 0.7·e` written to `dir/lin.csv`.
pub fn lin_data(dir: &Path) -> (PathBuf, Vec<Vec<f32>>) {
    let n = 400;
    let z = normals(n * 2, 11);
    let e = normals(n, 12);
    let rows: Vec<Vec<f32>> = (0..n)
        .map(|i| {
            vec![
                z[2 * i],
                z[2 * i + 1],
                2.0 * z[2 * i] - 1.0 * z[2 * i + 1] + 0.7 * e[i],
            ]
        })
        .collect();
    let train = dir.join("lin.csv");
    write_csv(&train, &["a", "b", "y"], &rows);
    (train, rows)
}
