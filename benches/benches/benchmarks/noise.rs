//! Gaussian noise fill, SIMD against its scalar twin.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use sgld::noise::{default_rng, fill_normal_simd, reference};

fn fill(c: &mut Criterion) {
    let mut g = c.benchmark_group("fill_normal");
    for n in [8usize, 124, 1024, 16384] {
        let mut out = vec![0.0f32; n];
        let mut rng = default_rng(1);
        fill_normal_simd(&mut rng, &mut out);
        assert!(
            out.iter().all(|z| z.is_finite() && z.abs() < 7.0),
            "noise sanity check"
        );
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("simd", n), &n, |b, _| {
            b.iter(|| fill_normal_simd(&mut rng, black_box(&mut out)))
        });
        g.bench_with_input(BenchmarkId::new("scalar", n), &n, |b, _| {
            b.iter(|| reference::fill_normal(&mut rng, black_box(&mut out)))
        });
    }
    g.finish();
}

criterion_group!(benches, fill);
