//! Stage 5, diagnostics: per-parameter summaries (weighted moments, quantiles, bulk and
//! tail ESS, rank-normalised split R̂) and the checklist of warnings a run prints and
//! records, as CmdStan's `diagnose` does.

use rayon::prelude::*;
use sgld::estimate::WeightedMoments;

use super::chains::Chain;
use super::records::ParamSummary;
use crate::diagnostics;

/// R̂ above this is a warning (Vehtari et al. 2021).
pub const RHAT_MAX: f64 = 1.01;

/// Parameters `js` of the last `len` draws of every chain, every `t`-th of them: for each
/// parameter, each chain's values (one pass over each chain's rows for the whole group).
fn group_values(
    chains: &[Chain],
    js: std::ops::Range<usize>,
    len: usize,
    t: usize,
) -> Result<Vec<Vec<Vec<f64>>>, String> {
    let mut per: Vec<Vec<Vec<f64>>> = vec![Vec::with_capacity(chains.len()); js.len()];
    for c in chains {
        // As `summarise` thins: draws t − 1, 2t − 1, … from the window's start.
        let start = c.kept() - len.min(c.kept());
        let n = len.min(c.kept()) / t * t;
        for p in per.iter_mut() {
            p.push(Vec::with_capacity(n / t));
        }
        c.draws.rows(start..start + n, |i, draw| {
            if (i - start) % t == t - 1 {
                for (p, j) in per.iter_mut().zip(js.clone()) {
                    p.last_mut().expect("pushed above").push(f64::from(draw[j]));
                }
            }
            Ok(())
        })?;
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
/// of at most [`DIAGNOSED_DRAWS`] as [`summarise`] reads them; `None` when a chain has
/// fewer than 4; the error when a chain's draws cannot be read back (its `.npy` file cut
/// short or gone), which ends the run instead of letting it sample on blind.
pub fn scan(chains: &[Chain], d: usize, len: usize) -> Result<Option<Scan>, String> {
    Ok(scan_params(chains, d, len)?.map(|per| worst(&per)))
}

/// [`scan`]'s diagnostics of each parameter.
pub fn scan_params(
    chains: &[Chain],
    d: usize,
    len: usize,
) -> Result<Option<Vec<diagnostics::Diagnostics>>, String> {
    let Some(min_len) = chains.iter().map(Chain::kept).min() else {
        return Ok(None);
    };
    let min_len = min_len.min(len);
    let t = (min_len * chains.len()).div_ceil(DIAGNOSED_DRAWS).max(1);
    if min_len / t < 4 {
        return Ok(None);
    }
    let values: usize = chains.iter().map(|c| c.kept().min(len) / t).sum();
    // Four groups a thread at least, so that narrower runs keep every core busy.
    let per_thread = d.div_ceil(4 * rayon::current_num_threads());
    let group = scan_group(values).min(per_thread).max(GROUP);
    let groups: Vec<Vec<diagnostics::Diagnostics>> = (0..d.div_ceil(group))
        .into_par_iter()
        .map(|g| {
            let js = g * group..((g + 1) * group).min(d);
            let values = group_values(chains, js, min_len, t)?;
            Ok(values.iter().map(|v| diagnostics::diagnostics(v)).collect())
        })
        .collect::<Result<_, String>>()?;
    Ok(Some(groups.into_iter().flatten().collect()))
}

/// The smallest ESS and the largest R̂ of `per` (NaN when any is).
pub fn worst(per: &[diagnostics::Diagnostics]) -> Scan {
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
    Scan {
        min_bulk: per.iter().map(|p| p.ess_bulk).fold(f64::INFINITY, nan_min),
        min_tail: per.iter().map(|p| p.ess_tail).fold(f64::INFINITY, nan_min),
        max_rhat: per.iter().map(|p| p.rhat).fold(f64::NEG_INFINITY, nan_max),
    }
}

/// The split R̂ that chance alone leaves a parameter of bulk ESS `ess` under, from
/// `chains` chains in equilibrium, as the largest of `d` parameters' (all `d` under it
/// but one time in twenty): [`ChanceRhat`] for one parameter.
pub fn rhat_noise(ess: f64, chains: usize, d: usize) -> f64 {
    ChanceRhat::new(chains, d).at(ess)
}

/// The chance level of the largest split R̂ of `d` parameters from `chains` chains in
/// equilibrium, as a function of a parameter's bulk ESS. Split in halves, `m = 2·chains`
/// pieces of `n_e = ess/m` effective draws each give `R̂² ≈ 1 + χ²_{m−1}/((m − 1) n_e)`:
/// the spread of the pieces' means about their grand mean is that of `m` means of `n_e`
/// draws (Gelman & Rubin 1992; Vehtari et al. 2021, eq. 4). All `d` stay under it but
/// one time in twenty: `χ²` at its `1 − 0.05/d` quantile, found once.
#[derive(Debug, Clone, Copy)]
pub struct ChanceRhat {
    /// `q·m/(m − 1)`, `q` the quantile.
    scale: f64,
}

impl ChanceRhat {
    /// The level for `d` parameters of `chains` chains.
    pub fn new(chains: usize, d: usize) -> Self {
        use statrs::distribution::{ChiSquared, ContinuousCDF};
        let m = 2 * chains.max(1);
        let scale = match ChiSquared::new((m - 1) as f64) {
            Ok(chi) => chi.inverse_cdf(1.0 - 0.05 / d.max(1) as f64) * m as f64 / (m - 1) as f64,
            Err(_) => f64::INFINITY,
        };
        Self { scale }
    }

    /// The level for a parameter of bulk ESS `ess`.
    pub fn at(&self, ess: f64) -> f64 {
        (1.0 + self.scale / ess.max(1.0)).sqrt()
    }
}

/// Parameters whose draws one pass over the rows gathers: sixteen f32 are one cache line
/// of a row, so the strided reads of a column cost a line per sixteen parameters.
const GROUP: usize = 16;

/// The most bytes of values a group of [`scan`] gathers (as f64).
const SCAN_BYTES: usize = 64 << 20;

/// Parameters a group of [`scan`] gathers when each has `values` draws: as many as
/// [`SCAN_BYTES`] hold, and [`GROUP`] at least. Each group is a pass over every chain's
/// rows, which for draws in files is a read of the files: at 50,000 parameters and
/// 1,200 draws on 2 threads, 8 passes (four groups a thread) instead of 3,126 (minutes
/// of reading at each look).
fn scan_group(values: usize) -> usize {
    (SCAN_BYTES / (8 * values.max(1))).max(GROUP)
}

/// The most bytes of columns a group gathers.
const GROUP_BYTES: usize = 8 << 20;

/// Most draws of a parameter (all chains together) the R̂, ESS and quantiles read: beyond
/// it they read every `t`-th draw of each chain, for the smallest `t` that fits. The
/// means and sds always weigh every draw.
pub const DIAGNOSED_DRAWS: usize = 1 << 19;

/// The thinning [`summarise`] applies for its diagnostics to chains of these lengths.
pub fn diagnostic_thin(chains: &[Chain]) -> usize {
    let total: usize = chains.iter().map(Chain::kept).sum();
    total.div_ceil(DIAGNOSED_DRAWS).max(1)
}

/// Per-parameter summaries of the kept draws, weighted by `weight(chain, k)`: means and
/// sds of every draw; R̂, ESS and quantiles of at most [`DIAGNOSED_DRAWS`] of them (every
/// [`diagnostic_thin`]-th of each chain, each weighted by the draws it stands for). An
/// ESS from thinned draws is at most that of all of them: thinning loses only the
/// information between the draws it skips.
pub fn summarise(
    chains: &[Chain],
    names: &[String],
    weight: &(dyn Fn(&Chain, usize) -> f64 + Sync),
) -> Result<Vec<ParamSummary>, String> {
    let d = names.len();
    let thin = diagnostic_thin(chains);
    if thin == 1 {
        // The weights are the same for every parameter: once, chain by chain.
        let ws: Vec<f64> = chains
            .iter()
            .flat_map(|c| (0..c.kept()).map(move |k| weight(c, k)))
            .collect();
        let lens: Vec<usize> = chains.iter().map(Chain::kept).collect();
        // Draws in files, when one group cannot hold every parameter, are first
        // transposed into a column file (one pass over them), from which a group's
        // columns are one contiguous read: each group read from the rows would be a
        // pass over the files.
        let on_disk = chains.iter().all(|c| c.draws.path().is_some());
        let columns = if on_disk && d > group_size(ws.len()) {
            ColumnFile::transpose(chains, d, 1, &mut |_, _, _| Ok(()))?
        } else {
            None
        };
        let source = match &columns {
            Some(f) => Source::File(f),
            None => Source::Chains(chains, 1),
        };
        return summarise_columns(&source, names, &ws, &lens, None);
    }
    // One pass over every draw: the moments, and every thin-th draw into a column file
    // with the weight of the draws it stands for.
    let mut store = vec![0.0; WeightedMoments::storage_len(d)];
    let mut mom = WeightedMoments::new(&mut store, d).map_err(|e| e.to_string())?;
    let lens: Vec<usize> = chains.iter().map(|c| c.kept() / thin).collect();
    let mut ws = Vec::with_capacity(lens.iter().sum());
    let mut block = 0.0;
    let columns = ColumnFile::transpose(chains, d, thin, &mut |c, k, draw| {
        let w = weight(c, k);
        mom.push(w, draw).map_err(|e| e.to_string())?;
        if k == 0 {
            block = 0.0;
        }
        block += w;
        if k % thin == thin - 1 {
            ws.push(std::mem::take(&mut block));
        }
        Ok(())
    })?;
    let source = match &columns {
        Some(f) => Source::File(f),
        None => Source::Chains(chains, thin),
    };
    let (means, sds): (Vec<f64>, Vec<f64>) = (0..d)
        .map(|j| (mom.mean(j), mom.variance(j).sqrt()))
        .unzip();
    summarise_columns(&source, names, &ws, &lens, Some((&means, &sds)))
}

/// Columns a group gathers for `total` draws: fewer for long runs, so that a group's
/// columns, which each thread holds besides one parameter's diagnostics, stay within
/// 8 MiB (from 131,072 draws).
fn group_size(total: usize) -> usize {
    (GROUP_BYTES / (4 * total.max(1))).clamp(1, GROUP)
}

/// Where a parameter's draws are read from.
enum Source<'a> {
    /// Every `t`-th draw of the chains (draws `t − 1`, `2t − 1`, …; all of them for 1).
    Chains(&'a [Chain], usize),
    /// A column file.
    File(&'a ColumnFile),
}

impl Source<'_> {
    /// Columns `js`, each the draws of every chain (chain `c` from `starts[c]`), into
    /// `out` (`total` values a column).
    fn read(
        &self,
        js: std::ops::Range<usize>,
        starts: &[usize],
        total: usize,
        out: &mut [f32],
    ) -> Result<(), String> {
        match *self {
            Self::File(f) => f.read(js, total, out),
            Self::Chains(chains, 1) => {
                for (c, &at) in chains.iter().zip(starts) {
                    c.draws
                        .columns_into(js.clone(), 0..c.kept(), &mut out[at..], total)?;
                }
                Ok(())
            }
            Self::Chains(chains, t) => {
                for (c, &at) in chains.iter().zip(starts) {
                    let n = c.kept() / t;
                    c.draws.rows(0..n * t, |k, draw| {
                        if k % t == t - 1 {
                            for (jj, j) in js.clone().enumerate() {
                                out[jj * total + at + k / t] = draw[j];
                            }
                        }
                        Ok(())
                    })?;
                }
                Ok(())
            }
        }
    }
}

/// Per-parameter summaries from `source`'s draws, of chains `lens` long, weighted by
/// `ws` (chain by chain); the means and sds from `moments` where given.
fn summarise_columns(
    source: &Source<'_>,
    names: &[String],
    ws: &[f64],
    lens: &[usize],
    moments: Option<(&[f64], &[f64])>,
) -> Result<Vec<ParamSummary>, String> {
    let d = names.len();
    let total: usize = lens.iter().sum();
    let starts: Vec<usize> = lens
        .iter()
        .scan(0, |at, &n| {
            *at += n;
            Some(*at - n)
        })
        .collect();
    let group = group_size(total);
    let groups: Vec<Vec<ParamSummary>> = (0..d.div_ceil(group))
        .into_par_iter()
        .map(|g| {
            let js = g * group..((g + 1) * group).min(d);
            // Columns of this group, chain by chain.
            let mut cols = vec![0.0f32; js.len() * total];
            source.read(js.clone(), &starts, total, &mut cols)?;
            Ok(js
                .clone()
                .map(|j| {
                    let col = &cols[(j - js.start) * total..(j - js.start + 1) * total];
                    let given = moments.map(|(means, sds)| (means[j], sds[j]));
                    summarise_one(&names[j], col, ws, lens, &starts, given)
                })
                .collect())
        })
        .collect::<Result<_, String>>()?;
    Ok(groups.into_iter().flatten().collect())
}

/// Called on each draw `(chain, k, draw)` while transposing.
type Visit<'a> = dyn FnMut(&Chain, usize, &[f32]) -> Result<(), String> + 'a;

/// The kept draws of every chain (every `t`-th: draws `t − 1`, `2t − 1`, …), column by
/// column (`[j][chain by chain]`), in a file beside the first chain's draws; removed
/// when dropped.
struct ColumnFile {
    path: std::path::PathBuf,
}

impl ColumnFile {
    /// Rows read at a time while transposing.
    const CHUNK: usize = 4096;

    /// The column file of every `t`-th draw of `chains` when their draws are in files
    /// (`None` in memory), calling `visit(chain, k, draw)` on every draw on the way.
    fn transpose(
        chains: &[Chain],
        d: usize,
        t: usize,
        visit: &mut Visit<'_>,
    ) -> Result<Option<Self>, String> {
        use std::io::{Seek, SeekFrom, Write};
        let first = chains.first().and_then(|c| c.draws.path());
        let Some(first) = first.filter(|_| chains.iter().all(|c| c.draws.path().is_some())) else {
            for c in chains {
                c.draws.rows(0..c.kept(), |k, draw| visit(c, k, draw))?;
            }
            return Ok(None);
        };
        let total: usize = chains.iter().map(|c| c.kept() / t).sum();
        let path = first.with_extension("columns.tmp");
        let io = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        let mut file = std::fs::File::create(&path).map_err(io)?;
        let columns = Self { path: path.clone() };
        // Kept rows, `CHUNK` at a time, then written column by column.
        let mut rows = Vec::with_capacity(d * Self::CHUNK);
        let mut bytes = Vec::with_capacity(4 * Self::CHUNK);
        let mut flush = |rows: &mut Vec<f32>, at: usize| -> Result<(), String> {
            let n = rows.len() / d.max(1);
            for j in 0..d {
                bytes.clear();
                bytes.extend((0..n).flat_map(|i| rows[i * d + j].to_le_bytes()));
                file.seek(SeekFrom::Start(((j * total + at) * 4) as u64))
                    .map_err(io)?;
                file.write_all(&bytes).map_err(io)?;
            }
            rows.clear();
            Ok(())
        };
        let mut at = 0;
        for c in chains {
            let n = c.kept() / t;
            let mut written = 0;
            c.draws.rows(0..c.kept(), |k, draw| {
                visit(c, k, draw)?;
                if k % t == t - 1 {
                    rows.extend_from_slice(draw);
                    if rows.len() == d * Self::CHUNK {
                        flush(&mut rows, at + written)?;
                        written += Self::CHUNK;
                    }
                }
                Ok(())
            })?;
            flush(&mut rows, at + written)?;
            at += n;
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

/// One parameter's summary from its draws `col` (chain by chain: chain `c` is `lens[c]`
/// long from `starts[c]`) and their weights; its mean and sd from `col` unless `given`
/// (from every draw, when `col` holds a thinned subset).
fn summarise_one(
    name: &str,
    col: &[f32],
    ws: &[f64],
    lens: &[usize],
    starts: &[usize],
    given: Option<(f64, f64)>,
) -> ParamSummary {
    let min_len = lens.iter().copied().min().unwrap_or(0);
    let same_len = lens.iter().all(|&n| n == min_len);
    let (mean, sd) = given.unwrap_or_else(|| {
        let mut store = vec![0.0; WeightedMoments::storage_len(1)];
        let mut mom = WeightedMoments::new(&mut store, 1).expect("one component");
        for (&v, &w) in col.iter().zip(ws) {
            let _ = mom.push(w, &[v]);
        }
        (mom.mean(0), mom.variance(0).sqrt())
    });
    // The last `min_len` draws of each chain, for the diagnostics.
    let last: Vec<Vec<f64>> = lens
        .iter()
        .zip(starts)
        .map(|(&k, &at)| {
            col[at + k - min_len..at + k]
                .iter()
                .map(|&v| v as f64)
                .collect()
        })
        .collect();
    summary_of(name, (mean, sd), &last, same_len, ws, || {
        col.iter().map(|&v| v as f64).collect()
    })
}

/// The summary of `name` given its `(mean, sd)`: R̂ and ESS of the chains' last draws
/// `last` (equally long; NaN below 4 draws) and the weighted 5/50/95% quantiles of every
/// draw (`all()`, weights `ws`), from one sort when `last` holds every draw (`whole`).
fn summary_of(
    name: &str,
    (mean, sd): (f64, f64),
    last: &[Vec<f64>],
    whole: bool,
    ws: &[f64],
    all: impl FnOnce() -> Vec<f64>,
) -> ParamSummary {
    const PS: [f64; 3] = [0.05, 0.5, 0.95];
    let enough = last.first().is_some_and(|c| c.len() >= 4);
    let (diag, q) = if enough && whole {
        // One sort of the draws for both.
        diagnostics::diagnostics_and_quantiles(last, ws, &PS)
    } else {
        let diag = if enough {
            diagnostics::diagnostics(last)
        } else {
            diagnostics::Diagnostics {
                rhat: f64::NAN,
                ess_bulk: f64::NAN,
                ess_tail: f64::NAN,
                ess_mean: f64::NAN,
            }
        };
        (diag, diagnostics::weighted_quantiles(&all(), ws, &PS))
    };
    ParamSummary {
        name: name.to_string(),
        mean,
        sd,
        q05: q[0],
        q50: q[1],
        q95: q[2],
        ess_bulk: diag.ess_bulk,
        ess_tail: diag.ess_tail,
        mcse_mean: sd / diag.ess_mean.sqrt(),
        rhat: diag.rhat,
    }
}

/// The summary of a quantity `values[c][k]` of each kept draw `k` of chain `c` (such as
/// `lp__`), weighted by `weight` as the parameters are.
pub fn summarise_series(
    name: &str,
    values: &[Vec<f64>],
    chains: &[Chain],
    weight: &dyn Fn(&Chain, usize) -> f64,
) -> ParamSummary {
    let ws: Vec<f64> = chains
        .iter()
        .flat_map(|c| (0..c.kept()).map(move |k| weight(c, k)))
        .collect();
    let flat: Vec<f64> = values.concat();
    let total: f64 = ws.iter().sum();
    let mean = flat.iter().zip(&ws).map(|(v, w)| v * w).sum::<f64>() / total;
    let var = flat
        .iter()
        .zip(&ws)
        .map(|(v, w)| w * (v - mean).powi(2))
        .sum::<f64>()
        / total;
    let min_len = values.iter().map(Vec::len).min().unwrap_or(0);
    let last: Vec<Vec<f64>> = values
        .iter()
        .map(|v| v[v.len() - min_len..].to_vec())
        .collect();
    let same_len = values.iter().all(|v| v.len() == min_len);
    summary_of(name, (mean, var.sqrt()), &last, same_len, &ws, || flat)
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
    /// A Metropolis test kept the draws exact (MALA, HMC): draws wider than the Laplace
    /// approximation allows are then the posterior's width, not a step too large.
    pub adjusted: bool,
    /// The largest step size of the run and the largest curvature of the posterior
    /// (`max Pⱼⱼ`) in the sampler's coordinates, for the stability check.
    pub stability: Option<(f64, f64)>,
    /// Notes from earlier stages that are warnings (burn-in, warm-up).
    pub earlier: Vec<String>,
    /// The parameters are not identified (a network's hidden units permute): the
    /// summaries are the symmetry-free quantities the checks read, and chains that sit
    /// apart in the parameters are expected, so the check for separate modes is not run.
    pub symmetric: bool,
}

/// A parameter's ESS for ranking: the smaller of bulk and tail, −∞ when both are NaN (a
/// constant column ranks as the worst).
pub fn ess_rank(p: &ParamSummary) -> f64 {
    match p.ess_bulk.min(p.ess_tail) {
        e if e.is_nan() => f64::NEG_INFINITY,
        e => e,
    }
}

/// A parameter's R̂ for ranking: +∞ when NaN (a constant column ranks as the worst).
pub fn rhat_rank(p: &ParamSummary) -> f64 {
    if p.rhat.is_nan() {
        f64::INFINITY
    } else {
        p.rhat
    }
}

/// The checklist: every problem found, as one sentence each.
pub fn warnings(params: &[ParamSummary], ev: &Evidence<'_>) -> Vec<String> {
    let mut w = ev.earlier.clone();
    let d = params.len();
    w.extend(stops(ev.chains));
    let min_kept = ev.chains.iter().map(Chain::kept).min().unwrap_or(0);
    if min_kept < 4 {
        w.push(format!(
            "too few draws to diagnose: a chain kept {min_kept} (R̂ and ESS need 4 per chain); run longer or thin less"
        ));
    }
    let bad_rhat: Vec<&ParamSummary> = params.iter().filter(|p| p.rhat > RHAT_MAX).collect();
    if let Some(p) = bad_rhat
        .iter()
        .max_by(|a, b| rhat_rank(a).total_cmp(&rhat_rank(b)))
    {
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
    if let Some(p) = low
        .iter()
        .min_by(|a, b| ess_rank(a).total_cmp(&ess_rank(b)))
    {
        w.push(format!(
            "bulk or tail ESS below {:.0} for {} of {d} parameters (smallest {:.0}, {}): the Monte Carlo error of the summary is larger than targeted; run longer (--steps; an adapted run without it: --target-ess, --max-steps)",
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
    // Draws far wider than the Laplace approximation allows (an unadjusted step's doing;
    // an exact sampler's draws are the posterior, whatever the approximation said).
    let wide = if ev.adjusted {
        None
    } else {
        too_wide(params, ev.laplace_sds)
    };
    let random_walk = wide.is_some();
    w.extend(wide);
    // Chains that a too-large step scattered are not modes.
    if !random_walk
        && !ev.symmetric
        && let Some(msg) = modes(ev.chains, params)
    {
        w.push(msg);
    }
    w
}

/// The chains that stopped early: one warning per chain a non-finite step stopped, and
/// one for all that a signal stopped.
fn stops(chains: &[Chain]) -> Vec<String> {
    let mut w = Vec::new();
    let mut interrupted = Vec::new();
    for ch in chains {
        match &ch.failure {
            Some((step, _)) if ch.interrupted() => {
                interrupted.push(format!("chain {} at step {step}", ch.id));
            }
            Some((step, why)) => w.push(format!(
                "chain {} refused a non-finite step at step {step} and stopped: {why}",
                ch.id
            )),
            None => {}
        }
    }
    if !interrupted.is_empty() {
        w.push(format!(
            "the run was interrupted by a signal ({}): the draws are those before it, and the run is not complete",
            interrupted.join(", ")
        ));
    }
    w
}

/// The warning for draws that spread more than ten times wider than the Laplace
/// approximation's sds allow (a step too large for the chain to feel the gradient).
fn too_wide(params: &[ParamSummary], laplace_sds: &[f64]) -> Option<String> {
    let (j, ratio) = params
        .iter()
        .zip(laplace_sds)
        .map(|(p, s)| p.sd / s)
        .enumerate()
        .filter(|(_, r)| r.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    (ratio > 10.0).then(|| format!(
        "the draws of {} spread {ratio:.3e} times wider than the posterior's curvature at the mode allows: the step size is too large for the chain to feel the gradient",
        params[j].name
    ))
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
    use crate::sample::kept::Kept;

    /// Two chains of `n` draws of `d` parameters, draw `k` of chain `c` `row(c, k)`, in
    /// files `{name}{c}.npy` under `dir` or in memory; every draw's span is `span(k)`.
    fn chains_of(
        (d, n): (usize, usize),
        dir: Option<(&std::path::Path, &str)>,
        mut row: impl FnMut(usize, usize) -> Vec<f32>,
        span: fn(usize) -> f64,
    ) -> Vec<Chain> {
        (0..2)
            .map(|c| {
                let mut draws = match dir {
                    Some((dir, name)) => {
                        Draws::to_file(d, &dir.join(format!("{name}{c}.npy"))).unwrap()
                    }
                    None => Draws::in_memory(d),
                };
                let mut record = Kept::default();
                for k in 0..n {
                    draws.push(&row(c, k)).unwrap();
                    record.push(k as u64 + 1, 0.1, span(k));
                }
                draws.finish().unwrap();
                Chain::from_draws(c, draws, record)
            })
            .collect()
    }

    /// Two chains of `n` draws of 3 parameters (AR(1) chains, different per chain, and a
    /// counter), in files under `dir` or in memory; every draw's span is `span(k)`.
    fn make(n: usize, dir: Option<&std::path::Path>, span: fn(usize) -> f64) -> Vec<Chain> {
        let mut x = 0.0f64;
        let row = |c: usize, k: usize| {
            if k == 0 {
                x = 0.0;
            }
            x = 0.9 * x + ((k * 7919 + c * 104_729) % 1000) as f64 / 1000.0 - 0.5;
            vec![x as f32, (x * 2.0) as f32, (k % 17) as f32]
        };
        chains_of((3, n), dir.map(|d| (d, "chain_")), row, span)
    }

    /// A chain whose file lost its draws is an error for the scan, not "too few draws".
    #[test]
    fn a_scan_of_draws_that_cannot_be_read_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        // 400,000 draws of 3 values: beyond the 4 MiB buffer, so most are in the file.
        let chains = make(400_000, Some(dir.path()), |_| 0.1);
        assert!(scan(&chains, 3, usize::MAX).unwrap().is_some());
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join("chain_0.npy"))
            .unwrap();
        file.set_len(crate::sample::draws::NPY_HEADER as u64)
            .unwrap();
        let err = scan(&chains, 3, usize::MAX).unwrap_err();
        assert!(err.contains("chain_0.npy"), "{err}");
    }

    fn names() -> Vec<String> {
        ["a", "b", "c"].map(String::from).to_vec()
    }

    fn weight(c: &Chain, k: usize) -> f64 {
        c.record.span(k)
    }

    /// Files left in `dir` (the column file is removed once read).
    fn files(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    /// Long runs go through the column file; the summaries are those of the same draws
    /// held in memory, bit for bit (two chains of 140,000 draws of 3 parameters: more
    /// than 131,072, where a group of 16 columns would pass 8 MiB).
    #[test]
    fn the_column_file_gives_the_summaries_of_the_draws_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let n = 140_000;
        let (in_memory, on_disk) = (make(n, None, |_| 0.1), make(n, Some(dir.path()), |_| 0.1));
        assert!(on_disk[0].draws.path().is_some());
        assert_eq!(diagnostic_thin(&on_disk), 1);
        let want = summarise(&in_memory, &names(), &weight).unwrap();
        let got = summarise(&on_disk, &names(), &weight).unwrap();
        assert_eq!(got, want);
        assert_eq!(files(dir.path()), 2);
    }

    /// Wide, short runs in files (two chains of 60 draws of 40,000 parameters, 9.6 MB a
    /// chain: beyond the 4 MiB buffer) are scanned and summarised as in memory, with a
    /// few passes over the files: a scan's groups hold thousands of parameters when
    /// each has few draws, and the summaries go through one transposition.
    #[test]
    fn wide_short_runs_in_files_read_as_in_memory() {
        let (d, n) = (40_000, 60);
        let dir = tempfile::tempdir().unwrap();
        let make_wide = |dir| {
            let row = |c: usize, k: usize| {
                (0..d)
                    .map(|j| ((k * 7919 + j * 104_729 + c * 13) % 1009) as f32 / 1009.0)
                    .collect()
            };
            chains_of((d, n), dir, row, |_| 0.1)
        };
        let (in_memory, on_disk) = (make_wide(None), make_wide(Some((dir.path(), "w"))));
        assert!(on_disk[0].draws.path().is_some());
        let want = scan(&in_memory, d, usize::MAX).unwrap().unwrap();
        assert_eq!(scan(&on_disk, d, usize::MAX).unwrap().unwrap(), want);
        assert_eq!(
            scan(&on_disk, d, 40).unwrap(),
            scan(&in_memory, d, 40).unwrap()
        );
        let names: Vec<String> = (0..d).map(|j| format!("p{j}")).collect();
        let got = summarise(&on_disk, &names, &weight).unwrap();
        assert_eq!(got, summarise(&in_memory, &names, &weight).unwrap());
        assert_eq!(files(dir.path()), 2);
        // 120 draws a parameter: up to 69,905 a group, a few passes over the files.
        assert_eq!(scan_group(2 * n), 69_905);
        assert_eq!(scan_group(DIAGNOSED_DRAWS), GROUP);
    }

    /// Beyond `DIAGNOSED_DRAWS` the means and sds are those of every draw and the
    /// diagnostics those of every t-th draw, in files and in memory alike.
    #[test]
    fn long_runs_diagnose_every_t_th_draw_and_average_every_draw() {
        let dir = tempfile::tempdir().unwrap();
        // Two chains of 300,001: 600,002 draws, t = 2, 150,000 diagnosed a chain (the
        // odd last draw is in the means only). Spans vary, so the weights matter.
        let n = 300_001;
        let span = |k: usize| 0.1 + (k % 3) as f64 * 0.05;
        let (in_memory, on_disk) = (make(n, None, span), make(n, Some(dir.path()), span));
        assert_eq!(diagnostic_thin(&on_disk), 2);
        let got = summarise(&on_disk, &names(), &weight).unwrap();
        assert_eq!(summarise(&in_memory, &names(), &weight).unwrap(), got);
        assert_eq!(files(dir.path()), 2);

        // What they should be, from the draws directly.
        let mut store = vec![0.0; WeightedMoments::storage_len(3)];
        let mut mom = WeightedMoments::new(&mut store, 3).unwrap();
        let mut thinned = vec![vec![Vec::new(); 2]; 3];
        let mut ws = Vec::new();
        for c in &in_memory {
            let mut block = 0.0;
            c.draws
                .rows(0..n, |k, draw| {
                    mom.push(weight(c, k), draw).unwrap();
                    block += weight(c, k);
                    if k % 2 == 1 {
                        for j in 0..3 {
                            thinned[j][c.id].push(f64::from(draw[j]));
                        }
                        ws.push(std::mem::take(&mut block));
                    }
                    Ok(())
                })
                .unwrap();
        }
        for (j, p) in got.iter().enumerate() {
            assert_eq!(p.mean, mom.mean(j), "{}", p.name);
            assert_eq!(p.sd, mom.variance(j).sqrt(), "{}", p.name);
            let (diag, q) =
                crate::diagnostics::diagnostics_and_quantiles(&thinned[j], &ws, &[0.05, 0.5, 0.95]);
            assert_eq!(
                (p.ess_bulk, p.ess_tail, p.rhat),
                (diag.ess_bulk, diag.ess_tail, diag.rhat)
            );
            assert_eq!([p.q05, p.q50, p.q95], [q[0], q[1], q[2]], "{}", p.name);
        }
        // The warm-up's scan reads the same draws.
        let s = scan(&on_disk, 3, usize::MAX).unwrap().unwrap();
        let min_bulk = got.iter().map(|p| p.ess_bulk).fold(f64::INFINITY, f64::min);
        assert_eq!(s.min_bulk, min_bulk);
    }
}
