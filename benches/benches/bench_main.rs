//! Criterion benchmarks of the sgld kernels.

use criterion::criterion_main;

mod benchmarks;

criterion_main! {
    benchmarks::kernels::benches,
    benchmarks::noise::benches,
    benchmarks::step::benches,
}
