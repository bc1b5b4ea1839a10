//! One progress bar per chain under a line that says what the run is doing; when stderr
//! is not a terminal (a log file, a batch job), plain lines instead.

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// One progress bar per chain, under a line that says what the run is doing (the
/// warm-up's stages, then sampling) with the time it has taken; hidden unless asked for.
/// When stderr is not a terminal the bars stay hidden and plain lines are written.
pub struct Bars {
    _multi: MultiProgress,
    stage: ProgressBar,
    pub(crate) bars: Vec<ProgressBar>,
    log: Option<Log>,
}

/// Plain progress lines on stderr for a run that is not watched on a terminal. A run
/// over within [`Log::QUIET`] prints none; a longer one prints where it stands then, each
/// new stage as it begins (at most one a second) and, between, a line every
/// [`Log::every`] with the chains' steps and their rate since the last line.
struct Log {
    stop: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl Log {
    /// Runs shorter than this print no line.
    const QUIET: Duration = Duration::from_millis(500);

    /// The time between two lines of one stage: 10 s in the first minute, then a minute.
    fn every(elapsed: Duration) -> Duration {
        if elapsed < Duration::from_secs(60) {
            Duration::from_secs(10)
        } else {
            Duration::from_secs(60)
        }
    }

    /// Starts the lines on a thread of their own: `quiet` before the first, a look at
    /// the stage every `poll`.
    fn start(
        stage: ProgressBar,
        bars: Vec<ProgressBar>,
        mut out: impl Write + Send + 'static,
        quiet: Duration,
        poll: Duration,
    ) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        // Without a thread (the system refused one) the run goes on without lines.
        let spawned = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || Self::write(&stage, &bars, &mut out, (quiet, poll), &stopped));
        Self {
            stop,
            thread: spawned.ok(),
        }
    }

    /// The lines, until a message (or a hang-up) on `stopped`.
    fn write(
        stage: &ProgressBar,
        bars: &[ProgressBar],
        out: &mut impl Write,
        (quiet, poll): (Duration, Duration),
        stopped: &Receiver<()>,
    ) {
        let start = Instant::now();
        let wait = |d: Duration| matches!(stopped.recv_timeout(d), Err(RecvTimeoutError::Timeout));
        if !wait(quiet) {
            return;
        }
        let mut said = String::new();
        let mut last = (start, 0u64);
        loop {
            let now = Instant::now();
            let what = stage.message();
            if what != said || now - last.0 >= Self::every(now - start) {
                let at: Vec<u64> = bars.iter().map(ProgressBar::position).collect();
                let of = bars
                    .iter()
                    .filter_map(ProgressBar::length)
                    .max()
                    .unwrap_or(0);
                let total: u64 = at.iter().sum();
                let rate = total.saturating_sub(last.1) as f64
                    / at.len().max(1) as f64
                    / (now - last.0).as_secs_f64().max(1e-9);
                let chains = Chains { at: &at, of, rate };
                // A closed stderr loses the lines, not the run.
                let _ = writeln!(out, "{}", line(now - start, &what, &chains));
                said = what;
                last = (now, total);
            }
            if !wait(poll) {
                return;
            }
        }
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Where the chains stand: each one's steps, of `of`, at `rate` steps a second a chain.
struct Chains<'a> {
    at: &'a [u64],
    of: u64,
    rate: f64,
}

/// One progress line: `[  12.0 s] warm-up: …; chains at 1200/5000 steps, 95 steps/s`,
/// with the slowest and fastest chain's steps where they differ (`1100–1300/5000`).
fn line(elapsed: Duration, what: &str, chains: &Chains<'_>) -> String {
    let mut s = format!("[{:>6.1} s] {what}", elapsed.as_secs_f64());
    let (lo, hi) = (chains.at.iter().min(), chains.at.iter().max());
    if let (Some(&lo), Some(&hi), true) = (lo, hi, chains.of > 0) {
        let steps = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        };
        s += &format!(
            "; chains at {steps}/{} steps, {}",
            chains.of,
            steps_per_second(chains.rate)
        );
    }
    s
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
        let terminal = show && std::io::stderr().is_terminal();
        let multi = MultiProgress::new();
        if !terminal {
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
        if terminal {
            stage.enable_steady_tick(Duration::from_millis(200));
        }
        let bars = (0..chains)
            .map(|c| {
                multi.add(
                    ProgressBar::new(0)
                        .with_style(style.clone())
                        .with_prefix(c.to_string()),
                )
            })
            .collect::<Vec<_>>();
        let log = (show && !terminal).then(|| {
            let poll = Duration::from_secs(1);
            Log::start(
                stage.clone(),
                bars.clone(),
                std::io::stderr(),
                Log::QUIET,
                poll,
            )
        });
        Self {
            _multi: multi,
            stage,
            bars,
            log,
        }
    }

    /// Says what the run does now (`warm-up: finding the mode`, …).
    pub(crate) fn stage(&self, what: &str) {
        self.stage.set_message(what.to_string());
    }

    /// Clears every line (and ends the plain lines).
    pub(crate) fn finish(&mut self) {
        self.log = None;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A `Write` whose bytes the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn hidden(n: usize) -> (ProgressBar, Vec<ProgressBar>) {
        let bars = (0..n).map(|_| ProgressBar::hidden()).collect();
        (ProgressBar::hidden(), bars)
    }

    #[test]
    fn a_line_says_the_time_the_stage_and_the_chains() {
        let t = Duration::from_millis(12_340);
        let cases: [(&[u64], u64, &str); 3] = [
            (&[0, 0], 0, "[  12.3 s] stage"),
            (
                &[120, 120],
                400,
                "[  12.3 s] stage; chains at 120/400 steps, 95 steps/s",
            ),
            (
                &[130, 120, 125],
                400,
                "[  12.3 s] stage; chains at 120–130/400 steps, 95 steps/s",
            ),
        ];
        for (at, of, want) in cases {
            assert_eq!(line(t, "stage", &Chains { at, of, rate: 95.0 }), want);
        }
    }

    #[test]
    fn each_stage_is_a_line_once_and_a_short_run_prints_none() {
        let out = Shared::default();
        let (stage, bars) = hidden(2);
        stage.set_message("warm-up: the mode");
        let poll = Duration::from_millis(10);
        let log = Log::start(
            stage.clone(),
            bars.clone(),
            out.clone(),
            Duration::ZERO,
            poll,
        );
        std::thread::sleep(Duration::from_millis(200));
        for (b, at) in bars.iter().zip([30, 20]) {
            b.set_length(100);
            b.set_position(at);
        }
        stage.set_message("sampling");
        std::thread::sleep(Duration::from_millis(200));
        drop(log);
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].ends_with("] warm-up: the mode"), "{text}");
        assert!(
            lines[1].contains("] sampling; chains at 20–30/100 steps, "),
            "{text}"
        );

        // A run over before the first line prints nothing, and stops the lines at once.
        let quiet = Shared::default();
        let (stage, bars) = hidden(1);
        stage.set_message("warm-up");
        let started = Instant::now();
        drop(Log::start(
            stage,
            bars,
            quiet.clone(),
            Duration::from_secs(60),
            poll,
        ));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(quiet.text(), "");
    }
}
