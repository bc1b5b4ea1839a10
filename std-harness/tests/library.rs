//! The library call is the command: `sample_model` on the model the command builds from
//! a file (the core's `Glm` on the same rows, its bias column, prior and names) writes
//! the same draws, bit for bit, and the same summary but for the clocks.

use std::path::Path;
mod common;

use sgld::models::{DenseRows, Glm, Laplace, Poisson};
use sgld_harness::sample::{DataFile, DataFiles, ModelKind, SampleConfig, Target, sample_model};

use common::{sgld, summary};

/// summary.json without the fields that time the run.
fn untimed(dir: &Path) -> serde_json::Value {
    let mut s = summary(dir);
    for k in [
        "seconds",
        "steps_per_second",
        "sampling_seconds",
        "ns_per_step",
    ] {
        s.as_object_mut().unwrap().remove(k).unwrap();
    }
    s
}

/// A CmdStan file without its elapsed-time comment.
fn untimed_csv(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("Elapsed Time"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes `text` to `dir/file` and runs `sgld sample ARGS` on it into `dir/cli`; returns
/// the file, the command's output directory and one for the library's.
fn run_command(
    dir: &Path,
    file: &str,
    text: &str,
    args: &[&str],
) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let train = dir.join(file);
    std::fs::write(&train, text).unwrap();
    let (cli, lib) = (dir.join("cli"), dir.join("lib"));
    let o = sgld()
        .arg("sample")
        .args(args)
        .arg("--train")
        .arg(&train)
        .arg("--out")
        .arg(&cli)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (train, cli, lib)
}

/// The command line a run recorded (summary.json and the CmdStan headers hold it).
fn command_line(summary: &serde_json::Value) -> Vec<String> {
    summary["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_library_call_writes_what_the_command_writes() {
    let dir = tempfile::tempdir().unwrap();
    // 120 rows of two features and a count.
    let (mut text, mut x, mut y) = (String::from("a,b,count\n"), vec![], vec![]);
    for i in 0..120 {
        let (a, b) = (
            (i % 7) as f32 * 0.3 - 0.9,
            ((i * 5) % 11) as f32 * 0.2 - 1.0,
        );
        let count = ((0.4 + 0.5 * a - 0.3 * b).exp() * ((i % 3) as f32 + 0.5)).floor();
        text += &format!("{a},{b},{count}\n");
        x.extend([a, b, 1.0]);
        y.push(count);
    }
    let (train, cli, lib) = run_command(
        dir.path(),
        "counts.csv",
        &text,
        &["--model", "poisson", "--steps", "3000"],
    );

    // The same model, prior, names and configuration through the library.
    let model = Glm::new(
        DenseRows::new(&x, 3).unwrap(),
        &y,
        Poisson,
        Laplace::new(1.0).unwrap(),
    )
    .unwrap();
    let names = ["beta[a]", "beta[b]", "bias"].map(String::from).to_vec();
    // Laplace(b) enters the warm-up as the Gaussian of its variance: precision 1/(2b²).
    let precision = |t: &[f32]| vec![0.5; t.len()];
    let recorded = summary(&cli);
    let sha = recorded["data"]["train"]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let target = Target::new(&model, "poisson", names)
        .with_prior("laplace:1", &precision)
        .with_data(DataFiles {
            train: DataFile {
                path: train.display().to_string(),
                sha256: sha,
            },
            test: None,
        });
    let mut cfg = SampleConfig::new(ModelKind::Poisson, train.clone(), lib.clone());
    cfg.steps = Some(3000);
    cfg.command_line = command_line(&recorded);
    let outcome = sample_model(&target, &cfg).unwrap();
    assert!(outcome.failure.is_none());

    for f in ["draws.csv", "chain_1.npy", "chain_4.npy"] {
        let (a, b) = (
            std::fs::read(cli.join(f)).unwrap(),
            std::fs::read(lib.join(f)).unwrap(),
        );
        assert!(a == b, "{f} differs");
    }
    for f in ["chain_1.csv", "chain_3.csv"] {
        assert_eq!(untimed_csv(&cli.join(f)), untimed_csv(&lib.join(f)), "{f}");
    }
    assert_eq!(untimed(&cli), untimed(&lib));
}

/// The same for a network: `Target::network` on the user's own standardised rows and a
/// `Mlp` of the command's shape writes what `sgld sample --model mlp` writes.
#[test]
fn a_network_through_the_library_is_the_command() {
    use sgld::models::Mlp;
    use sgld_harness::sample::NetOutput;
    use sgld_harness::sample::network::{self, Scaling};

    let dir = tempfile::tempdir().unwrap();
    let (mut text, mut x, mut y) = (String::from("a,b,z\n"), vec![], vec![]);
    for i in 0..150 {
        let (a, b) = ((i % 13) as f32 * 0.7 - 3.0, ((i * 7) % 17) as f32 * 0.4);
        let z = (a * 0.8).sin() * 3.0 + b + ((i * 31) % 5) as f32 * 0.1;
        text += &format!("{a},{b},{z}\n");
        x.extend([a, b]);
        y.push(z);
    }
    let (train, cli, lib) = run_command(
        dir.path(),
        "rows.csv",
        &text,
        &["--model", "mlp", "--hidden", "8"],
    );

    let scaling = Scaling::fit(&x, 2, Some(&y));
    scaling.inputs(&mut x);
    scaling.targets(&mut y);
    let net = Mlp::new(&x, &y, 2, 8, 1.0, network::noise(NetOutput::Gaussian)).unwrap();
    let recorded = summary(&cli);
    let target = Target::network(
        &net,
        "mlp",
        network::names(&["a".into(), "b".into()], 8, net.noise()),
    )
    .with_scaling(scaling)
    .with_data(DataFiles {
        train: DataFile {
            path: train.display().to_string(),
            sha256: recorded["data"]["train"]["sha256"].as_str().unwrap().into(),
        },
        test: None,
    });
    let mut cfg = SampleConfig::new(ModelKind::Mlp, train.clone(), lib.clone());
    cfg.hidden = 8;
    cfg.command_line = command_line(&recorded);
    let outcome = sample_model(&target, &cfg).unwrap();
    assert!(outcome.failure.is_none());
    for f in ["draws.csv", "chain_1.npy", "chain_4.npy"] {
        assert!(
            std::fs::read(cli.join(f)).unwrap() == std::fs::read(lib.join(f)).unwrap(),
            "{f} differs"
        );
    }
    assert_eq!(
        untimed_csv(&cli.join("chain_2.csv")),
        untimed_csv(&lib.join("chain_2.csv"))
    );
    assert_eq!(untimed(&cli), untimed(&lib));
}
