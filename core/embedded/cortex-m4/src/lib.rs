//! What the two firmware images share: an instruction counter on SysTick, the peak of a
//! painted stack, semihosting output and the panic handler. `learner` runs the online
//! learner; `baseline` runs the same stream and measurements without sgld, so that the
//! difference of their sizes is what sgld adds.

#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;
pub use cortex_m_semihosting::hprintln;

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
    /// Starts SysTick on the core clock, wrapping every 2²⁴ ticks.
    pub fn start(mut syst: SYST) -> Self {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        // The count is 0 until the first tick loads the reload value.
        while SYST::get_current() == 0 {}
        Self { _syst: syst }
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

/// The deepest the stack has been since reset, in bytes: cortex-m-rt's `paint-stack`
/// filled the whole stack region with `0xCCCC_CCCC` before `main`; the first word from
/// the bottom that is no longer the pattern marks the peak.
pub fn peak_stack() -> usize {
    let bottom = &raw const _stack_end as usize;
    let top = &raw const _stack_start as usize;
    let mut addr = bottom;
    while addr < top {
        // SAFETY: `addr` is word-aligned and within the stack region the linker script
        // reserved, below the current stack pointer's frames or inside them; reading it
        // has no side effect, and volatile keeps the read from being elided.
        let word = unsafe { core::ptr::read_volatile(addr as *const u32) };
        if word != 0xCCCC_CCCC {
            break;
        }
        addr += 4;
    }
    top - addr
}

/// Ends the program under QEMU with `code` (0 success).
pub fn exit(code: i32) -> ! {
    if code == 0 {
        cortex_m_semihosting::debug::exit(cortex_m_semihosting::debug::EXIT_SUCCESS);
    } else {
        cortex_m_semihosting::debug::exit(cortex_m_semihosting::debug::EXIT_FAILURE);
    }
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
