// What the target offers, from the variables cargo sets for a build script: shared by
// this crate's build.rs and by crates that choose code by the same rules
// (core/embedded/learner).

/// Whether `wide` has a SIMD backend for the target: SSE2, wasm `simd128` or AArch64
/// NEON.
#[allow(dead_code)]
fn target_has_simd() -> bool {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let has = |f: &str| features.split(',').any(|x| x == f);
    has("sse2") || has("simd128") || (arch == "aarch64" && has("neon"))
}

/// Whether the target has no floating-point unit: 32-bit Arm without the hard-float ABI
/// (Cortex-M0/M3), RISC-V without the F extension. f32 arithmetic is then a library
/// call each.
fn target_is_soft_float() -> bool {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let abi = std::env::var("CARGO_CFG_TARGET_ABI").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let has_f = features.split(',').any(|x| x == "f");
    (arch == "arm" && abi != "eabihf") || (arch.starts_with("riscv") && !has_f)
}
