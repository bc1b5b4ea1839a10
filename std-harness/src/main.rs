//! `sgld`: the command-line harness of the sgld sampling core.

use clap::Parser;

/// Stochastic gradient Langevin dynamics (Welling & Teh 2011).
///
/// The sampling core is the `sgld` library crate (no_std, allocation-free, SIMD kernels).
#[derive(Debug, Parser)]
#[command(name = "sgld", version, about, long_about = None)]
struct Cli {}

fn main() {
    let _cli = Cli::parse();
    println!(
        "sgld {} (core kernels: {} lanes, {})",
        env!("CARGO_PKG_VERSION"),
        sgld::kernels::LANES,
        if sgld::kernels::FORCE_SCALAR {
            "scalar"
        } else {
            "SIMD"
        }
    );
}
