//! Sets `sgld_scalar_target` where `wide` has no SIMD backend for the target (no SSE2,
//! wasm `simd128` or AArch64 NEON: a Cortex-M, RISC-V, 32-bit ARM), so that the kernels,
//! the noise and the generator run as plain loops there instead of `wide`'s lane-by-lane
//! emulation of 512-bit vectors, which is several times larger and no faster. Sets
//! `sgld_soft_float` where the target has no floating-point unit, so that the noise is
//! drawn by the ziggurat (mostly integer work) instead of Box–Muller.

include!("build_rules.rs");

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sgld_scalar_target)");
    println!("cargo::rustc-check-cfg=cfg(sgld_soft_float)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=build_rules.rs");
    if !target_has_simd() {
        println!("cargo::rustc-cfg=sgld_scalar_target");
    }
    if target_is_soft_float() {
        println!("cargo::rustc-cfg=sgld_soft_float");
    }
}
