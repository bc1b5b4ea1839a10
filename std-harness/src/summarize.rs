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
//!
//! Each part's own `summary.json`, when there, is carried into the merged one (its seed,
//! command line, data files with their sha256, test metrics and completeness), and the
//! parts are checked against each other: different data or settings are warnings,
//! different seeds a note (independent chains may come from different seeds).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sample::chains::Chain;
use crate::sample::config::Weighting;
use crate::sample::diagnose::{self, Evidence};
use crate::sample::draws::Draws;
use crate::sample::kept::Kept;
use crate::sample::network::Group;
use crate::sample::output::{ParamSummary, print_layers, print_params};

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
    /// A network's layers and the parameters the checks read (`--model mlp` runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkLayers>,
    /// The checklist's findings on the merged chains, and where the parts disagree on
    /// their data or settings.
    pub warnings: Vec<String>,
    /// What is worth knowing but not a warning (the parts' seeds differ).
    pub notes: Vec<String>,
    /// Each part's provenance, from its own `summary.json`.
    pub parts: Vec<PartRecord>,
}

/// What a part's `summary.json` records of its run (`null` where it has none).
#[derive(Debug, Clone, Serialize)]
pub struct PartRecord {
    /// The directory.
    pub dir: String,
    /// Its chains' numbers.
    pub chain_ids: Vec<usize>,
    /// Whether the run ended as planned.
    pub complete: Option<bool>,
    /// The seed.
    pub seed: Option<u64>,
    /// The version of sgld that wrote it.
    pub version: Option<String>,
    /// Its command line.
    pub command_line: Option<Vec<String>>,
    /// The data files and their sha256.
    pub data: Option<serde_json::Value>,
    /// Its test metrics.
    pub test: Option<serde_json::Value>,
}

/// The settings of a run's `summary.json` that parts of one run share: where two parts
/// differ in one, their chains did not sample the same way.
const SHARED_SETTINGS: [&str; 11] = [
    "model",
    "sampler",
    "prior",
    "cv",
    "temperature",
    "batch",
    "step_size",
    "thin",
    "burn_in",
    "weighting",
    "dim",
];

/// A part's record from its `summary.json` (`json`, if readable).
fn part_record(dir: &Path, chain_ids: Vec<usize>, json: Option<&serde_json::Value>) -> PartRecord {
    let get = |k: &str| json.map(|v| &v[k]).filter(|v| !v.is_null());
    PartRecord {
        dir: dir.display().to_string(),
        chain_ids,
        complete: get("complete").and_then(serde_json::Value::as_bool),
        seed: get("seed").and_then(serde_json::Value::as_u64),
        version: get("version").and_then(|v| v.as_str().map(String::from)),
        command_line: get("command_line").and_then(|v| serde_json::from_value(v.clone()).ok()),
        data: get("data").cloned(),
        test: get("test").cloned(),
    }
}

