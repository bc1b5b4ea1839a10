//! What the firmware images share, for each kind of core: an instruction counter, the
//! peak of a painted stack, semihosting output, the entry point's attribute and the panic
//! handler. `learner` runs the online learner; `baseline` runs the same stream and
//! measurements without sgld, so that the difference of their sizes is what sgld adds.
//!
//! The same source builds for a Cortex-M4F (`thumbv7em-none-eabihf`, QEMU's
//! mps2-an386), a Cortex-M3 (`thumbv7m-none-eabi`, mps2-an385) and an RV32IMAC core
//! (`riscv32imac-unknown-none-elf`, QEMU's virt).

#![no_std]

#[cfg(not(target_arch = "riscv32"))]
mod arm;
#[cfg(not(target_arch = "riscv32"))]
use arm as arch;

#[cfg(target_arch = "riscv32")]
mod riscv;
#[cfg(target_arch = "riscv32")]
use riscv as arch;

pub use arch::{CORE, Counter, entry, hprintln, paint_stack, peak_stack};

/// Ends the program under QEMU with `code` (0 success).
pub fn exit(code: i32) -> ! {
    arch::semihosting_exit(code == 0);
    #[allow(clippy::empty_loop)]
    loop {}
}

/// The core never panics (its fuzz targets check it); should anything else, say so and
/// stop. Printing the `PanicInfo` would link about 2 KiB of formatting code.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    hprintln!("panic");
    exit(101)
}

/// The pattern painted on the unused stack (by cortex-m-rt's `paint-stack` on Cortex-M,
/// by `paint_stack` on RISC-V).
const PAINT: u32 = 0xCCCC_CCCC;

/// The bytes of the stack region `[bottom, top)` used since it was painted: from the
/// first word above `bottom` that is no longer [`PAINT`] to `top`.
///
/// # Safety
/// `[bottom, top)` is the stack region, word-aligned and readable.
unsafe fn painted_depth(bottom: usize, top: usize) -> usize {
    let mut addr = bottom;
    while addr < top {
        // SAFETY: `addr` is word-aligned and within the stack region (the caller's
        // contract), below the live frames or inside them; reading it has no side
        // effect, and volatile keeps the read from being elided.
        let word = unsafe { core::ptr::read_volatile(addr as *const u32) };
        if word != PAINT {
            break;
        }
        addr += 4;
    }
    top - addr
}
