//! `sgld reproduce`: the papers' experiments, each writing CSV series, SVG and PNG
//! figures and a `report.md` (our numbers beside the paper's) to `<out>/<name>/`.

pub mod bank;
pub mod gmm;
pub mod ica;
pub mod linreg;
pub mod logreg;
pub mod meg;
pub mod uci;

use std::path::{Path, PathBuf};

/// An experiment that can be reproduced.
struct Experiment {
    name: &'static str,
    what: &'static str,
    /// Data files it needs below the data directory.
    needs: &'static [&'static str],
    run: fn(&Context) -> Result<(), String>,
}

/// Where an experiment writes and what it reads.
pub struct Context {
    /// `<out>/<name>/`.
    pub out: PathBuf,
    /// The data directory, if any.
    pub data_dir: Option<PathBuf>,
    /// Reduced run.
    pub quick: bool,
    /// Seed.
    pub seed: u64,
}

const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "bank",
        what: "Lasri & Chaoui, Tables 1-2 and Figures 1-3: SGLD and SGHD, bank marketing and toy sets",
        needs: &["bank_marketing/bank.csv"],
        run: bank::run,
    },
    Experiment {
        name: "boston",
        what: "Nado et al., Figures 1-2: K-FAC SGLD against pSGLD on Boston housing",
        needs: &["uci_pbp/bostonHousing/data.txt"],
        run: uci::run_boston,
    },
    Experiment {
        name: "uci",
        what: "Nado et al.'s protocol on the UCI regression sets: SGLD, pSGLD, K-FAC SGLD",
        needs: &["uci_pbp/bostonHousing/data.txt"],
        run: uci::run_uci,
    },
    Experiment {
        name: "gmm",
        what: "Welling & Teh §5.1, Figures 1 and 2: mixture of Gaussians",
        needs: &[],
        run: gmm::run,
    },
    Experiment {
        name: "ica",
        what: "Welling & Teh §5.3.1, Figures 4 and 5: ICA on artificial data",
        needs: &[],
        run: ica::run,
    },
    Experiment {
        name: "linreg",
        what: "Karagiannis, handout 6, §4, Figures 4.1-4.3: Bayesian linear regression",
        needs: &[],
        run: linreg::run,
    },
    Experiment {
        name: "logreg",
        what: "Welling & Teh §5.2, Figure 3: logistic regression on a9a",
        needs: &["a9a/a9a"],
        run: logreg::run,
    },
    Experiment {
        name: "meg",
        what: "Welling & Teh §5.3.2, Figure 6: ICA on recorded EEG and MEG",
        needs: &[
            "eeg_eye_state/eeg_eye_state.csv",
            "meg_substitute_kit/kit_nyu_test_meg157_fT.csv",
        ],
        run: meg::run,
    },
];

/// Why an experiment cannot run here (missing data), or `None`.
fn missing(e: &Experiment, data_dir: Option<&Path>) -> Option<String> {
    if e.needs.is_empty() {
        return None;
    }
    let Some(dir) = data_dir else {
        return Some(format!(
            "needs {} but no data directory is set (--data-dir or SGLD_DATA_DIR)",
            e.needs.join(", ")
        ));
    };
    let absent: Vec<&str> = e
        .needs
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if absent.is_empty() {
        None
    } else {
        Some(format!(
            "{} not found in {} (see `sgld data list`)",
            absent.join(", "),
            dir.display()
        ))
    }
}

/// Runs `name` (or every experiment whose data is present, for `all`).
pub fn reproduce(
    name: &str,
    out: &Path,
    data_dir: Option<&Path>,
    quick: bool,
    seed: u64,
) -> Result<(), String> {
    let ctx = |e: &Experiment| Context {
        out: out.join(e.name),
        data_dir: data_dir.map(Path::to_path_buf),
        quick,
        seed,
    };
    let start = |e: &Experiment, c: &Context| -> Result<(), String> {
        std::fs::create_dir_all(&c.out)
            .map_err(|err| format!("cannot create {}: {err}", c.out.display()))?;
        eprintln!(
            "== {}: {}{}",
            e.name,
            e.what,
            if quick { " (quick)" } else { "" }
        );
        let t = std::time::Instant::now();
        (e.run)(c)?;
        eprintln!(
            "== {} done in {:.1} s: {}",
            e.name,
            t.elapsed().as_secs_f64(),
            c.out.join("report.md").display()
        );
        Ok(())
    };
    if name == "all" {
        let mut skipped = Vec::new();
        let mut failed = Vec::new();
        for e in EXPERIMENTS {
            if let Some(why) = missing(e, data_dir) {
                skipped.push(format!("{}: {why}", e.name));
                continue;
            }
            if let Err(err) = start(e, &ctx(e)) {
                failed.push(format!("{}: {err}", e.name));
            }
        }
        crate::out!(
            "ran {} of {} experiments into {}",
            EXPERIMENTS.len() - skipped.len() - failed.len(),
            EXPERIMENTS.len(),
            out.display()
        );
        for s in &skipped {
            crate::out!("skipped {s}");
        }
        if !failed.is_empty() {
            return Err(format!("failed: {}", failed.join("; ")));
        }
        return Ok(());
    }
    let e = EXPERIMENTS.iter().find(|e| e.name == name).ok_or_else(|| {
        let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
        format!(
            "unknown experiment {name:?}; known: {}, all",
            names.join(", ")
        )
    })?;
    if let Some(why) = missing(e, data_dir) {
        return Err(format!("{}: {why}", e.name));
    }
    start(e, &ctx(e))
}
