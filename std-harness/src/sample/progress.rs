//! One progress bar per chain under a line that says what the run is doing.

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// One progress bar per chain, under a line that says what the run is doing (the
/// warm-up's stages, then sampling) with the time it has taken; hidden unless asked for.
pub struct Bars {
    _multi: MultiProgress,
    stage: ProgressBar,
    pub(crate) bars: Vec<ProgressBar>,
}

/// A rate as a person reads it: `1.16M steps/s`, `845k steps/s`, `92 steps/s`.
fn steps_per_second(rate: f64) -> String {
    match rate {
        r if r >= 1e6 => format!("{:.2}M steps/s", r / 1e6),
        r if r >= 1e4 => format!("{:.0}k steps/s", r / 1e3),
        r if r >= 1e3 => format!("{:.1}k steps/s", r / 1e3),
        r => format!("{r:.0} steps/s"),
    }
}

impl Bars {
    pub(crate) fn new(chains: usize, show: bool) -> Self {
        let multi = MultiProgress::new();
        if !show {
            multi.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let style = ProgressStyle::with_template(
            "chain {prefix} [{bar:40}] {pos}/{len} steps ({rate}, {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&steps_per_second(state.per_sec()));
            },
        )
        .progress_chars("=> ");
        let stage = multi.add(
            ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        );
        if show {
            stage.enable_steady_tick(std::time::Duration::from_millis(200));
        }
        let bars = (0..chains)
            .map(|c| {
                multi.add(
                    ProgressBar::new(0)
                        .with_style(style.clone())
                        .with_prefix(c.to_string()),
                )
            })
            .collect();
        Self {
            _multi: multi,
            stage,
            bars,
        }
    }

    /// Says what the run does now (`warm-up: finding the mode`, …).
    pub(crate) fn stage(&self, what: &str) {
        self.stage.set_message(what.to_string());
    }

    /// Clears every line.
    pub(crate) fn finish(&self) {
        self.stage.finish_and_clear();
        for b in &self.bars {
            b.finish_and_clear();
        }
    }

    /// Lengthens every bar by `steps`.
    pub(crate) fn extend(&self, steps: u64) {
        for b in &self.bars {
            b.inc_length(steps);
        }
    }
}
