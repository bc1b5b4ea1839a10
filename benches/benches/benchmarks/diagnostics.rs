//! The convergence diagnostics of one parameter: `diagnostics` (one sort, shared normal
//! scores, paired FFTs) against the three reference functions it replaces, and three
//! weighted quantiles from one sort against three sorts.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use sgld_harness::diagnostics::{
    diagnostics, ess_bulk, ess_tail, rhat, weighted_quantile, weighted_quantiles,
};

/// Four AR(1) chains (ρ = 0.9) of `n` draws.
fn chains(n: usize) -> Vec<Vec<f64>> {
    let mut s: u64 = 7;
    (0..4)
        .map(|_| {
            let mut x = 0.0;
            (0..n)
                .map(|_| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    x = 0.9 * x + (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                    x
                })
                .collect()
        })
        .collect()
}

fn per_parameter(c: &mut Criterion) {
    let mut g = c.benchmark_group("diagnostics");
    g.sample_size(10);
    for n in [1_000usize, 125_000] {
        let ch = chains(n);
        g.throughput(Throughput::Elements(4 * n as u64));
        g.bench_with_input(BenchmarkId::new("one_pass", n), &n, |b, _| {
            b.iter(|| diagnostics(black_box(&ch)))
        });
        g.bench_with_input(BenchmarkId::new("reference", n), &n, |b, _| {
            b.iter(|| (rhat(black_box(&ch)), ess_bulk(&ch), ess_tail(&ch)))
        });
        let vals = ch.concat();
        let ws = vec![1.0; vals.len()];
        g.bench_with_input(BenchmarkId::new("quantiles_one_sort", n), &n, |b, _| {
            b.iter(|| weighted_quantiles(black_box(&vals), &ws, &[0.05, 0.5, 0.95]))
        });
        g.bench_with_input(BenchmarkId::new("quantiles_three_sorts", n), &n, |b, _| {
            b.iter(|| [0.05, 0.5, 0.95].map(|p| weighted_quantile(black_box(&vals), &ws, p)))
        });
    }
    g.finish();
}

criterion_group!(benches, per_parameter);
