//! Stopping a run on SIGINT or SIGTERM (Ctrl-C, `timeout`, a batch scheduler): the first
//! signal asks every chain to stop at its next block, after which the run writes what
//! it drew (its `summary.json` saying `"complete": false` and why) and exits non-zero; a
//! second signal exits at once, leaving only the temporary `.partial` files behind. A
//! signal within 100 ms of the first is the same one delivered twice (as `timeout`
//! delivers it), not a second.
//!
//! The library never installs a handler: a program that embeds it keeps its own
//! signals; the `sgld` command calls `install` (the `cli` feature).

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Why a chain that stopped on a signal stopped (its failure's text).
pub const WHY: &str = "interrupted by a signal (SIGINT or SIGTERM)";

/// The exit status of a run stopped at once by a second signal (128 + SIGINT).
pub const EXIT_AT_ONCE: i32 = 130;

/// A signal this soon after the first is the same request, not a second one: GNU
/// `timeout` signals the command and then its whole process group, so the command gets
/// its one signal twice within microseconds.
#[cfg(feature = "cli")]
const SAME_REQUEST: std::time::Duration = std::time::Duration::from_millis(100);

/// Installs the handler: the first signal sets the flag [`requested`] reads and says so
/// on stderr; a second (more than 100 ms later) exits at once.
#[cfg(feature = "cli")]
pub fn install() -> Result<(), String> {
    static FIRST: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    ctrlc::set_handler(|| {
        if let Some(first) = FIRST.get() {
            if first.elapsed() < SAME_REQUEST {
                return;
            }
            eprintln!("sgld: a second signal: exiting at once (only .partial files are left)");
            std::process::exit(EXIT_AT_ONCE);
        }
        let _ = FIRST.set(std::time::Instant::now());
        REQUESTED.store(true, Ordering::SeqCst);
        eprintln!(
            "sgld: stopping at the next block and writing what was drawn (a second signal exits at once)"
        );
    })
    .map_err(|e| format!("cannot install the signal handler: {e}"))
}

/// Asks a running `sample_model` to stop as a signal would (from a program's own
/// handler, a timer or a GUI): each chain stops at its next block, and the call returns
/// what was drawn with the run marked incomplete. The request stays until [`clear`].
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Withdraws a [`request`], so that the next run samples to its end.
pub fn clear() {
    REQUESTED.store(false, Ordering::SeqCst);
}

/// Whether a signal asked the run to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}
