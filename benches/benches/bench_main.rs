//! Criterion benchmarks of the sgld kernels, model gradients, whole steps and the
//! convergence diagnostics.

use criterion::criterion_main;

mod benchmarks;

criterion_main! {
    benchmarks::diagnostics::benches,
    benchmarks::kernels::benches,
    benchmarks::models::benches,
    benchmarks::noise::benches,
    benchmarks::step::benches,
}
