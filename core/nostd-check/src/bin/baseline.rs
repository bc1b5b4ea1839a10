//! The same runtime scaffolding as the main program with no sgld code: its size is
//! subtracted from the main program's to give the size of the core's code.

#![no_std]
#![no_main]

#[path = "../libc.rs"]
mod libc;

#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    libc::printf(format_args!("baseline {}\n", 1.5f64));
    0
}
