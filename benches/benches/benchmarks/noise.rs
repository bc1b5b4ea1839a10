//! Gaussian noise fill, SIMD against its scalar twin; mini-batch indices, and a line of
//! them, SIMD against its scalar twin.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use sgld::gradient::sample_batch;
use sgld::kernels::{reference as kernels_reference, simd};
use sgld::noise::{default_rng, fill_normal_simd, reference};

fn fill(c: &mut Criterion) {
    let mut g = c.benchmark_group("fill_normal");
    // 128 is one run of four whole blocks, 129 that run and a partial block.
    for n in [8usize, 124, 128, 129, 1024, 16384] {
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

/// Uniform indices with replacement: a short batch (`next_u64` words) and vector lines,
/// over the ICA data's 5,000 rows and a9a's 32,561.
fn batch(c: &mut Criterion) {
    let mut g = c.benchmark_group("sample_batch");
    for n_data in [5_000usize, 32_561] {
        for len in [1usize, 10, 100, 1000] {
            let mut batch = vec![0usize; len];
            let mut rng = default_rng(2);
            sample_batch(&mut rng, n_data, &mut batch).unwrap();
            assert!(batch.iter().all(|&i| i < n_data), "index sanity check");
            g.throughput(Throughput::Elements(len as u64));
            g.bench_with_input(BenchmarkId::new(format!("n{n_data}"), len), &len, |b, _| {
                b.iter(|| sample_batch(&mut rng, n_data, black_box(&mut batch)))
            });
        }
    }
    g.finish();
}

/// Sixteen indices from one 64-byte line of words (the lines of `sample_batch`).
fn line(c: &mut Criterion) {
    let mut g = c.benchmark_group("line_indices_u32");
    let bytes: [u8; 64] = core::array::from_fn(|k| (k as u8).wrapping_mul(151).wrapping_add(7));
    let n = 5_000u32;
    let (mut s, mut r) = ([0usize; 16], [0usize; 16]);
    assert!(
        simd::line_indices_u32(&bytes, n, &mut s)
            && kernels_reference::line_indices_u32(&bytes, n, &mut r)
            && s == r
            && s.iter().all(|&i| i < n as usize),
        "line_indices_u32 sanity check"
    );
    g.throughput(Throughput::Elements(16));
    g.bench_function("simd", |b| {
        b.iter(|| simd::line_indices_u32(black_box(&bytes), n, black_box(&mut s)))
    });
    g.bench_function("scalar", |b| {
        b.iter(|| kernels_reference::line_indices_u32(black_box(&bytes), n, black_box(&mut r)))
    });
    g.finish();
}

criterion_group!(benches, fill, batch, line);
