//! Criterion benchmarks of the sgld kernels, model gradients and whole steps.

use criterion::criterion_main;

mod benchmarks;

criterion_main! {
    benchmarks::kernels::benches,
    benchmarks::models::benches,
    benchmarks::noise::benches,
    benchmarks::step::benches,
}
