//! The online learner on a Cortex-M4F (or, built for `thumbv7m-none-eabi`, a Cortex-M3;
//! for `riscv32imac-unknown-none-elf`, an RV32IMAC core):
//! 30,000 examples of an a9a-shaped stream, one SGLD
//! step each, then the posterior mean's accuracy on 5,000 held-out examples. Its buffers
//! (the 6 KiB window among them) are a `static`; the stack holds only call frames.
//!
//! Prints the held-out accuracy, the instructions per example (SysTick under QEMU's
//! `-icount shift=0`, the stream's own cost subtracted) and the peak stack.

#![no_std]
#![no_main]

use sgld_embedded_learner::{ARITHMETIC, Buffers, Device, HELD_OUT, STREAM, Stream};
use sgld_firmware::{CORE, Counter, entry, exit, hprintln, paint_stack, peak_stack};
use static_cell::ConstStaticCell;

/// The learner's memory, in `.bss`.
static BUFFERS: ConstStaticCell<Buffers> = ConstStaticCell::new(Buffers::new());

#[entry]
fn main() -> ! {
    paint_stack();
    let Some(counter) = Counter::start() else {
        exit(2)
    };
    if !sqrt_matches_libm() {
        hprintln!("error: the hardware square root disagrees with libm");
        exit(4)
    }
    let Ok(mut device) = Device::new(BUFFERS.take(), 2011) else {
        hprintln!("error: the learner's configuration was refused");
        exit(2)
    };

    // The stream and the learner, then the stream alone.
    let mut stream = Stream::training();
    let t0 = counter.instructions();
    for _ in 0..STREAM {
        let step = stream.next_example().and_then(|ex| device.learn(ex));
        if let Err(e) = step {
            hprintln!("error: {}", e.summary());
            exit(3)
        }
    }
    let t1 = counter.instructions();
    let mut stream = Stream::training();
    for _ in 0..STREAM {
        core::hint::black_box(stream.next_example().ok());
    }
    let t2 = counter.instructions();
    let per_example = ((t1 - t0).saturating_sub(t2 - t1)) / STREAM;

    let Ok(correct) = device.correct(&mut Stream::held_out(), HELD_OUT) else {
        exit(3)
    };
    let permille = correct * 1000 / HELD_OUT;
    hprintln!(
        "online SGLD on {}: d = 124, batch 10, window 256, {} examples, {}",
        CORE,
        STREAM,
        ARITHMETIC
    );
    hprintln!("accuracy: {}.{:03}", permille / 1000, permille % 1000);
    hprintln!("instructions_per_example: {}", per_example);
    hprintln!("stack_bytes: {}", peak_stack());
    exit(if permille >= 890 { 0 } else { 1 })
}

/// The core's square root (`vsqrt.f32` by inline assembly where there is an FPU) against libm's correctly rounded software
/// `sqrtf`, bit for bit, over a spread of arguments: zero, subnormals, every binade.
fn sqrt_matches_libm() -> bool {
    let mut x = f32::from_bits(1);
    while x < f32::MAX / 3.0 {
        for v in [x, x * 1.3, x * 2.7] {
            if sgld::math::sqrt(v).to_bits() != libm::sqrtf(v).to_bits() {
                return false;
            }
        }
        x *= 3.0;
    }
    sgld::math::sqrt(0.0) == 0.0 && sgld::math::sqrt(-1.0).is_nan()
}
