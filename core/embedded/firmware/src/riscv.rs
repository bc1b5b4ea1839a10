//! RISC-V (RV32IMAC under QEMU's virt, machine mode): the instruction counter
//! `minstret`, a stack painted when `main` starts, semihosting and the panic handler.

pub use riscv_rt::entry;
pub use riscv_semihosting::hprintln;

/// The core, for the report's first line.
pub const CORE: &str = "an RV32IMAC core (no FPU)";

/// Counts retired instructions (`minstret`; exact under QEMU's `-icount shift=0`).
pub struct Counter {
    start: u64,
}

impl Counter {
    /// Starts counting.
    pub fn start() -> Option<Self> {
        Some(Self {
            start: riscv::register::minstret::read64(),
        })
    }

    /// Instructions since [`start`](Self::start).
    pub fn instructions(&self) -> u64 {
        riscv::register::minstret::read64() - self.start
    }
}

unsafe extern "C" {
    /// The lowest address of the stack region (riscv-rt's linker script).
    static __estack: u32;
    /// One past its highest address (the initial stack pointer).
    static __sstack: u32;
}

/// Paints the unused stack, from its bottom up to a little below this call's frame,
/// with a pattern that [`peak_stack`] later looks for.
#[inline(never)]
pub fn paint_stack() {
    let here = core::hint::black_box(0u32);
    // 64 bytes below this frame's local: nothing live lies there.
    let limit = ((&raw const here) as usize).saturating_sub(64) & !3;
    let mut addr = &raw const __estack as usize;
    while addr < limit {
        // SAFETY: `addr` is word-aligned, inside the stack region the linker script
        // reserved and below every live frame (the deepest is this one, above `limit`);
        // no interrupt is enabled, so nothing else uses that memory meanwhile.
        unsafe { core::ptr::write_volatile(addr as *mut u32, crate::PAINT) };
        addr += 4;
    }
}

/// The deepest the stack has been since [`paint_stack`], in bytes: the first word from
/// the bottom that is no longer the pattern marks the peak.
pub fn peak_stack() -> usize {
    // SAFETY: the linker script's stack region: word-aligned, readable RAM.
    unsafe { crate::painted_depth(&raw const __estack as usize, &raw const __sstack as usize) }
}

/// Tells QEMU to exit, successfully or not.
pub(crate) fn semihosting_exit(success: bool) {
    use riscv_semihosting::debug;
    debug::exit(if success {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
}
