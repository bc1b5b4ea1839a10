//! A `#![no_std]`, `#![no_main]` program with no allocator that links the sgld core and
//! learns a Bayesian logistic regression by SGLD from data held in a `static` buffer —
//! what a microcontroller would do, run on the host (C runtime for `_start`, nothing
//! from Rust's `std` or `alloc`).
//!
//! Exit status 0 when the posterior mean recovers the signs of the large (|β| ≥ 1) true coefficients and
//! the training accuracy exceeds 80% (the MAP estimate reaches 84.8% on these data, the true coefficients 89.5%); 1 otherwise.

#![no_std]
#![no_main]

use core::fmt::Write;

use sgld::estimate::WeightedMoments;
use sgld::gradient::{MiniBatch, sample_batch};
use sgld::models::{Laplace, LogisticDense};
use sgld::schedule::{Polynomial, Schedule};
use sgld::{Sgld, noise::default_rng};

const N: usize = 256;
const D: usize = 8;
const BATCH: usize = 10;
const STEPS: u64 = 20_000;
const BETA: [f32; D] = [2.0, -1.5, 1.0, 0.0, -0.5, 3.0, 0.0, 0.5];

struct Data {
    x: [f32; N * D],
    y: [f32; N],
}

/// A deterministic data set built at compile time: features from a 32-bit LCG in
/// [−1, 1] (the last one a constant bias), labels from the sign of `βᵀx` with a few
/// flipped by a second stream.
const fn make_data() -> Data {
    let mut x = [0.0f32; N * D];
    let mut y = [0.0f32; N];
    let mut s: u32 = 0x2011_0628;
    let mut i = 0;
    while i < N {
        let mut z = 0.0f32;
        let mut j = 0;
        while j < D {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let v = if j == D - 1 {
                1.0
            } else {
                (s >> 8) as f32 / 8_388_608.0 - 1.0
            };
            x[i * D + j] = v;
            z += BETA[j] * v;
            j += 1;
        }
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let flip = (s >> 24) < 20; // about 8% label noise
        y[i] = if (z > 0.0) != flip { 1.0 } else { -1.0 };
        i += 1;
    }
    Data { x, y }
}

static DATA: Data = make_data();

#[link(name = "c")]
unsafe extern "C" {
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
    fn _exit(code: i32) -> !;
}

fn print(s: &str) {
    // SAFETY: `s` is a valid, initialised byte slice for the duration of the call;
    // `write` reads at most `s.len()` bytes from it and keeps no reference.
    unsafe {
        write(1, s.as_ptr(), s.len());
    }
}

/// The precompiled `core` of a hosted target is built with unwinding tables that name
/// this symbol; with `panic = "abort"` nothing ever unwinds, so it is never called.
#[unsafe(no_mangle)]
extern "C" fn rust_eh_personality() {}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    print("panic\n");
    // SAFETY: `_exit` terminates the process; it takes no pointers.
    unsafe { _exit(101) }
}

fn run() -> Result<bool, sgld::Error> {
    let model = LogisticDense::new(&DATA.x, &DATA.y, D, Laplace::new(1.0)?)?;
    let est = MiniBatch::new(&model);
    let schedule = Polynomial::from_range(1e-2, 1e-4, 0.55, STEPS)?;
    let mut theta = [0.0f32; D];
    let mut scratch = [0.0f32; Sgld::scratch_len(D)];
    let mut state = Sgld::init(&mut theta, &mut scratch)?;
    let mut store = [0.0f64; WeightedMoments::storage_len(D)];
    let mut moments = WeightedMoments::new(&mut store, D)?;
    let mut rng = default_rng(7);
    let mut batch = [0usize; BATCH];
    let sampler = Sgld::new();
    for t in 0..STEPS {
        sample_batch(&mut rng, N, &mut batch)?;
        let eps = schedule.step_size(t);
        let info = sampler.step(&mut state, &est, &batch, eps, &mut rng)?;
        if t >= STEPS / 2 && !info.non_finite {
            moments.push(eps as f64, state.theta())?;
        }
    }
    let mut mean = [0.0f64; D];
    moments.means_into(&mut mean)?;
    let mut mean32 = [0.0f32; D];
    for (m, v) in mean32.iter_mut().zip(mean) {
        *m = v as f32;
    }
    let correct = (0..N)
        .filter(|&i| (model.margin(&mean32, i) > 0.0) == (DATA.y[i] > 0.0))
        .count();
    let accuracy = correct as f64 / N as f64;
    let signs_ok = BETA
        .iter()
        .zip(&mean)
        .all(|(&b, &m)| b.abs() < 1.0 || (b > 0.0) == (m > 0.0));

    let mut line: heapless::String<128> = heapless::String::new();
    for (j, m) in mean.iter().enumerate() {
        line.clear();
        let _ = writeln!(line, "beta[{j}] = {m:+.3} (true {:+.1})", BETA[j]);
        print(&line);
    }
    line.clear();
    let _ = writeln!(
        line,
        "training accuracy {:.1}% after {STEPS} SGLD steps, no heap",
        100.0 * accuracy
    );
    print(&line);
    Ok(signs_ok && accuracy > 0.80)
}

#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    match run() {
        Ok(true) => 0,
        Ok(false) => {
            print("posterior check failed\n");
            1
        }
        Err(e) => {
            let mut line: heapless::String<160> = heapless::String::new();
            let _ = writeln!(line, "error: {e}");
            print(&line);
            2
        }
    }
}
