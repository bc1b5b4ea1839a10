//! Stage 5, diagnostics: per-parameter summaries (weighted moments, quantiles, bulk and
//! tail ESS, rank-normalised split R̂) and the checklist of warnings a run prints and
//! records, as CmdStan's `diagnose` does.

use rayon::prelude::*;
use sgld::estimate::WeightedMoments;

use super::chains::Chain;
use super::output::ParamSummary;
use crate::diagnostics;

/// R̂ above this is a warning (Vehtari et al. 2021).
pub const RHAT_MAX: f64 = 1.01;

/// Parameters `js` of the last `len` draws of every chain: for each parameter, each
/// chain's values (one pass over each chain's rows for the whole group).
fn group_values(
    chains: &[Chain],
    js: std::ops::Range<usize>,
    len: usize,
) -> Result<Vec<Vec<Vec<f64>>>, String> {
    let mut per: Vec<Vec<Vec<f64>>> = vec![Vec::with_capacity(chains.len()); js.len()];
    for c in chains {
        let k = c.kept();
        let n = len.min(k);
        let cols = c.draws.columns(js.clone(), k - n..k)?;
        for (jj, p) in per.iter_mut().enumerate() {
            p.push(
                cols[jj * n..(jj + 1) * n]
                    .iter()
                    .map(|&v| v as f64)
                    .collect(),
            );
        }
    }
    Ok(per)
}

/// The worst diagnostics over every parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scan {
    /// Smallest bulk ESS.
    pub min_bulk: f64,
    /// Smallest tail ESS.
    pub min_tail: f64,
    /// Largest R̂.
    pub max_rhat: f64,
}

impl Scan {
    /// Whether every parameter reaches `target` ESS (bulk and tail) and R̂ ≤ 1.01.
    pub fn meets(&self, target: f64) -> bool {
        self.min_bulk >= target && self.min_tail >= target && self.max_rhat <= RHAT_MAX
    }
}

/// Diagnostics of the last `len` draws of every chain (the whole of them: `usize::MAX`),
/// `None` when a chain has fewer than 4.
pub fn scan(chains: &[Chain], d: usize, len: usize) -> Option<Scan> {
    let min_len = chains.iter().map(Chain::kept).min()?.min(len);
    if min_len < 4 {
        return None;
    }
    let groups: Vec<Vec<diagnostics::Diagnostics>> = (0..d.div_ceil(GROUP))
        .into_par_iter()
        .map(|g| {
            let js = g * GROUP..((g + 1) * GROUP).min(d);
            let values = group_values(chains, js, min_len)?;
            Ok(values.iter().map(|v| diagnostics::diagnostics(v)).collect())
        })
        .collect::<Result<_, String>>()
        .ok()?;
    let per: Vec<diagnostics::Diagnostics> = groups.into_iter().flatten().collect();
    let nan_max = |a: f64, b: f64| {
        if b.is_nan() || a.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    };
    let nan_min = |a: f64, b: f64| {
        if b.is_nan() || a.is_nan() {
            f64::NAN
        } else {
            a.min(b)
        }
    };
    Some(Scan {
        min_bulk: per.iter().map(|p| p.ess_bulk).fold(f64::INFINITY, nan_min),
        min_tail: per.iter().map(|p| p.ess_tail).fold(f64::INFINITY, nan_min),
        max_rhat: per.iter().map(|p| p.rhat).fold(f64::NEG_INFINITY, nan_max),
    })
}

/// Parameters whose draws one pass over the rows gathers: sixteen f32 are one cache line
/// of a row, so the strided reads of a column cost a line per sixteen parameters.
const GROUP: usize = 16;

/// The most bytes of columns a group gathers.
const GROUP_BYTES: usize = 8 << 20;

