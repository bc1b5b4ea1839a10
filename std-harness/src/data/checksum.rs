//! A data file's sha256, known when it was read or still being computed beside the run.
//!
//! A memory-mapped `.npy` design is read by the run itself, a page at a time; its hash
//! (which summary.json records) needs every byte, and waiting for it before the first
//! step would cost as much as the rest of the reading. Its hash is computed on a thread
//! of its own instead, over the same map, while the run goes on.

use std::sync::Arc;
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

/// A file's sha256 (lowercase hex), or the thread computing it.
#[derive(Debug)]
pub enum Checksum {
    /// Computed while the file was read.
    Known(String),
    /// Being computed on a thread of its own ([`Checksum::wait`] joins it).
    Pending(JoinHandle<String>),
}

impl Checksum {
    /// Starts hashing `bytes[from..]` on a thread of its own, after what `hasher` has
    /// taken (a header read before the map).
    pub(crate) fn spawn(hasher: Sha256, bytes: Arc<memmap2::Mmap>, from: usize) -> Self {
        let hash = move || {
            let mut hasher = hasher;
            hasher.update(&bytes[from.min(bytes.len())..]);
            super::registry::hex(&hasher.finalize())
        };
        match std::thread::Builder::new()
            .name("sgld-sha256".into())
            .spawn(hash.clone())
        {
            Ok(handle) => Checksum::Pending(handle),
            // No thread to be had: the hash now, as the reading would have made it.
            Err(_) => Checksum::Known(hash()),
        }
    }

    /// The sha256, waiting for its thread if it is still running.
    pub fn wait(self) -> String {
        match self {
            Checksum::Known(s) => s,
            Checksum::Pending(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        }
    }
}

impl From<String> for Checksum {
    fn from(s: String) -> Self {
        Checksum::Known(s)
    }
}
