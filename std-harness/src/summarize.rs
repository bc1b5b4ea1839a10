//! `sgld summarize DIR…`: one summary of the chains of several `sgld sample` outputs —
//! the parts of a run split across machines with `--chain-ids`, as CmdStan users merge
//! theirs with `stansummary`.
//!
//! Each directory's `draws.csv` is read back into its chains (numbered as in the run);
//! the chains are put in order of their numbers and summarised as `sgld sample` does:
//! mean and sd (weighted as the runs were), quantiles, bulk and tail ESS, rank-normalised
//! split R̂, and the checklist's warnings on them. Chains of the same seed split this
//! way give the summary of the whole run: the same numbers, up to the weight of each
//! chain's first draw under step-size weighting (`draws.csv` does not record how many
//! steps it stood for).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sample::chains::Chain;
use crate::sample::config::Weighting;
use crate::sample::diagnose::{self, Evidence};
use crate::sample::draws::Draws;
use crate::sample::kept::Kept;
use crate::sample::output::{ParamSummary, print_params};

/// What `sgld summarize` merges and how.
#[derive(Debug, Clone)]
pub struct SummarizeConfig {
    /// The output directories of `sgld sample` runs.
    pub dirs: Vec<PathBuf>,
    /// Where to write the merged `summary.json` (none: print only).
    pub out: Option<PathBuf>,
    /// The ESS the warnings hold the chains to.
    pub target_ess: f64,
}

/// The merged `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Merged {
    /// The directories read.
    pub sources: Vec<String>,
    /// Number of chains.
    pub chains: usize,
    /// Their numbers.
    pub chain_ids: Vec<usize>,
    /// Kept draws, all chains.
    pub draws: usize,
    /// How the means and sds are weighted (`step` or `uniform`).
    pub weighting: Weighting,
    /// R̂, ESS and quantiles read every `diagnostic_thin`-th draw (as `sgld sample`'s).
    pub diagnostic_thin: u64,
    /// Per-parameter summaries.
    pub params: Vec<ParamSummary>,
    /// The checklist's findings on the merged chains.
    pub warnings: Vec<String>,
}

/// One directory's chains, its parameter names and its weighting.
struct Part {
    names: Vec<String>,
    chains: Vec<Chain>,
    weighting: Option<Weighting>,
}

/// Reads `dir/draws.csv` (and the weighting from `dir/summary.json`, when there).
fn read_part(dir: &Path) -> Result<Part, String> {
    let path = dir.join("draws.csv");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    if header.len() < 4 || header[..3] != ["chain", "step", "step_size"] {
        return Err(format!(
            "{}: not an sgld draws.csv (its header should start chain,step,step_size and name the parameters)",
            path.display()
        ));
    }
    let names: Vec<String> = header[3..].iter().map(|s| s.to_string()).collect();
    let d = names.len();
    let mut chains: Vec<Chain> = Vec::new();
    // Each chain's steps and step sizes, for its record once every draw is read.
    let mut marks: Vec<(Vec<u64>, Vec<f32>)> = Vec::new();
    let mut row = Vec::with_capacity(d);
    for (i, line) in lines.enumerate() {
        let bad = |what: &str| format!("{} line {}: {what}", path.display(), i + 2);
        let mut fields = line.split(',');
        let mut next = || fields.next().ok_or_else(|| bad("too few fields"));
        let chain: usize = next()?
            .parse()
            .map_err(|_| bad("the chain is not a whole number"))?;
        let step: u64 = next()?
            .parse()
            .map_err(|_| bad("the step is not a whole number"))?;
        let eps: f32 = next()?
            .parse()
            .map_err(|_| bad("the step size is not a number"))?;
        let at = match chains.iter().position(|c| c.id == chain) {
            Some(at) => at,
            None => {
                chains.push(Chain::from_draws(
                    chain,
                    Draws::in_memory(d),
                    Kept::default(),
                ));
                marks.push((vec![], vec![]));
                chains.len() - 1
            }
        };
        let c = &mut chains[at];
        row.clear();
        for _ in 0..d {
            let v: f32 = next()?
                .parse()
                .map_err(|_| bad("a value is not a number"))?;
            row.push(v);
        }
        c.draws.push(&row)?;
        if fields.next().is_some() {
            return Err(bad(&format!("more than the header's {} fields", d + 3)));
        }
        let (steps, epss) = &mut marks[at];
        if steps.last().is_some_and(|&last| step <= last) {
            return Err(bad(&format!(
                "chain {chain}'s steps do not increase (step {step} after {})",
                steps[steps.len() - 1]
            )));
        }
        steps.push(step);
        epss.push(eps);
    }
    for (c, (steps, eps)) in chains.iter_mut().zip(&marks) {
        for (k, span) in spans(steps, eps).into_iter().enumerate() {
            c.record.push(steps[k], eps[k], span);
        }
    }
    let weighting = std::fs::read_to_string(dir.join("summary.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| match v["weighting"].as_str() {
            Some("step") => Some(Weighting::Step),
            Some("uniform") => Some(Weighting::Uniform),
            _ => None,
        });
    Ok(Part {
        names,
        chains,
        weighting,
    })
}

