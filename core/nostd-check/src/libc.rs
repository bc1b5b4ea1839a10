//! The two C library calls the programs need: `write` and `_exit`, and the hooks a
//! `#![no_std]` binary must provide on a hosted target.

use core::fmt::Write;

#[link(name = "c")]
unsafe extern "C" {
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
    fn _exit(code: i32) -> !;
}

/// Writes `s` to standard output.
pub fn print(s: &str) {
    // SAFETY: `s` is a valid, initialised byte slice for the duration of the call;
    // `write` reads at most `s.len()` bytes from it and keeps no reference.
    unsafe {
        write(1, s.as_ptr(), s.len());
    }
}

/// Formats into a fixed buffer (no heap) and prints.
pub fn printf(args: core::fmt::Arguments<'_>) {
    let mut line: heapless::String<256> = heapless::String::new();
    let _ = line.write_fmt(args);
    print(&line);
}

/// Ends the process.
pub fn exit(code: i32) -> ! {
    // SAFETY: `_exit` terminates the process; it takes no pointers.
    unsafe { _exit(code) }
}

/// The precompiled `core` of a hosted target is built with unwinding tables that name
/// this symbol; with `panic = "abort"` nothing ever unwinds, so it is never called.
#[unsafe(no_mangle)]
extern "C" fn rust_eh_personality() {}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    print("panic\n");
    exit(101)
}
