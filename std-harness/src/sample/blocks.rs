//! Sampling after warm-up, in blocks until every parameter reaches the target ESS with
//! R̂ ≤ 1.01, for the adapted runs (the adaptive and exact paths); and when a
//! warm-up may end.

use super::chains::Chain;
use super::diagnose::{self, Scan};
use super::options::SampleOptions;
use super::progress::Bars;

/// Warm-up ends when the split R̂ of every parameter over the warm-up's second half is at
/// most this: chains from dispersed starts then agree within a few Monte Carlo errors,
/// which a transient they share cannot fake. The kept draws must then reach 1.01.
pub const WARMUP_RHAT: f64 = 1.05;

/// Advances every chain by a number of steps.
pub(crate) type Advance<'a> = dyn FnMut(&mut [Chain], u64) -> Result<(), String> + 'a;

/// The lengths [`sample_to_target`] runs in, in steps a chain.
pub(crate) struct Blocks {
    /// The first block.
    first: u64,
    /// The most steps in all: what `--max-steps` leaves after the warm-up.
    budget: u64,
}

impl Blocks {
    /// A first block of `first` steps but at least `min`, after `warmup` steps.
    pub(crate) fn new(cfg: &SampleOptions, warmup: u64, first: u64, min: u64) -> Self {
        Self {
            first: first.max(min),
            budget: cfg.max_steps.saturating_sub(warmup).max(1),
        }
    }
}

/// Samples until every parameter has the target ESS (bulk and tail) with R̂ ≤ 1.01, or
/// `--steps` when given, or the budget: `run(chains, len)` advances every chain by `len`
/// steps, the first time by the first block's, then each block by what the ESS and R̂ so
/// far ask for (a quarter of the run so far at least, at most doubling it); the progress
/// line says after each block how far the run is from the target. Returns the steps run
/// and notes.
pub(crate) fn sample_to_target(
    cfg: &SampleOptions,
    bars: &Bars,
    chains: &mut [Chain],
    d: usize,
    blocks: Blocks,
    run: &mut Advance<'_>,
) -> Result<(u64, Vec<String>), String> {
    let Blocks { first, budget } = blocks;
    let failed = |chains: &[Chain]| chains.iter().any(|c| c.failure.is_some());
    let mut notes = Vec::new();
    if let Some(s) = cfg.steps {
        run(chains, s)?;
        return Ok((s, notes));
    }
    let target = cfg.target_ess;
    let mut sampled = 0u64;
    let mut next = first.max(1);
    loop {
        let len = next.min(budget - sampled).max(1);
        run(chains, len)?;
        sampled += len;
        if failed(chains) || sampled >= budget {
            break;
        }
        let Some(s) = diagnose::scan(chains, d, usize::MAX)? else {
            next = sampled;
            continue;
        };
        if s.meets(target) {
            break;
        }
        let ess = s.min_bulk.min(s.min_tail);
        let grow = if ess.is_finite() && ess > 0.0 && ess < target {
            1.2 * target / ess - 1.0
        } else if s.max_rhat.is_finite() && s.max_rhat > 1.0 {
            // The ESS is there and R̂ is not: R̂ − 1 falls as one over the draws.
            1.2 * (s.max_rhat - 1.0) / (diagnose::RHAT_MAX - 1.0) - 1.0
        } else {
            0.5
        };
        next = ((sampled as f64 * grow.clamp(0.25, 1.0)).ceil() as u64).max(1);
        bars.stage(&distance(target, &s, sampled, next.min(budget - sampled)));
    }
    if sampled >= budget {
        notes.push(format!(
            "sampling stopped at --max-steps ({} steps per chain)",
            cfg.max_steps
        ));
    }
    Ok((sampled, notes))
}

/// The progress line between blocks: where the run stands against the target, and the
/// steps of the next block.
fn distance(target: f64, s: &Scan, sampled: u64, next: u64) -> String {
    format!(
        "sampling to ESS {target:.0} and R̂ ≤ {}: smallest ESS {:.0}, largest R̂ {:.3} after {sampled} steps a chain; {next} more",
        diagnose::RHAT_MAX,
        s.min_bulk.min(s.min_tail),
        s.max_rhat,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_says_how_far_the_target_is() {
        let s = Scan {
            min_bulk: 212.4,
            min_tail: 340.0,
            max_rhat: 1.0238,
        };
        assert_eq!(
            distance(400.0, &s, 3795, 2400),
            "sampling to ESS 400 and R̂ ≤ 1.01: smallest ESS 212, largest R̂ 1.024 after 3795 steps a chain; 2400 more"
        );
    }
}
