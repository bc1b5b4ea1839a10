//! Sets `sgld_scalar_target` where `wide` has no SIMD backend for the target (no SSE2,
//! wasm `simd128` or AArch64 NEON: a Cortex-M, RISC-V, 32-bit ARM), so that the kernels,
//! the noise and the generator run as plain loops there instead of `wide`'s lane-by-lane
//! emulation of 512-bit vectors, which is several times larger and no faster. Sets
//! `sgld_soft_float` where the target has no floating-point unit, so that the noise is
//! drawn by the ziggurat (mostly integer work) instead of Box–Muller.

use std::env;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sgld_scalar_target)");
    println!("cargo::rustc-check-cfg=cfg(sgld_soft_float)");
    println!("cargo::rerun-if-changed=build.rs");
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let has = |f: &str| features.split(',').any(|x| x == f);
    let simd = has("sse2") || has("simd128") || (arch == "aarch64" && has("neon"));
    if !simd {
        println!("cargo::rustc-cfg=sgld_scalar_target");
    }
    // No floating-point unit: 32-bit Arm without the hard-float ABI (Cortex-M0/M3),
    // RISC-V without the F extension. f32 arithmetic is then a library call each.
    let abi = env::var("CARGO_CFG_TARGET_ABI").unwrap_or_default();
    let soft = (arch == "arm" && abi != "eabihf") || (arch.starts_with("riscv") && !has("f"));
    if soft {
        println!("cargo::rustc-cfg=sgld_soft_float");
    }
}
