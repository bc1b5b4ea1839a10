//! Sets `sgld_soft_float` by the core's rule (`core/build_rules.rs`), so that a target
//! without an FPU gets the fixed-point learner.

include!("../../build_rules.rs");

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sgld_soft_float)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../../build_rules.rs");
    if target_is_soft_float() {
        println!("cargo::rustc-cfg=sgld_soft_float");
    }
}
