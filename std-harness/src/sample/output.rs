//! Stage 6, output: `draws.csv`, `summary.json` (everything needed to reproduce the run)
//! and the printed table with its warnings.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::chains::Chain;
use super::config::Weighting;
use super::records::WarmupSummary;
pub use super::records::{DataFile, DataFiles, ParamSummary, TestSummary};
use crate::error::Error;

/// `summary.json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// The model.
    pub model: String,
    /// The sampler the chains ran (`sgld`, `precond`, …; an adapted `sgld` run samples
    /// with `precond`).
    pub sampler: String,
    /// Whether control-variate gradients were used.
    pub cv: bool,
    /// The temperature τ.
    pub temperature: f32,
    /// Per-example gradient evaluations per step and chain (batch × gradients per step;
    /// the data size for MALA, times the leapfrog steps for HMC).
    pub grad_evals_per_step: f64,
    /// Full-data passes of the mode search (L-BFGS iterations), not counted in `seconds`.
    pub pilot_steps: u64,
    /// The acceptance rate of MALA or HMC: after warm-up on the exact path of
    /// `--step-size auto`, over all steps with `--sampler mala` (absent for the other
    /// samplers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<f64>,
    /// Divergent transitions after warm-up on the exact path (a log acceptance
    /// ratio below −1000 or a non-finite density), as Stan counts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divergent: Option<u64>,
    /// Training rows.
    pub n_train: usize,
    /// Number of parameters.
    pub dim: usize,
    /// Whether every chain ran to its end (false: a chain stopped, and the warnings or
    /// the error say why). Written last, with every other file already whole.
    pub complete: bool,
    /// Steps per chain, burn-in (warm-up) included: those that ran (a chain that stopped
    /// counts to its failure; the longest chain's).
    pub steps: u64,
    /// Chains.
    pub chains: usize,
    /// The chains' numbers, when `--chain-ids` ran a part of a run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain_ids: Option<Vec<usize>>,
    /// Burn-in (warm-up) steps discarded (the same for every chain).
    pub burn_in: u64,
    /// Weighting of the summary (`step` or `uniform`).
    pub weighting: Weighting,
    /// Wall-clock seconds of the chains (warm-up and sampling).
    pub seconds: f64,
    /// Steps per second, all chains together.
    pub steps_per_second: f64,
    /// Wall-clock seconds of the sampling alone (without an adapted run's warm-up, the
    /// mode search, the diagnostics and the output).
    pub sampling_seconds: f64,
    /// Wall-clock nanoseconds of the sampling per step of one chain, the chains running
    /// in parallel (`sampling_seconds` over the sampling steps of all chains).
    pub ns_per_step: f64,
    /// Per-parameter summaries.
    pub params: Vec<ParamSummary>,
    /// Test-set metrics (only with `--test`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<TestSummary>,
    /// Everything the checklist found; empty for a run that can be trusted.
    pub warnings: Vec<String>,
    /// The sgld version.
    pub version: String,
    /// The command line.
    pub command_line: Vec<String>,
    /// The seed.
    pub seed: u64,
    /// The prior (`laplace:1`, …; `paper` for the mixture's fixed prior).
    pub prior: String,
    /// The data files with their sha256.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<DataFiles>,
    /// Mini-batch size.
    pub batch: usize,
    /// The step-size schedule (`auto`, or the given one).
    pub step_size: String,
    /// Every `thin`-th step was kept.
    pub thin: u64,
    /// R̂, ESS and quantiles read every `diagnostic_thin`-th kept draw (1 up to
    /// 524,288 draws of a parameter; the means and sds read all of them).
    pub diagnostic_thin: u64,
    /// The bulk and tail ESS targeted.
    pub target_ess: f64,
    /// The sampling-threshold target (`--alpha`).
    pub alpha_target: f64,
    /// What the warm-up found and chose.
    pub warmup: WarmupSummary,
    /// Each chain's start.
    pub starts: Vec<Vec<f32>>,
    /// A network's shape, scaling, step search, layers and checked quantities
    /// (`--model mlp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<super::records::NetworkSummary>,
}