/// Per-parameter summaries of the kept draws, weighted by `weight(chain, k)`.
pub fn summarise(
    chains: &[Chain],
    names: &[String],
    weight: &(dyn Fn(&Chain, usize) -> f64 + Sync),
) -> Result<Vec<ParamSummary>, String> {
    let d = names.len();
    let min_len = chains.iter().map(Chain::kept).min().unwrap_or(0);
    let same_len = chains.iter().all(|c| c.kept() == min_len);
    // The weights are the same for every parameter: once, chain by chain.
    let ws: Vec<f64> = chains
        .iter()
        .flat_map(|c| (0..c.kept()).map(move |k| weight(c, k)))
        .collect();
    let starts: Vec<usize> = chains
        .iter()
        .scan(0, |at, c| {
            let s = *at;
            *at += c.kept();
            Some(s)
        })
        .collect();
    let total = ws.len();
    // Long runs gather fewer columns a pass: the group's columns are what each thread
    // holds besides one parameter's diagnostics (8 MiB at most, from 131,072 draws).
    let group = (GROUP_BYTES / (4 * total.max(1))).clamp(1, GROUP);
    // Draws beyond what a few passes over the rows should read are first transposed into
    // a column file (one pass), from which a group's columns are one contiguous read.
    let columns = if group < GROUP {
        ColumnFile::transpose(chains, &starts, total, d)?
    } else {
        None
    };
    let groups: Vec<Vec<ParamSummary>> = (0..d.div_ceil(group))
        .into_par_iter()
        .map(|g| {
            let js = g * group..((g + 1) * group).min(d);
            // Columns of this group, chain by chain.
            let mut cols = vec![0.0f32; js.len() * total];
            match &columns {
                Some(f) => f.read(js.clone(), total, &mut cols)?,
                None => {
                    for (c, &at) in chains.iter().zip(&starts) {
                        c.draws
                            .columns_into(js.clone(), 0..c.kept(), &mut cols[at..], total)?;
                    }
                }
            }
            Ok(js
                .clone()
                .map(|j| {
                    let col = &cols[(j - js.start) * total..(j - js.start + 1) * total];
                    summarise_one(&names[j], col, &ws, chains, &starts, min_len, same_len)
                })
                .collect())
        })
        .collect::<Result<_, String>>()?;
    Ok(groups.into_iter().flatten().collect())
}

/// The kept draws of every chain, column by column (`[j][chain by chain]`), in a file
/// beside the first chain's draws; removed when dropped.
struct ColumnFile {
    path: std::path::PathBuf,
}

impl ColumnFile {
    /// Rows read at a time while transposing.
    const CHUNK: usize = 4096;

    /// The column file of `chains` when their draws are in files (`None` in memory).
    fn transpose(
        chains: &[Chain],
        starts: &[usize],
        total: usize,
        d: usize,
    ) -> Result<Option<Self>, String> {
        use std::io::{Seek, SeekFrom, Write};
        let Some(first) = chains.first().and_then(|c| c.draws.path()) else {
            return Ok(None);
        };
        let path = first.with_extension("columns.tmp");
        let io = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        let mut file = std::fs::File::create(&path).map_err(io)?;
        let columns = Self { path: path.clone() };
        let mut buf = vec![0.0f32; d * Self::CHUNK];
        let mut bytes = Vec::with_capacity(4 * Self::CHUNK);
        for (c, &at) in chains.iter().zip(starts) {
            for r0 in (0..c.kept()).step_by(Self::CHUNK) {
                let n = Self::CHUNK.min(c.kept() - r0);
                c.draws.columns_into(0..d, r0..r0 + n, &mut buf, n)?;
                for j in 0..d {
                    bytes.clear();
                    bytes.extend(buf[j * n..(j + 1) * n].iter().flat_map(|v| v.to_le_bytes()));
                    file.seek(SeekFrom::Start(((j * total + at + r0) * 4) as u64))
                        .map_err(io)?;
                    file.write_all(&bytes).map_err(io)?;
                }
            }
        }
        file.flush().map_err(io)?;
        Ok(Some(columns))
    }