/// Where the parts' summaries disagree: warnings (data, settings, an incomplete part)
/// and notes (seeds).
fn disagreements(
    parts: &[PartRecord],
    jsons: &[Option<serde_json::Value>],
) -> (Vec<String>, Vec<String>) {
    let (mut warnings, mut notes) = (Vec::new(), Vec::new());
    // The values in order of first appearance, when there are two or more.
    let distinct = |what: &str, values: Vec<String>| -> Option<String> {
        let mut seen: Vec<String> = Vec::new();
        for v in values {
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        (seen.len() > 1).then(|| format!("{what}: {}", seen.join(" vs ")))
    };
    let sha = |p: &PartRecord| {
        p.data
            .as_ref()
            .and_then(|d| d["train"]["sha256"].as_str().map(String::from))
    };
    let shas: Vec<String> = parts.iter().filter_map(sha).collect();
    if let Some(d) = distinct("training data sha256", shas) {
        warnings.push(format!(
            "the parts read different training data ({d}): their chains sampled different posteriors"
        ));
    }
    for key in SHARED_SETTINGS {
        let values: Vec<String> = jsons
            .iter()
            .flatten()
            .map(|v| &v[key])
            .filter(|v| !v.is_null())
            .map(|v| v.to_string())
            .collect();
        if let Some(d) = distinct(key, values) {
            warnings.push(format!(
                "the parts ran with different settings ({d}): the merged chains are not one run's"
            ));
        }
    }
    for p in parts.iter().filter(|p| p.complete == Some(false)) {
        warnings.push(format!(
            "{} did not complete (its summary.json says so): its chains are shorter than planned",
            p.dir
        ));
    }
    let seeds: Vec<String> = parts
        .iter()
        .filter_map(|p| p.seed.map(|s| s.to_string()))
        .collect();
    if let Some(d) = distinct("seeds", seeds) {
        notes.push(format!("the parts ran with different {d}"));
    }
    (warnings, notes)
}

/// A network's layers and what the checks read.
#[derive(Debug, Clone, Serialize)]
pub struct NetworkLayers {
    /// The weights summarised by layer.
    pub groups: Vec<Group>,
    /// The parameters no permutation of the units changes (`log_precision`).
    pub checked: Vec<ParamSummary>,
}

/// The inputs and hidden units of a network's parameter names (`--model mlp`'s:
/// `w1[h:input]`, `b1[h]`, …, `w2[h]`, `b2`), or `None` for any other model's.
fn network_layout(names: &[String]) -> Option<(usize, usize)> {
    let inputs = names.iter().take_while(|n| n.starts_with("w1[1:")).count();
    let hidden = names.iter().filter(|n| n.starts_with("w2[")).count();
    let b2 = names.iter().position(|n| n == "b2")?;
    (inputs > 0 && hidden > 0 && b2 == hidden * (inputs + 2)).then_some((inputs, hidden))
}

/// One directory's chains, its parameter names and its weighting.
struct Part {
    names: Vec<String>,
    chains: Vec<Chain>,
    weighting: Option<Weighting>,
    /// Its `summary.json`, when there and readable.
    json: Option<serde_json::Value>,
}

/// A directory for the chains' draws while they are summarised, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Self, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("sgld-summarize-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Self(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A chain being read: its draws and record, and its first draw's step and step size
/// until the second tells the gap of the thinning.
struct Reading {
    chain: Chain,
    first: Option<(u64, f32)>,
    last_step: Option<u64>,
}

impl Reading {
    /// Records a draw at `step` with step size `eps`: `Σ ε` it stands for is `ε` times
    /// the steps since the previous kept draw (the first draw's: the gap to the second).
    fn record(&mut self, step: u64, eps: f32) {
        let record = &mut self.chain.record;
        match (self.first.take(), self.last_step) {
            (Some((s0, e0)), _) => {
                record.push(s0, e0, e0 as f64 * (step - s0) as f64);
                record.push(step, eps, eps as f64 * (step - s0) as f64);
            }
            (None, Some(prev)) => record.push(step, eps, eps as f64 * (step - prev) as f64),
            (None, None) => self.first = Some((step, eps)),
        }
        self.last_step = Some(step);
    }

    /// The chain, its lone draw recorded as standing for one step.
    fn finish(mut self) -> Result<Chain, String> {
        if let Some((s0, e0)) = self.first.take() {
            self.chain.record.push(s0, e0, e0 as f64);
        }
        self.chain.draws.finish()?;
        Ok(self.chain)
    }
}

/// Reads `dir/draws.csv` line by line into chains whose draws go to files under
/// `scratch` (so a long run is never held in memory), and the weighting from
/// `dir/summary.json`, when there.
fn read_part(dir: &Path, scratch: &Path) -> Result<Part, String> {
    use std::io::BufRead;
    let path = dir.join("draws.csv");
    let io = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let mut lines = std::io::BufReader::new(std::fs::File::open(&path).map_err(io)?).lines();
    let header_line = lines.next().transpose().map_err(io)?.unwrap_or_default();
    let header: Vec<&str> = header_line.split(',').collect();
    if header.len() < 4 || header[..3] != ["chain", "step", "step_size"] {
        return Err(format!(
            "{}: not an sgld draws.csv (its header should start chain,step,step_size and name the parameters)",
            path.display()
        ));
    }
    let names: Vec<String> = header[3..].iter().map(|s| s.to_string()).collect();
    let d = names.len();
    let mut chains: Vec<Reading> = Vec::new();
    let mut row = Vec::with_capacity(d);
    for (i, line) in lines.enumerate() {
        let line = line.map_err(io)?;
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
        let at = match chains.iter().position(|c| c.chain.id == chain) {
            Some(at) => at,
            None => {
                let file = scratch.join(format!("{}-chain_{chain}.npy", chains.len()));
                let draws = Draws::to_file(d, &file)?;
                chains.push(Reading {
                    chain: Chain::from_draws(chain, draws, Kept::default()),
                    first: None,
                    last_step: None,
                });
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
        if fields.next().is_some() {
            return Err(bad(&format!("more than the header's {} fields", d + 3)));
        }
        if let Some(last) = c.last_step.filter(|&last| step <= last) {
            return Err(bad(&format!(
                "chain {chain}'s steps do not increase (step {step} after {last})"
            )));
        }
        c.chain.draws.push(&row)?;
        c.record(step, eps);
    }
    let chains = chains
        .into_iter()
        .map(Reading::finish)
        .collect::<Result<_, _>>()?;
    let json = std::fs::read_to_string(dir.join("summary.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok());
    let weighting = json.as_ref().and_then(|v| match v["weighting"].as_str() {
        Some("step") => Some(Weighting::Step),
        Some("uniform") => Some(Weighting::Uniform),
        _ => None,
    });
    Ok(Part {
        names,
        chains,
        weighting,
        json,
    })
}

/// One line on a part: its chains, seed, training data and test metrics.
fn part_line(p: &PartRecord) -> String {
    let ids: Vec<String> = p.chain_ids.iter().map(|c| c.to_string()).collect();
    let mut s = format!("{}: chains {}", p.dir, ids.join(", "));
    if let Some(seed) = p.seed {
        s += &format!("; seed {seed}");
    }
    if let Some(d) = &p.data
        && let (Some(path), Some(sha)) =
            (d["train"]["path"].as_str(), d["train"]["sha256"].as_str())
    {
        s += &format!("; train {path} (sha256 {}…)", &sha[..sha.len().min(12)]);
    }
    if let Some(t) = &p.test {
        if let Some(a) = t["accuracy"].as_f64() {
            s += &format!("; test accuracy {a:.4}");
        }
        if let Some(l) = t["log_lik_per_datum"].as_f64() {
            s += &format!(", log predictive {l:.4} a datum");
        }
    }
    if p.complete == Some(false) {
        s += "; incomplete";
    }
    s
}

/// Merges, summarises, prints and (with `out`) writes `out/summary.json`.
pub fn run(cfg: &SummarizeConfig) -> Result<Merged, String> {
    if cfg.dirs.is_empty() {
        return Err("give at least one output directory of sgld sample".into());
    }
    let mut names: Option<Vec<String>> = None;
    let mut chains: Vec<Chain> = Vec::new();
    let mut weighting: Option<Weighting> = None;
    let scratch = Scratch::new()?;
    let (mut records, mut jsons) = (Vec::new(), Vec::new());
    for dir in &cfg.dirs {
        let part = read_part(dir, &scratch.0)?;
        let ids = part.chains.iter().map(|c| c.id).collect();
        records.push(part_record(dir, ids, part.json.as_ref()));
        jsons.push(part.json);
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
    // A network's single weights are not identified: check what no permutation changes.
    let network = network_layout(&names).map(|(inputs, hidden)| NetworkLayers {
        groups: crate::sample::network::groups(&params, inputs, hidden),
        checked: params
            .iter()
            .filter(|p| p.name == "log_precision")
            .cloned()
            .collect(),
    });
    let mut warnings = diagnose::warnings(
        network.as_ref().map_or(&params, |n| &n.checked),
        &Evidence {
            chains: &chains,
            target_ess: cfg.target_ess,
            alpha: (f64::INFINITY, None),
            laplace_sds: &[],
            adjusted: false,
            stability: None,
            earlier: Vec::new(),
            symmetric: network.is_some(),
        },
    );
    let (differ, notes) = disagreements(&records, &jsons);
    warnings.extend(differ);
    let merged = Merged {
        sources: cfg.dirs.iter().map(|d| d.display().to_string()).collect(),
        chains: chains.len(),
        chain_ids: chains.iter().map(|c| c.id).collect(),
        draws: chains.iter().map(Chain::kept).sum(),
        weighting,
        diagnostic_thin: diagnose::diagnostic_thin(&chains) as u64,
        params,
        network,
        warnings,
        notes,
        parts: records,
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
    for p in &merged.parts {
        crate::out!("  {}", part_line(p));
    }
    for n in &merged.notes {
        crate::out!("note: {n}");
    }
    if merged.diagnostic_thin > 1 {
        crate::out!(
            "{}",
            crate::sample::output::diagnostic_note(merged.diagnostic_thin)
        );
    }
    let json_path = cfg.out.as_ref().map(|o| o.join("summary.json"));
    let all_in = json_path
        .as_deref()
        .unwrap_or(Path::new("(give --out to write them)"));
    match &merged.network {
        Some(n) => {
            print_layers(&n.groups);
            crate::out!(
                "single weights are not identified (hidden units permute between chains): R̂ and ESS are checked on log_precision (each run's chain_N.csv has lp__)"
            );
            print_params(&n.checked, all_in);
        }
        None => print_params(&merged.params, all_in),
    }
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
    use super::*;

    /// The spans a chain read from `(step, step size)` rows records.
    fn spans(rows: &[(u64, f32)]) -> Vec<f64> {
        let mut r = Reading {
            chain: Chain::from_draws(0, Draws::in_memory(1), Kept::default()),
            first: None,
            last_step: None,
        };
        for &(step, eps) in rows {
            r.chain.draws.push(&[0.0]).unwrap();
            r.record(step, eps);
        }
        let c = r.finish().unwrap();
        assert_eq!(c.record.len(), rows.len());
        (0..rows.len()).map(|k| c.record.span(k)).collect()
    }

    #[test]
    fn a_draw_stands_for_the_steps_since_the_last_one() {
        // The first draw stands for the gap of the thinning (its own is unknown).
        assert_eq!(spans(&[(10, 0.5), (20, 0.25), (35, 1.0)]), [5.0, 2.5, 15.0]);
        assert_eq!(spans(&[(7, 0.5)]), [0.5]);
        assert!(spans(&[]).is_empty());
    }
}
