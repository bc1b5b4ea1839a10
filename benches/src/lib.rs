//! Criterion benchmarks of the `sgld` kernels live in `benches/`; this library is empty.