/// What a diagnostic thinning of `t` means, for the printed summary.
pub fn diagnostic_note(t: u64) -> String {
    let th = match (t % 10, t % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!(
        "R̂, ESS and quantiles from every {t}{th} kept draw (at most {} a parameter; means and sds from all): ESS of all the draws is at least this",
        crate::sample::diagnose::DIAGNOSED_DRAWS
    )
}

/// Writes the kept draws (`chain,step,step_size,<parameters>`).
pub fn write_draws(path: &Path, names: &[String], chains: &[Chain]) -> Result<(), String> {
    let d = names.len();
    let file =
        std::fs::File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let io = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    write!(w, "chain,step,step_size").map_err(io)?;
    for n in names {
        write!(w, ",{n}").map_err(io)?;
    }
    writeln!(w).map_err(io)?;
    // Numbers by itoa and ryu (shortest round-trip, as `{}` but several times faster:
    // a long run writes tens of millions of them); a row at a time into one buffer.
    let (mut int, mut float) = (itoa::Buffer::new(), ryu::Buffer::new());
    let mut row = Vec::with_capacity(16 * (d + 3));
    for ch in chains {
        ch.draws.rows(0..ch.kept(), |k, draw| {
            row.clear();
            row.extend_from_slice(int.format(ch.id).as_bytes());
            row.push(b',');
            row.extend_from_slice(int.format(ch.record.step(k)).as_bytes());
            row.push(b',');
            row.extend_from_slice(float.format(ch.record.eps(k)).as_bytes());
            push_draw(&mut row, &mut float, draw);
            w.write_all(&row).map_err(io)
        })?;
    }
    w.flush().map_err(io)
}

/// Appends `,v` for every value of a draw (shortest round-trip digits) and the newline.
pub fn push_draw(row: &mut Vec<u8>, float: &mut ryu::Buffer, draw: &[f32]) {
    for &v in draw {
        row.push(b',');
        row.extend_from_slice(float.format(v).as_bytes());
    }
    row.push(b'\n');
}

/// Rows [`print_params`] shows in full before a longer table is cut.
const SHOWN: usize = 30;

/// The per-parameter table: the first 30 rows and, of the rest (which are in
/// `all_in`), those a reader looks for first: every parameter with a name of its own
/// (`bias`, `log_sigma2`: not an indexed coefficient), the smallest ESS and the largest
/// R̂.
pub fn print_params(params: &[ParamSummary], all_in: &Path) {
    crate::out!(
        "{:<16} {:>10} {:>9} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6} {:>9}",
        "param",
        "mean",
        "sd",
        "q05",
        "q50",
        "q95",
        "ess_bulk",
        "ess_tail",
        "rhat",
        "mcse"
    );
    let row = |p: &ParamSummary| {
        crate::out!(
            "{:<16} {:>10.4} {:>9.4} {:>10.4} {:>10.4} {:>10.4} {:>9.0} {:>9.0} {:>6.3} {:>9.4}",
            p.name,
            p.mean,
            p.sd,
            p.q05,
            p.q50,
            p.q95,
            p.ess_bulk,
            p.ess_tail,
            p.rhat,
            p.mcse_mean
        )
    };
    params.iter().take(SHOWN).for_each(row);
    let extra = beyond_the_first(params);
    if !extra.is_empty() {
        crate::out!(
            "(of the other {}: the named, the smallest ESS and the largest R̂)",
            params.len() - SHOWN
        );
        extra.iter().for_each(|&i| row(&params[i]));
    }
    if params.len() > SHOWN + extra.len() {
        crate::out!(
            "... {} more parameters in {}",
            params.len() - SHOWN - extra.len(),
            all_in.display()
        );
    }
}

/// The indices past the first [`SHOWN`] that [`print_params`] shows too, in order: the
/// named parameters, the smallest ESS and the largest R̂ (the first of equals).
fn beyond_the_first(params: &[ParamSummary]) -> Vec<usize> {
    use super::diagnose::{ess_rank, rhat_rank};
    let rest = || params.iter().enumerate().skip(SHOWN);
    let mut shown: Vec<usize> = rest()
        .filter(|(_, p)| !p.name.contains('['))
        .map(|(i, _)| i)
        .collect();
    shown.extend(
        rest()
            .min_by(|a, b| ess_rank(a.1).total_cmp(&ess_rank(b.1)))
            .map(|(i, _)| i),
    );
    shown.extend(
        rest()
            .min_by(|a, b| rhat_rank(b.1).total_cmp(&rhat_rank(a.1)))
            .map(|(i, _)| i),
    );
    shown.sort_unstable();
    shown.dedup();
    shown
}

/// A network's compact table: its shape, one row per layer, and the quantities the
/// checks read.
fn print_network(net: &super::records::NetworkSummary, draws: &Path) {
    let scaled = match &net.scaling {
        Some(sc) if sc.y_sd.is_some() => "; inputs and target standardised on the training rows",
        Some(_) => "; inputs standardised on the training rows",
        None => "",
    };
    crate::out!(
        "network: {} inputs -> {} ReLU units -> {} output{scaled} (summary.json: network)",
        net.inputs,
        net.hidden,
        match net.output {
            super::config::NetOutput::Gaussian => "gaussian",
            super::config::NetOutput::Bernoulli => "bernoulli",
        }
    );
    print_layers(&net.groups);
    crate::out!(
        "single weights are not identified (hidden units permute between chains): R̂ and ESS are checked on these; every weight's draws are in {}",
        draws.display()
    );
    print_params(&net.checked, draws);
}

/// One row per layer of a network.
pub fn print_layers(groups: &[super::records::Group]) {
    crate::out!(
        "{:<16} {:>7} {:>10} {:>9} {:>12} {:>13}",
        "layer",
        "params",
        "rms mean",
        "mean sd",
        "median rhat",
        "min ess_bulk"
    );
    for g in groups {
        crate::out!(
            "{:<16} {:>7} {:>10.4} {:>9.4} {:>12.3} {:>13.0}",
            g.name,
            g.params,
            g.rms_mean,
            g.mean_sd,
            g.median_rhat,
            g.min_ess_bulk
        );
    }
}

/// Writes `summary.json`.
pub fn write_summary(dir: &Path, s: &Summary) -> Result<(), Error> {
    // Serialising plain numbers and strings into memory does not fail.
    let json = serde_json::to_string_pretty(s).map_err(|e| Error::Run(e.to_string()))?;
    let path = dir.join("summary.json");
    let tmp = super::files::partial(&path);
    std::fs::write(&tmp, json + "\n").map_err(|e| Error::io("write", &tmp, e))?;
    std::fs::rename(&tmp, &path)
        .map_err(|e| Error::io(format!("rename {} to", tmp.display()), &path, e))
}

/// The table's line on what an adapted warm-up chose (none for a given schedule).
/// The mode search in the warm-up line: its iterations on all rows, and, when it began
/// on a subsample, the full-data passes it made in all.
fn mode_search(s: &Summary) -> String {
    let w = &s.warmup;
    if super::mode::subsampled(s.n_train) {
        format!(
            "on a subsample, then {} iterations on all rows: {:.1} full-data passes",
            w.mode_iterations, w.mode_passes
        )
    } else {
        format!("{} iterations", w.mode_iterations)
    }
}

fn warmup_line(s: &Summary) -> Option<String> {
    let w = &s.warmup;
    if !w.adapted {
        return None;
    }
    let kind = match w.sheared_into.and_then(|j| s.params.get(j)) {
        Some(p) if s.params.len() == s.dim => {
            format!("{} metric sheared into {}", w.preconditioner, p.name)
        }
        _ => format!("{} metric", w.preconditioner),
    };
    let metric = match (w.metric.as_str(), w.metric_disagreement) {
        ("draws", Some([v, o])) => format!(
            "{kind} from the warm-up draws (the Laplace approximation at the mode was off by a variance ratio of {v:.1} and {o:.1} sds)"
        ),
        ("draws", None) => format!("{kind} from the warm-up draws"),
        _ => format!("{kind} (Laplace)"),
    };
    let agree = if w.converged && w.rhat > super::blocks::WARMUP_RHAT {
        format!(
            ", chains agree (R̂ {:.3}, within chance for the few effective draws of {} parameters)",
            w.rhat, s.dim
        )
    } else if w.converged {
        format!(", chains agree (R̂ {:.3})", w.rhat)
    } else {
        String::new()
    };
    let restarts = match w.restarts {
        0 => String::new(),
        r => format!(", {r} restarts"),
    };
    Some(match (w.full_batch, w.target_acceptance, s.acceptance) {
        (true, Some(target), Some(acc)) => format!(
            "warm-up: mode by L-BFGS ({}), {} on the whole data set (Metropolis-adjusted: exact), {metric}, step {:.3e} (acceptance {acc:.2}, target {target}); {} steps{agree}",
            mode_search(s),
            match w.sampler.as_str() {
                "hmc" => format!(
                    "HMC with {} leapfrog steps a transition",
                    (s.grad_evals_per_step / s.n_train.max(1) as f64).round()
                ),
                _ => "MALA".to_string(),
            },
            w.step_size,
            w.steps,
        ),
        _ => format!(
            "warm-up: mode by L-BFGS ({}), {metric}, {}, step {:.3e} (alpha {:.3} <= {}{}); {} steps{restarts}{agree}",
            mode_search(s),
            if w.full_batch {
                "the whole data set each step (exact gradients)".to_string()
            } else if w.cv {
                format!("control variates on batches of {}", w.batch)
            } else {
                format!("batches of {}", w.batch)
            },
            w.step_size,
            w.alpha,
            s.alpha_target,
            w.bias_acceptance
                .map_or_else(String::new, |a| format!(", full-data acceptance {a:.2}")),
            w.steps,
        ),
    })
}

/// Prints the summary table, then the warnings.
pub fn print_table(s: &Summary, notes: &[String], out: &Path) {
    crate::out!(
        "sgld sample: {} model, {} training rows, {} parameters, {} chains x {} steps in {:.2} s ({:.0} steps/s)",
        s.model,
        s.n_train,
        s.dim,
        s.chains,
        s.steps,
        s.seconds,
        s.steps_per_second
    );
    if let Some(line) = warmup_line(s) {
        crate::out!("{line}");
    }
    for n in notes {
        crate::out!("{n}");
    }
    crate::out!(
        "sampler {}; burn-in {} steps; thin {}; means and sds weighted {}",
        s.sampler,
        s.burn_in,
        s.thin,
        match s.weighting {
            Weighting::Step => "by step size (eq. 11)",
            _ => "uniformly",
        }
    );
    if s.diagnostic_thin > 1 {
        crate::out!("{}", diagnostic_note(s.diagnostic_thin));
    }
    match &s.network {
        Some(net) => print_network(net, &out.join("draws.csv")),
        None => print_params(&s.params, &out.join("summary.json")),
    }
    if let Some(t) = &s.test {
        match (t.accuracy, t.rmse) {
            (Some(a), _) => crate::out!(
                "test: accuracy {a:.4}, log-likelihood per datum {:.4}",
                t.log_lik_per_datum
            ),
            (None, Some(r)) => crate::out!(
                "test: rmse {r:.4}, log-likelihood per datum {:.4}",
                t.log_lik_per_datum
            ),
            _ => crate::out!("test: log-likelihood per datum {:.4}", t.log_lik_per_datum),
        }
    }
    for w in &s.warnings {
        crate::out!("warning: {w}");
    }
    let chains = match s.chains {
        1 => "chain_1.csv, .npy".to_string(),
        c => format!("chain_{{1..{c}}}.csv, .npy"),
    };
    let u = out.join("unconstrained.csv");
    crate::out!(
        "wrote {}, {}{} and {}",
        out.join("draws.csv").display(),
        if u.exists() {
            format!("{}, ", u.display())
        } else {
            String::new()
        },
        out.join("summary.json").display(),
        out.join(chains).display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: String, ess: f64, rhat: f64) -> ParamSummary {
        ParamSummary {
            name,
            mean: 0.0,
            sd: 1.0,
            q05: -1.6,
            q50: 0.0,
            q95: 1.6,
            ess_bulk: ess,
            ess_tail: ess,
            rhat,
            mcse_mean: 0.01,
        }
    }

    /// Past the first 30 rows the table keeps the named parameters, the smallest ESS and
    /// the largest R̂, each once; a NaN (a constant column) counts as the worst.
    #[test]
    fn a_long_table_keeps_the_named_and_the_worst() {
        let mut ps: Vec<ParamSummary> = (0..60)
            .map(|j| param(format!("beta[{j}]"), 1000.0 + j as f64, 1.001))
            .collect();
        ps.push(param("bias".into(), 900.0, 1.002));
        ps.push(param("log_sigma2".into(), 2000.0, 1.0));
        ps[44].ess_tail = 420.0;
        ps[10].ess_bulk = 100.0; // among the first 30: shown anyway
        ps[51].rhat = 1.008;
        assert_eq!(beyond_the_first(&ps), vec![44, 51, 60, 61]);
        ps[33].rhat = f64::NAN;
        (ps[37].ess_bulk, ps[37].ess_tail) = (f64::NAN, f64::NAN);
        assert_eq!(beyond_the_first(&ps), vec![33, 37, 60, 61]);
        // A table of 30 rows or fewer has nothing beyond.
        assert!(beyond_the_first(&ps[..30]).is_empty());
        // The bias is the smallest ESS too: shown once.
        let mut ps: Vec<ParamSummary> = (0..40)
            .map(|j| param(format!("beta[{j}]"), 1000.0, 1.0))
            .collect();
        ps.push(param("bias".into(), 500.0, 1.009));
        assert_eq!(beyond_the_first(&ps), vec![40]);
    }
}
