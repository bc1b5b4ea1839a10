//! Per-chain outputs that other tools read in one call: CmdStan's CSV (`chain_1.csv`, …,
//! for `arviz.from_cmdstan`, cmdstanpy and R's `posterior`) and NumPy's `.npy`
//! (`chain_1.npy`, …, for `numpy.load`).
//!
//! A CmdStan file is a `#` comment header with the run's settings, a header row
//! (`lp__` where computed, `stepsize__`, then the parameters as CmdStan names them:
//! `beta[x1]`, `beta[x2]` become `beta.1`, `beta.2`), one row per kept draw, and the
//! elapsed time in a trailing comment. A `.npy` file holds the same draws as a
//! `(draws, parameters)` array of f32 in the order of `draws.csv`'s columns.

use std::io::Write;
use std::path::Path;

use super::chains::Chain;

/// Draws × training rows up to which `lp__` is computed: a full pass over the data per
/// draw, 20–40 ns a row, so at most about half a second on one core (a9a's 4,000 draws
/// of 32,561 rows, 1.3·10⁸, would take longer than the sampling).
pub const LP_BUDGET: f64 = 2.5e7;

/// What a chain file's comment header says about the run.
pub struct Header<'a> {
    /// The model's name (`logistic`, …).
    pub model: &'a str,
    /// The sampler's name.
    pub sampler: &'a str,
    /// Burn-in steps (CmdStan's `num_warmup`).
    pub burn_in: u64,
    /// Every `thin`-th step kept.
    pub thin: u64,
    /// The schedule as given (`auto` when adapted).
    pub step_size: &'a str,
    /// The run's seed.
    pub seed: u64,
    /// Seconds of sampling, all chains.
    pub seconds: f64,
    /// The command line.
    pub command_line: &'a str,
}

/// CmdStan's names for `names`: `base[label]` is `base.k`, `k` its 1-based position
/// among the names with that base; any other name keeps its letters, digits and `_`
/// (the rest become `_`).
pub fn names(names: &[String]) -> Vec<String> {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    names
        .iter()
        .map(|n| match n.split_once('[') {
            Some((base, rest)) if rest.ends_with(']') && !base.is_empty() => {
                let k = match seen.iter_mut().find(|(b, _)| *b == base) {
                    Some((_, k)) => {
                        *k += 1;
                        *k
                    }
                    None => {
                        seen.push((base, 1));
                        1
                    }
                };
                format!("{}.{k}", plain(base))
            }
            _ => plain(n),
        })
        .collect()
}

fn plain(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes `chain_<c+1>.csv` for every chain into `dir` (their `.npy` files are the
/// draws' own store, [`super::draws`]); `lp[c]` is chain `c`'s log density at each kept
/// draw, when computed.
pub fn write(
    dir: &Path,
    header: &Header<'_>,
    param_names: &[String],
    chains: &[Chain],
    lp: Option<&[Vec<f64>]>,
) -> Result<(), String> {
    use rayon::prelude::*;
    let stan = names(param_names);
    // One file a chain, formatted in parallel; the first error in chain order.
    chains.par_iter().enumerate().try_for_each(|(c, ch)| {
        // CmdStan numbers chains from 1.
        let id = ch.id + 1;
        write_csv(
            &super::files::partial(&dir.join(format!("chain_{id}.csv"))),
            id,
            header,
            param_names,
            &stan,
            ch,
            lp.and_then(|l| l.get(c)).map(Vec::as_slice),
        )
    })
}

fn write_csv(
    path: &Path,
    id: usize,
    h: &Header<'_>,
    param_names: &[String],
    stan: &[String],
    ch: &Chain,
    lp: Option<&[f64]>,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::new(file);
    let d = param_names.len();
    let mut head = format!(
        "# model = {}\n# method = sample (Default)\n#   sample\n#     num_samples = {}\n#     num_warmup = {}\n#     save_warmup = 0\n#     thin = {}\n# id = {id}\n# random\n#   seed = {}\n# sgld_version = {}\n# sampler = {}\n# step_size = {}\n# command = {}\n",
        h.model,
        ch.kept(),
        h.burn_in,
        h.thin,
        h.seed,
        env!("CARGO_PKG_VERSION"),
        h.sampler,
        h.step_size,
        h.command_line,
    );
    if lp.is_none() {
        head.push_str(&format!(
            "# lp__ not computed: the kept draws times the training rows exceed {LP_BUDGET:e}\n"
        ));
    }
    // Which column each CmdStan name stands for, when they differ.
    for (n, s) in param_names.iter().zip(stan) {
        if n != s {
            head.push_str(&format!("# {s} = {n}\n"));
        }
    }
    w.write_all(head.as_bytes()).map_err(io)?;
    let mut cols: Vec<&str> = Vec::with_capacity(d + 2);
    if lp.is_some() {
        cols.push("lp__");
    }
    cols.push("stepsize__");
    cols.extend(stan.iter().map(String::as_str));
    writeln!(w, "{}", cols.join(",")).map_err(io)?;
    let mut float = ryu::Buffer::new();
    let mut row = Vec::with_capacity(16 * (d + 2));
    ch.draws.rows(0..ch.kept(), |k, draw| {
        row.clear();
        if let Some(lp) = lp {
            row.extend_from_slice(float.format(lp[k]).as_bytes());
            row.push(b',');
        }
        row.extend_from_slice(float.format(ch.record.eps(k)).as_bytes());
        super::output::push_draw(&mut row, &mut float, draw);
        w.write_all(&row).map_err(io)
    })?;
    writeln!(
        w,
        "# \n#  Elapsed Time: {:.3} seconds (Sampling)",
        h.seconds
    )
    .map_err(io)?;
    w.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_cmdstan() {
        let given: Vec<String> = [
            "beta[x1]",
            "beta[x 2]",
            "bias",
            "log_sigma2",
            "w[a]",
            "beta[c]",
            "mu-1",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            names(&given),
            [
                "beta.1",
                "beta.2",
                "bias",
                "log_sigma2",
                "w.1",
                "beta.3",
                "mu_1"
            ]
        );
    }
}