    /// Columns `js` (each `total` values) into `out`.
    fn read(
        &self,
        js: std::ops::Range<usize>,
        total: usize,
        out: &mut [f32],
    ) -> Result<(), String> {
        use std::io::{Read, Seek, SeekFrom};
        let io = |e: std::io::Error| format!("cannot read {}: {e}", self.path.display());
        let mut file = std::fs::File::open(&self.path).map_err(io)?;
        file.seek(SeekFrom::Start((js.start * total * 4) as u64))
            .map_err(io)?;
        let mut bytes = vec![0u8; 4 * Self::CHUNK];
        for part in out[..js.len() * total].chunks_mut(Self::CHUNK) {
            let b = &mut bytes[..4 * part.len()];
            file.read_exact(b).map_err(io)?;
            for (o, b) in part.iter_mut().zip(b.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        Ok(())
    }
}

impl Drop for ColumnFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One parameter's summary from its draws `col` (chain by chain, chain `c` from
/// `starts[c]`) and their weights.
fn summarise_one(
    name: &str,
    col: &[f32],
    ws: &[f64],
    chains: &[Chain],
    starts: &[usize],
    min_len: usize,
    same_len: bool,
) -> ParamSummary {
    const PS: [f64; 3] = [0.05, 0.5, 0.95];
    let mut store = vec![0.0; WeightedMoments::storage_len(1)];
    let mut mom = WeightedMoments::new(&mut store, 1).expect("one component");
    for (&v, &w) in col.iter().zip(ws) {
        let _ = mom.push(w, &[v]);
    }
    // The last `min_len` draws of each chain, for the diagnostics.
    let last: Vec<Vec<f64>> = chains
        .iter()
        .zip(starts)
        .map(|(c, &at)| {
            let k = c.kept();
            col[at + k - min_len.min(k)..at + k]
                .iter()
                .map(|&v| v as f64)
                .collect()
        })
        .collect();
    let (diag, q) = if min_len >= 4 && same_len {
        // One sort of the draws for both.
        diagnostics::diagnostics_and_quantiles(&last, ws, &PS)
    } else {
        let diag = if min_len >= 4 {
            diagnostics::diagnostics(&last)
        } else {
            diagnostics::Diagnostics {
                rhat: f64::NAN,
                ess_bulk: f64::NAN,
                ess_tail: f64::NAN,
            }
        };
        let vals: Vec<f64> = col.iter().map(|&v| v as f64).collect();
        (diag, diagnostics::weighted_quantiles(&vals, ws, &PS))
    };
    ParamSummary {
        name: name.to_string(),
        mean: mom.mean(0),
        sd: mom.variance(0).sqrt(),
        q05: q[0],
        q50: q[1],
        q95: q[2],
        ess_bulk: diag.ess_bulk,
        ess_tail: diag.ess_tail,
        rhat: diag.rhat,
    }
}

/// What the checklist looks at besides the summaries.
pub struct Evidence<'a> {
    /// The chains (their kept draws).
    pub chains: &'a [Chain],
    /// The ESS every parameter should reach.
    pub target_ess: f64,
    /// The α target and the α measured at the end (eq. 10), if measured.
    pub alpha: (f64, Option<f64>),
    /// The sds of the Laplace approximation at the mode.
    pub laplace_sds: &'a [f64],
    /// The largest step size of the run and the largest curvature of the posterior
    /// (`max Pⱼⱼ`) in the sampler's coordinates, for the stability check.
    pub stability: Option<(f64, f64)>,
    /// Notes from earlier stages that are warnings (burn-in, warm-up).
    pub earlier: Vec<String>,
}

/// The checklist: every problem found, as one sentence each.
pub fn warnings(params: &[ParamSummary], ev: &Evidence<'_>) -> Vec<String> {
    let mut w = ev.earlier.clone();
    let d = params.len();
    for ch in ev.chains {
        if let Some((step, why)) = &ch.failure {
            w.push(format!(
                "chain {} refused a non-finite step at step {step} and stopped: {why}",
                ch.id
            ));
        }
    }
    let min_kept = ev.chains.iter().map(Chain::kept).min().unwrap_or(0);
    if min_kept < 4 {
        w.push(format!(
            "too few draws to diagnose: a chain kept {min_kept} (R̂ and ESS need 4 per chain); run longer or thin less"
        ));
    }
    let bad_rhat: Vec<&ParamSummary> = params.iter().filter(|p| p.rhat > RHAT_MAX).collect();
    if let Some(p) = bad_rhat.iter().max_by(|a, b| a.rhat.total_cmp(&b.rhat)) {
        w.push(format!(
            "R̂ > {RHAT_MAX} for {} of {d} parameters (largest {:.3}, {}): the chains have not mixed, so the summary is not yet the posterior",
            bad_rhat.len(),
            p.rhat,
            p.name
        ));
    }
    let low: Vec<&ParamSummary> = params
        .iter()
        .filter(|p| p.ess_bulk < ev.target_ess || p.ess_tail < ev.target_ess)
        .collect();
    if let Some(p) = low.iter().min_by(|a, b| {
        a.ess_bulk
            .min(a.ess_tail)
            .total_cmp(&b.ess_bulk.min(b.ess_tail))
    }) {
        w.push(format!(
            "bulk or tail ESS below {:.0} for {} of {d} parameters (smallest {:.0}, {}): the Monte Carlo error of the summary is larger than targeted; run longer (--target-ess, --max-steps)",
            ev.target_ess,
            low.len(),
            p.ess_bulk.min(p.ess_tail),
            p.name
        ));
    }
    if let (target, Some(a)) = ev.alpha
        && a > target
    {
        w.push(format!(
            "the sampling threshold α = {a:.3} is above --alpha {target} (eq. 10): the mini-batch noise rivals the injected noise, so the sds are inflated; use a smaller step or a larger --batch"
        ));
    }
    if let Some((eps, curv)) = ev.stability
        && eps * curv > 2.0
    {
        w.push(format!(
            "step size {eps:.3e} is beyond the posterior's curvature ({curv:.3e}): each step's noise (sd {:.3e}) exceeds the posterior's narrowest sd ({:.3e}), so the chain is a random walk of its noise; use --step-size auto or a step below {:.3e}",
            eps.sqrt(),
            1.0 / curv.sqrt(),
            2.0 / curv
        ));
    }
    // Draws far wider than the Laplace approximation allows.
    let mut random_walk = false;
    if let Some((j, ratio)) = params
        .iter()
        .zip(ev.laplace_sds)
        .map(|(p, s)| p.sd / s)
        .enumerate()
        .filter(|(_, r)| r.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1))
        && ratio > 10.0
    {
        w.push(format!(
            "the draws of {} spread {ratio:.3e} times wider than the posterior's curvature at the mode allows: the step size is too large for the chain to feel the gradient",
            params[j].name
        ));
        random_walk = true;
    }
    // Chains that a too-large step scattered are not modes.
    if !random_walk && let Some(msg) = modes(ev.chains, params) {
        w.push(msg);
    }
    w
}

