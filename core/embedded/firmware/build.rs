//! Puts the target's memory layout where the runtime's `link.x` finds it, as `memory.x`:
//! `memory.x` for Cortex-M, `memory-riscv.x` for RISC-V.

use std::path::PathBuf;
use std::{env, fs};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let riscv = env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a.starts_with("riscv"));
    let layout: &[u8] = if riscv {
        include_bytes!("memory-riscv.x")
    } else {
        include_bytes!("memory.x")
    };
    fs::write(out.join("memory.x"), layout).expect("OUT_DIR is writable");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=memory-riscv.x");
}
