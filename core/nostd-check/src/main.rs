//! A `#![no_std]`, `#![no_main]` program with no allocator that links the sgld core and
//! learns a Bayesian logistic regression online, as a device would: d = 124 parameters
//! (123 binary features and a bias, the shape of a9a), one SGLD step per arriving example
//! on a mini-batch of 10 drawn from a window of the 256 most recent examples, and the
//! step-size-weighted posterior mean updated in place. Run on the host: the C runtime
//! provides `_start`; nothing comes from Rust's `std` or `alloc`.
//!
//! The stream is synthetic and a9a-like: 13 active features per example out of 123
//! (drawn by a 64-bit LCG) plus the bias, labels from a fixed sparse coefficient vector
//! with 8% of them flipped. Exit status 0 when the posterior mean classifies a held-out
//! stream with accuracy above 85% (the true coefficients reach about 92%). The examples
//! keep their indices as `u8` (124 features fit), which makes each one 32 bytes instead
//! of 80 and the window 8 KB instead of 20.

#![no_std]
#![no_main]

#[path = "libc.rs"]
mod libc;

use sgld::Sgld;
use sgld::estimate::WeightedMoments;
use sgld::models::Laplace;
use sgld::noise::default_rng;
use sgld::online::{Example, OnlineSgld, SparseBinaryExample};
use sgld::schedule::Polynomial;

const D: usize = 124;
const FEATURES: u32 = 123;
const ACTIVE: usize = 13;
// Every index, the bias's included, fits a `u8`.
const _: () = assert!(FEATURES < 256);
const WINDOW: usize = 256;
const BATCH: usize = 10;
const STREAM: u64 = 30_000;

/// A deterministic a9a-like stream.
struct Stream {
    s: u64,
}

impl Stream {
    fn next_u32(&mut self) -> u32 {
        self.s = self
            .s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.s >> 33) as u32
    }

    /// The true coefficient of feature `j`: a fixed sparse pattern in [−1.5, 1.5].
    fn beta(j: u32) -> f32 {
        if j.is_multiple_of(3) {
            ((j * 37) % 31) as f32 / 10.0 - 1.5
        } else {
            0.0
        }
    }

    fn next_example(&mut self) -> SparseBinaryExample<16, u8> {
        let mut idx = [0u32; ACTIVE + 1];
        let mut k = 0;
        while k < ACTIVE {
            let j = self.next_u32() % FEATURES;
            if !idx[..k].contains(&j) {
                idx[k] = j;
                k += 1;
            }
        }
        idx[..ACTIVE].sort_unstable();
        idx[ACTIVE] = FEATURES; // the bias
        let z: f32 = idx[..ACTIVE].iter().map(|&j| Self::beta(j)).sum::<f32>() - 0.2;
        let flip = self.next_u32() % 100 < 8;
        let y = if (z > 0.0) != flip { 1.0 } else { -1.0 };
        // Lossless: every index is at most FEATURES < 256.
        let narrow: [u8; ACTIVE + 1] = core::array::from_fn(|k| idx[k] as u8);
        // Cannot fail: ACTIVE + 1 ≤ 16 indices.
        SparseBinaryExample::narrow(&narrow, y).unwrap_or_else(|_| libc::exit(3))
    }
}

fn run() -> Result<f64, sgld::Error> {
    let mut theta = [0.0f32; D];
    let mut scratch = [0.0f32; Sgld::scratch_len(D)];
    let mut store = [0.0f64; WeightedMoments::storage_len(D)];
    let mut batch = [0usize; BATCH];
    let schedule = Polynomial::from_range(1e-3, 1e-5, 0.55, STREAM)?;
    // The learner (its window is 8 KB) is used where `new` wrote it, inside the
    // `Result`: moving it out would copy it to another stack slot.
    let mut made = OnlineSgld::<SparseBinaryExample<16, u8>, _, _, WINDOW>::new(
        &mut theta,
        &mut scratch,
        &mut store,
        &mut batch,
        Laplace::new(1.0)?,
        schedule,
        Sgld::new(),
        STREAM / 2,
    );
    let learner = made.as_mut().map_err(|e| *e)?;
    let mut rng = default_rng(2011);
    let mut stream = Stream { s: 7 };
    for _ in 0..STREAM {
        learner.push(stream.next_example(), &mut rng)?;
    }
    let mut mean = [0.0f32; D];
    for (j, m) in mean.iter_mut().enumerate() {
        *m = learner.moments().mean(j) as f32;
    }
    // Held-out accuracy of the posterior mean.
    let mut held_out = Stream { s: 99 };
    let n_test = 5000;
    let correct = (0..n_test)
        .filter(|_| {
            let ex = held_out.next_example();
            (ex.margin(&mean) > 0.0) == (ex.label() > 0.0)
        })
        .count();
    Ok(correct as f64 / n_test as f64)
}

#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    match run() {
        Ok(acc) => {
            libc::printf(format_args!(
                "online SGLD, d = {D}, batch {BATCH}, window {WINDOW}: {STREAM} examples, held-out accuracy {:.1}%, no heap\n",
                100.0 * acc
            ));
            if acc > 0.85 { 0 } else { 1 }
        }
        Err(e) => {
            libc::printf(format_args!("error: {e}\n"));
            2
        }
    }
}