/// Chains that settled apart: for some parameter the chains' means differ by more than
/// four within-chain sds, with R̂ above 1.1.
fn modes(chains: &[Chain], params: &[ParamSummary]) -> Option<String> {
    if chains.len() < 2 {
        return None;
    }
    let flagged: Vec<usize> = (0..params.len())
        .filter(|&j| !params[j].rhat.is_nan() && params[j].rhat > 1.1)
        .collect();
    if flagged.is_empty() {
        return None;
    }
    // Each chain's mean and sd of every parameter, in one pass over its rows (Welford).
    let per_chain: Vec<Vec<(f64, f64)>> = chains
        .iter()
        .filter(|c| c.kept() >= 2)
        .map(|c| {
            let d = c.draws.dim();
            let (mut mean, mut m2) = (vec![0.0f64; d], vec![0.0f64; d]);
            c.draws.rows(0..c.kept(), |k, row| {
                let n = (k + 1) as f64;
                for ((m, s), &v) in mean.iter_mut().zip(&mut m2).zip(row) {
                    let delta = v as f64 - *m;
                    *m += delta / n;
                    *s += delta * (v as f64 - *m);
                }
                Ok(())
            })?;
            let k = c.kept() as f64;
            Ok(mean
                .into_iter()
                .zip(m2)
                .map(|(m, s)| (m, (s / (k - 1.0)).sqrt()))
                .collect())
        })
        .collect::<Result<_, String>>()
        .ok()?;
    for &j in &flagged {
        let p = &params[j];
        let stats: Vec<(f64, f64)> = per_chain.iter().map(|c| c[j]).collect();
        let lo = stats.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
        let hi = stats.iter().map(|s| s.0).fold(f64::NEG_INFINITY, f64::max);
        let within = stats.iter().map(|s| s.1).sum::<f64>() / stats.len().max(1) as f64;
        if hi - lo > 4.0 * within {
            return Some(format!(
                "the chains settled in different places: their means of {} range from {lo:.4} to {hi:.4} with within-chain sd {within:.4}; the posterior may have several modes, and the pooled summary weights them by chain count, not by mass",
                p.name
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::draws::Draws;

    /// Long runs go through the column file; the summaries are those of the same draws
    /// held in memory, bit for bit (two chains of 140,000 draws of 3 parameters: more
    /// than 131,072, where a group of 16 columns would pass 8 MiB).
    #[test]
    fn the_column_file_gives_the_summaries_of_the_draws_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let (n, d) = (140_000usize, 3);
        let make = |spill: bool| -> Vec<Chain> {
            (0..2)
                .map(|c| {
                    let mut draws = if spill {
                        Draws::to_file(d, &dir.path().join(format!("chain_{c}.npy"))).unwrap()
                    } else {
                        Draws::in_memory(d)
                    };
                    let mut x = 0.0f64;
                    for k in 0..n {
                        // An AR(1) chain per parameter, different per chain.
                        x = 0.9 * x + ((k * 7919 + c * 104_729) % 1000) as f64 / 1000.0 - 0.5;
                        draws
                            .push(&[x as f32, (x * 2.0) as f32, (k % 17) as f32])
                            .unwrap();
                    }
                    draws.finish().unwrap();
                    let steps: Vec<u64> = (1..=n as u64).collect();
                    Chain::from_draws(c, draws, steps, vec![0.1; n], vec![0.1; n])
                })
                .collect()
        };
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let weight = |c: &Chain, k: usize| c.span[k];
        let (in_memory, on_disk) = (make(false), make(true));
        assert!(on_disk[0].draws.path().is_some());
        let want = summarise(&in_memory, &names, &weight).unwrap();
        let got = summarise(&on_disk, &names, &weight).unwrap();
        assert_eq!(got, want);
        // The column file is gone.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }
}
