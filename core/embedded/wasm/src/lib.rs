//! The online learner as a WebAssembly module (`wasm32-unknown-unknown`, no imports):
//! a host — a browser, Node.js, wasmtime — calls `init` once, then `push` for each
//! arriving example, and reads the posterior mean with `mean`.
//!
//! An example's feature indices (at most 16, each below 124) go into the 16-byte buffer
//! at `indices()` before `push(n, label)`; `stream_next` writes the next example of the
//! built-in a9a-shaped stream there instead. Every call returns 0 (or a count) on
//! success and a negative code on error: −1 not initialised, −2 initialised twice, −3 a
//! bad example (refused, nothing changed), −4 an invalid configuration.

#![no_std]

use core::cell::UnsafeCell;

use sgld::online::Example;
use sgld_embedded_learner::{Buffers, D, Device, Ex, Stream};

/// The module's state, touched only by the exported functions.
struct Global<T>(UnsafeCell<T>);

// SAFETY: this module is built for wasm32 without the `atomics` feature (checked below),
// so one thread runs it, and no exported function calls another: the `&mut` that `with`
// hands out is the only reference to the state while it lives.
unsafe impl<T> Sync for Global<T> {}
#[cfg(target_feature = "atomics")]
compile_error!("this module's state assumes a single thread: build without `atomics`");

struct State {
    buffers: Buffers,
    device: Option<Device<'static>>,
    stream: Stream,
    indices: [u8; 16],
    label: f32,
}

static STATE: Global<State> = Global(UnsafeCell::new(State {
    buffers: Buffers::new(),
    device: None,
    stream: Stream::training(),
    indices: [0; 16],
    label: 0.0,
}));

/// The state for the duration of one exported call.
fn with<R>(f: impl FnOnce(&'static mut State) -> R) -> R {
    // SAFETY: see `Global`'s `Sync`: one thread, no re-entry, so this is the only live
    // reference. It is `'static` because the device keeps borrowing the buffers between
    // calls; `init` creates that borrow once and no other code touches `buffers`.
    f(unsafe { &mut *STATE.0.get() })
}

/// Starts the learner with generator seed `seed`: 0, or −2 when already started.
#[unsafe(no_mangle)]
pub extern "C" fn init(seed: u64) -> i32 {
    with(|s| {
        if s.device.is_some() {
            return -2;
        }
        match Device::new(&mut s.buffers, seed) {
            Ok(d) => {
                s.device = Some(d);
                0
            }
            Err(_) => -4,
        }
    })
}

/// The address of the 16-byte index buffer that `push` reads.
#[unsafe(no_mangle)]
pub extern "C" fn indices() -> *mut u8 {
    with(|s| s.indices.as_mut_ptr())
}

/// One arriving example — the first `n` indices of the buffer and `label` (±1) — and one
/// SGLD step: 0, or a negative code.
#[unsafe(no_mangle)]
pub extern "C" fn push(n: u32, label: f32) -> i32 {
    with(|s| {
        let Some(device) = s.device.as_mut() else {
            return -1;
        };
        let Some(idx) = s.indices.get(..n as usize) else {
            return -3;
        };
        match Ex::narrow(idx, label).and_then(|ex| device.learn(ex)) {
            Ok(_) => 0,
            Err(_) => -3,
        }
    })
}

/// Writes the next example of the built-in training stream into the buffer: its index
/// count (its label from `label`).
#[unsafe(no_mangle)]
pub extern "C" fn stream_next() -> i32 {
    with(|s| match s.stream.next_example() {
        Ok(ex) => {
            let idx = ex.indices();
            s.indices[..idx.len()].copy_from_slice(idx);
            s.label = ex.label();
            idx.len() as i32
        }
        Err(_) => -3,
    })
}

/// The label of the example `stream_next` wrote.
#[unsafe(no_mangle)]
pub extern "C" fn label() -> f32 {
    with(|s| s.label)
}

/// The posterior mean of parameter `j < 124` (NaN before any estimate).
#[unsafe(no_mangle)]
pub extern "C" fn mean(j: u32) -> f32 {
    with(|s| match &s.device {
        Some(d) if (j as usize) < D => d.mean(j as usize),
        _ => f32::NAN,
    })
}

/// Correct predictions of the posterior mean on the first `n` held-out examples.
#[unsafe(no_mangle)]
pub extern "C" fn held_out_correct(n: u32) -> i32 {
    with(|s| match &s.device {
        Some(d) => d
            .correct(&mut Stream::held_out(), n)
            .map_or(-3, |c| c as i32),
        None => -1,
    })
}

/// Traps: the host sees the call fail. (The core never panics; this is the net under
/// the rest.)
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    #[cfg(target_arch = "wasm32")]
    core::arch::wasm32::unreachable();
    // Only a host's type check (clippy) sees this.
    #[cfg(not(target_arch = "wasm32"))]
    #[allow(clippy::empty_loop)]
    loop {}
}
