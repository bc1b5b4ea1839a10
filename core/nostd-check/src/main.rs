//! A `#![no_std]`, `#![no_main]` program with no allocator that links the sgld core and
//! runs the device's online learner (`core/embedded/learner`: d = 124, batch 10, a window
//! of 256 examples, f32 throughout) on the host. The C runtime provides `_start`;
//! nothing comes from Rust's `std` or `alloc` (CI checks the symbols). Exit status 0
//! when the posterior mean classifies the held-out stream with accuracy of at least 89%.
//! `core/embedded/run.sh` runs the same learner on a Cortex-M4F and in wasm32.

#![no_std]
#![no_main]

#[path = "libc.rs"]
mod libc;

use sgld_embedded_learner::{BATCH, Buffers, D, Device, HELD_OUT, STREAM, Stream, WINDOW};

fn run(buffers: &mut Buffers) -> Result<u32, sgld::Error> {
    let mut device = Device::new(buffers, 2011)?;
    let mut stream = Stream::training();
    for _ in 0..STREAM {
        device.learn(stream.next_example()?)?;
    }
    device.correct(&mut Stream::held_out(), HELD_OUT)
}

#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    let mut buffers = Buffers::new();
    match run(&mut buffers) {
        Ok(correct) => {
            let permille = correct * 1000 / HELD_OUT;
            libc::printf(format_args!(
                "online SGLD, d = {D}, batch {BATCH}, window {WINDOW}: {STREAM} examples, held-out accuracy 0.{permille:03}, no heap\n",
            ));
            if permille >= 890 { 0 } else { 1 }
        }
        Err(e) => {
            libc::printf(format_args!("error: {e}\n"));
            2
        }
    }
}
