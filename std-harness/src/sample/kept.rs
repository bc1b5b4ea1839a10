//! The step, step size and weight of each kept draw, in runs: a run of equal values
//! (a constant step size, a steady thinning) is held once, so a long run's bookkeeping
//! does not grow with its draws. Values that change draw by draw (a decaying step size)
//! are held one each.

/// Values by draw index: runs of equal values while they are long, one each once they
/// are not.
#[derive(Debug, Clone)]
enum Column<T> {
    /// `(first index, value)` of each run, by first index.
    Runs(Vec<(usize, T)>, usize),
    /// One value a draw.
    Plain(Vec<T>),
}

impl<T: Copy + PartialEq> Column<T> {
    /// Runs beyond this many, and more than one per `PLAIN_RATIO` values, become plain.
    const MAX_RUNS: usize = 64;
    const PLAIN_RATIO: usize = 4;

    fn len(&self) -> usize {
        match self {
            Self::Runs(_, n) => *n,
            Self::Plain(v) => v.len(),
        }
    }

    fn push(&mut self, x: T) {
        match self {
            Self::Runs(runs, n) => {
                if runs.last().is_none_or(|r| r.1 != x) {
                    runs.push((*n, x));
                }
                *n += 1;
                if runs.len() > Self::MAX_RUNS && runs.len() * Self::PLAIN_RATIO > *n {
                    let plain = (0..*n).map(|k| self.get(k)).collect();
                    *self = Self::Plain(plain);
                }
            }
            Self::Plain(v) => v.push(x),
        }
    }

    fn get(&self, k: usize) -> T {
        match self {
            Self::Runs(runs, _) => runs[runs.partition_point(|r| r.0 <= k) - 1].1,
            Self::Plain(v) => v[k],
        }
    }
}

impl<T> Default for Column<T> {
    fn default() -> Self {
        Self::Runs(Vec::new(), 0)
    }
}

/// The step (1-based), step size and `Σ ε` of each kept draw of a chain.
#[derive(Debug, Clone, Default)]
pub struct Kept {
    /// Differences between consecutive kept steps (the first: its step).
    gaps: Column<u64>,
    /// The steps at the starts of the gaps' runs, for [`Kept::step`].
    run_steps: Vec<(usize, u64)>,
    eps: Column<f32>,
    span: Column<f64>,
    last: u64,
}

impl Kept {
    /// The number of kept draws.
    pub fn len(&self) -> usize {
        self.eps.len()
    }

    /// Whether no draw is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records a draw kept at `step` (after every earlier one) with step size `eps`,
    /// standing for `span` = `Σ ε` of the steps since the previous kept draw.
    pub fn push(&mut self, step: u64, eps: f32, span: f64) {
        let k = self.len();
        let gap = step - self.last;
        if k == 0 || self.gaps.get(k - 1) != gap {
            self.run_steps.push((k, step));
        }
        self.gaps.push(gap);
        self.last = step;
        self.eps.push(eps);
        self.span.push(span);
    }

    /// The step of draw `k`.
    pub fn step(&self, k: usize) -> u64 {
        // Within a run of equal gaps the steps are arithmetic from the run's first.
        let (k0, s0) = self.run_steps[self.run_steps.partition_point(|r| r.0 <= k) - 1];
        s0 + (k - k0) as u64 * self.gaps.get(k)
    }

    /// The step size of draw `k`.
    pub fn eps(&self, k: usize) -> f32 {
        self.eps.get(k)
    }

    /// `Σ ε` over the steps draw `k` stands for: its own and the unkept ones since the
    /// previous kept draw (or since keeping began), eq. 11's weight of a thinned draw.
    pub fn span(&self, k: usize) -> f64 {
        self.span.get(k)
    }

    /// Whether every draw has the same step size.
    pub fn constant_eps(&self) -> bool {
        matches!(&self.eps, Column::Runs(r, _) if r.len() <= 1)
    }

    /// The first draw's step size.
    pub fn first_eps(&self) -> Option<f32> {
        (!self.is_empty()).then(|| self.eps(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes `(step, eps, span)` triples and checks every one reads back.
    fn round_trip(draws: &[(u64, f32, f64)]) -> Kept {
        let mut kept = Kept::default();
        for &(s, e, w) in draws {
            kept.push(s, e, w);
        }
        assert_eq!(kept.len(), draws.len());
        for (k, &(s, e, w)) in draws.iter().enumerate() {
            assert_eq!(
                (kept.step(k), kept.eps(k), kept.span(k)),
                (s, e, w),
                "draw {k}"
            );
        }
        kept
    }

    #[test]
    fn a_steady_run_is_a_few_runs() {
        // Kept every 7th step from 1,001 with a constant step size: the first span is
        // short (keeping began mid-gap), the rest equal.
        let draws: Vec<_> = (0..100_000u64)
            .map(|k| (1001 + 7 * k, 0.5f32, if k == 0 { 1.5 } else { 3.5 }))
            .collect();
        let kept = round_trip(&draws);
        assert!(kept.constant_eps());
        match (&kept.gaps, &kept.eps, &kept.span) {
            (Column::Runs(g, _), Column::Runs(e, _), Column::Runs(s, _)) => {
                assert_eq!((g.len(), e.len(), s.len()), (2, 1, 2));
            }
            _ => panic!("a steady run should stay in runs"),
        }
    }

    #[test]
    fn changing_values_are_held_one_each() {
        // A decaying step size, and steps whose gaps change (a chain that stopped
        // keeping and resumed, or steps read back from a file).
        let draws: Vec<_> = (0..1000u64)
            .map(|k| {
                let step = k * k + 3 * k + 1;
                let eps = 1.0 / (1.0 + k as f32);
                (step, eps, f64::from(eps) * 2.0)
            })
            .collect();
        let kept = round_trip(&draws);
        assert!(!kept.constant_eps());
        assert!(matches!(kept.eps, Column::Plain(_)));
        // Mixed: long runs with a few changes stay runs.
        let mixed: Vec<_> = (0..10_000u64)
            .map(|k| (k + 1, if k < 5000 { 0.1 } else { 0.05 }, 0.1))
            .collect();
        let kept = round_trip(&mixed);
        assert!(matches!(kept.eps, Column::Runs(ref r, _) if r.len() == 2));
        assert!(!kept.constant_eps());
        assert_eq!(kept.first_eps(), Some(0.1));
        assert_eq!(Kept::default().first_eps(), None);
    }
}
