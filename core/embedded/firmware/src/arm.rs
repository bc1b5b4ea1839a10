//! Cortex-M: the instruction counter on SysTick, the stack that `cortex-m-rt` paints at
//! reset, semihosting and the panic handler.

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
pub use cortex_m_rt::entry;
use cortex_m_rt::exception;
pub use cortex_m_semihosting::hprintln;

/// The core, for the report's first line.
pub const CORE: &str = if cfg!(target_abi = "eabihf") {
    "a Cortex-M4F"
} else {
    "a Cortex-M3 (no FPU)"
};

/// SysTick's reload value: its counter is 24 bits wide.
const RELOAD: u32 = 0x00ff_ffff;
/// Instructions per SysTick tick under QEMU's `-icount shift=0` (one instruction a
/// nanosecond) with mps2-an386's 25 MHz SysTick clock.
pub const INSTRUCTIONS_PER_TICK: u64 = 40;

/// Times SysTick has wrapped.
static WRAPS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

/// Counts instructions, on SysTick (QEMU does not model the DWT cycle counter).
pub struct Counter {
    _syst: SYST,
}

impl Counter {
    /// Starts SysTick on the core clock, wrapping every 2²⁴ ticks; `None` when its
    /// peripherals were taken already.
    pub fn start() -> Option<Self> {
        let mut syst = cortex_m::Peripherals::take()?.SYST;
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        // The count is 0 until the first tick loads the reload value.
        while SYST::get_current() == 0 {}
        Some(Self { _syst: syst })
    }

    /// Instructions since [`start`](Self::start).
    pub fn instructions(&self) -> u64 {
        loop {
            let before = WRAPS.load(Ordering::Relaxed);
            let current = SYST::get_current();
            // At 0 the wrap's exception is due: read again once it has been counted.
            if current != 0 && WRAPS.load(Ordering::Relaxed) == before {
                let ticks = before as u64 * (RELOAD as u64 + 1) + (RELOAD - current) as u64;
                return ticks * INSTRUCTIONS_PER_TICK;
            }
        }
    }
}

unsafe extern "C" {
    /// The lowest address of the stack region (cortex-m-rt's linker script).
    static _stack_end: u32;
    /// One past its highest address (the initial stack pointer).
    static _stack_start: u32;
}

/// Nothing to do: cortex-m-rt's `paint-stack` painted the stack at reset.
pub fn paint_stack() {}

/// The deepest the stack has been since reset, in bytes: cortex-m-rt's `paint-stack`
/// filled the whole stack region with `0xCCCC_CCCC` before `main`; the first word from
/// the bottom that is no longer the pattern marks the peak.
pub fn peak_stack() -> usize {
    // SAFETY: the linker script's stack region: word-aligned, readable RAM.
    unsafe {
        crate::painted_depth(
            &raw const _stack_end as usize,
            &raw const _stack_start as usize,
        )
    }
}

/// Tells QEMU to exit, successfully or not.
pub(crate) fn semihosting_exit(success: bool) {
    use cortex_m_semihosting::debug;
    debug::exit(if success {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
}