/// `Σ ε` each draw stands for, `ε` times the steps since the previous kept draw (the
/// first: the steps to the next one, the gap of the thinning).
fn spans(steps: &[u64], eps: &[f32]) -> Vec<f64> {
    (0..steps.len())
        .map(|k| {
            let gap = match k {
                0 if steps.len() > 1 => steps[1] - steps[0],
                0 => 1,
                _ => steps[k] - steps[k - 1],
            };
            eps[k] as f64 * gap.max(1) as f64
        })
        .collect()
}

/// Merges, summarises, prints and (with `out`) writes `out/summary.json`.
pub fn run(cfg: &SummarizeConfig) -> Result<Merged, String> {
    if cfg.dirs.is_empty() {
        return Err("give at least one output directory of sgld sample".into());
    }
    let mut names: Option<Vec<String>> = None;
    let mut chains: Vec<Chain> = Vec::new();
    let mut weighting: Option<Weighting> = None;
    for dir in &cfg.dirs {
        let part = read_part(dir)?;
        match &names {
            None => names = Some(part.names),
            Some(n) if *n != part.names => {
                return Err(format!(
                    "{} has other parameters than {}: the runs are not of the same model and data",
                    dir.display(),
                    cfg.dirs[0].display()
                ));
            }
            Some(_) => {}
        }
        for c in part.chains {
            if chains.iter().any(|o| o.id == c.id) {
                return Err(format!(
                    "chain {} appears twice ({} among them): merge the parts of one run, each chain once",
                    c.id,
                    dir.display()
                ));
            }
            chains.push(c);
        }
        weighting = match (weighting, part.weighting) {
            (None, w) | (w, None) => w,
            (Some(a), Some(b)) if a == b => Some(a),
            _ => return Err("the runs are weighted differently (step and uniform)".into()),
        };
    }
    let names = names.unwrap_or_default();
    chains.sort_by_key(|c| c.id);
    // One step size over every draw of every chain.
    let first = chains.iter().find_map(|c| c.record.first_eps());
    let constant = chains
        .iter()
        .all(|c| c.record.is_empty() || (c.record.constant_eps() && c.record.first_eps() == first));
    let weighting = weighting.unwrap_or(if constant {
        Weighting::Uniform
    } else {
        Weighting::Step
    });
    let weight = move |c: &Chain, k: usize| match weighting {
        Weighting::Step => c.record.span(k),
        _ => 1.0,
    };
    let params = diagnose::summarise(&chains, &names, &weight)?;
    let warnings = diagnose::warnings(
        &params,
        &Evidence {
            chains: &chains,
            target_ess: cfg.target_ess,
            alpha: (f64::INFINITY, None),
            laplace_sds: &[],
            stability: None,
            earlier: Vec::new(),
        },
    );
    let merged = Merged {
        sources: cfg.dirs.iter().map(|d| d.display().to_string()).collect(),
        chains: chains.len(),
        chain_ids: chains.iter().map(|c| c.id).collect(),
        draws: chains.iter().map(Chain::kept).sum(),
        weighting,
        diagnostic_thin: diagnose::diagnostic_thin(&chains) as u64,
        params,
        warnings,
    };
    crate::out!(
        "sgld summarize: {} chains ({}) from {} directories, {} draws; means and sds weighted {}",
        merged.chains,
        merged
            .chain_ids
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        cfg.dirs.len(),
        merged.draws,
        match weighting {
            Weighting::Step => "by step size (eq. 11)",
            _ => "uniformly",
        }
    );
    if merged.diagnostic_thin > 1 {
        crate::out!(
            "{}",
            crate::sample::output::diagnostic_note(merged.diagnostic_thin)
        );
    }
    let json_path = cfg.out.as_ref().map(|o| o.join("summary.json"));
    print_params(
        &merged.params,
        json_path
            .as_deref()
            .unwrap_or(Path::new("(give --out to write them)")),
    );
    for w in &merged.warnings {
        crate::out!("warning: {w}");
    }
    if let (Some(dir), Some(path)) = (&cfg.out, &json_path) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let json = serde_json::to_string_pretty(&merged).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        crate::out!("wrote {}", path.display());
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::spans;

    #[test]
    fn a_draw_stands_for_the_steps_since_the_last_one() {
        assert_eq!(spans(&[10, 20, 35], &[0.5, 0.25, 1.0]), [5.0, 2.5, 15.0]);
        assert_eq!(spans(&[7], &[0.5]), [0.5]);
        assert!(spans(&[], &[]).is_empty());
    }
}
