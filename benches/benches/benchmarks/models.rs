//! Model gradients at the workloads' shapes: a9a as index rows, bitmaps and dense (batch
//! 10 and 100), full-data passes of wide sparse rows for four chains (one by one and
//! interleaved, as chains in lockstep take them),
//! the §5.1 mixture (batch 1) and ICA's natural gradient (10 × 10, batch 100).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use sgld::gradient::{full_log_posterior, log_lik_grads_interleaved};
use sgld::ica::Ica;
use sgld::models::{
    BitRows, Laplace, LogisticBits, LogisticDense, LogisticSparse, Model, SparseRows, TiedMixture,
};
use sgld::noise::default_rng;
use sgld_benches::{A9aShape, batches, ica_rows};

fn logistic(c: &mut Criterion) {
    let data = A9aShape::new();
    let rows = SparseRows::new(&data.offsets, &data.indices, data.d).unwrap();
    let prior = Laplace::new(1.0).unwrap();
    let sparse = LogisticSparse::new(rows, &data.y, prior).unwrap();
    let dense = LogisticDense::new(&data.dense, &data.y, data.d, prior).unwrap();
    let words = data.bitmaps();
    let bits = LogisticBits::new(BitRows::new(&words, data.d).unwrap(), &data.y, prior).unwrap();
    let mut rng = default_rng(5);
    let theta: Vec<f32> = (0..data.d)
        .map(|j| ((j * 37 % 17) as f32 - 8.0) * 0.05)
        .collect();
    let mut g = vec![0.0f32; data.d];
    let mut group = c.benchmark_group("logistic_lik_grad");
    for size in [10usize, 100] {
        let bs = batches(1024, size, data.len(), &mut rng);
        // Sanity check: the two layouts give the same gradient.
        let mut gd = vec![0.0f32; data.d];
        g.fill(0.0);
        sparse.add_log_lik_grad(&theta, &bs[0], &mut g);
        dense.add_log_lik_grad(&theta, &bs[0], &mut gd);
        for (a, b) in g.iter().zip(&gd) {
            assert!(
                (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                "sparse {a} vs dense {b}"
            );
        }
        gd.fill(0.0);
        bits.add_log_lik_grad(&theta, &bs[0], &mut gd);
        for (a, b) in g.iter().zip(&gd) {
            assert!(
                (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                "sparse {a} vs bitmaps {b}"
            );
        }
        group.throughput(Throughput::Elements(size as u64));
        let mut k = 0;
        group.bench_with_input(BenchmarkId::new("a9a_sparse", size), &size, |b, _| {
            b.iter(|| {
                k = (k + 1) % bs.len();
                g.fill(0.0);
                sparse.add_log_lik_grad(black_box(&theta), &bs[k], &mut g);
                black_box(&g);
            })
        });
        group.bench_with_input(BenchmarkId::new("a9a_bits", size), &size, |b, _| {
            b.iter(|| {
                k = (k + 1) % bs.len();
                g.fill(0.0);
                bits.add_log_lik_grad(black_box(&theta), &bs[k], &mut g);
                black_box(&g);
            })
        });
        group.bench_with_input(BenchmarkId::new("a9a_dense", size), &size, |b, _| {
            b.iter(|| {
                k = (k + 1) % bs.len();
                g.fill(0.0);
                dense.add_log_lik_grad(black_box(&theta), &bs[k], &mut g);
                black_box(&g);
            })
        });
    }
    group.finish();
}

/// Four chains' full-data gradients on 5,000 rows × 50,000 binary features, 100 a row
/// (text-like, wider than the L1 and L2 caches per chain): each chain's own pass against
/// one interleaved pass for all four.
fn lockstep(c: &mut Criterion) {
    let (n, d, nnz, k) = (5_000usize, 50_000usize, 100usize, 4usize);
    let mut rng = default_rng(11);
    let (mut offsets, mut indices) = (vec![0usize], Vec::with_capacity(n * nnz));
    for _ in 0..n {
        let mut row: Vec<u32> = (0..nnz)
            .map(|_| (rand_core::Rng::next_u64(&mut rng) % d as u64) as u32)
            .collect();
        row.sort_unstable();
        row.dedup();
        indices.extend(row);
        offsets.push(indices.len());
    }
    let y: Vec<f32> = (0..n)
        .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
        .collect();
    let prior = Laplace::new(1.0).unwrap();
    let model =
        LogisticSparse::new(SparseRows::new(&offsets, &indices, d).unwrap(), &y, prior).unwrap();
    let thetas: Vec<Vec<f32>> = (0..k)
        .map(|c| {
            (0..d)
                .map(|j| ((j * 7 + c) % 13) as f32 * 0.01 - 0.06)
                .collect()
        })
        .collect();
    let interleaved: Vec<f32> = (0..d * k).map(|i| thetas[i % k][i / k]).collect();
    let (mut g, mut tmp) = (vec![0.0f32; d], vec![0.0f32; d]);
    let (mut gs, mut tmps, mut values) = (vec![0.0f32; d * k], vec![0.0f32; d * k], vec![0.0; k]);
    let mut group = c.benchmark_group("full_data_chains");
    group.throughput(Throughput::Elements((k * n) as u64));
    group.bench_function("sparse_5000x50000_one_by_one", |b| {
        b.iter(|| {
            for theta in &thetas {
                black_box(full_log_posterior(
                    &model,
                    black_box(theta),
                    &mut g,
                    &mut tmp,
                ));
            }
        })
    });
    group.bench_function("sparse_5000x50000_interleaved", |b| {
        b.iter(|| {
            assert!(log_lik_grads_interleaved(
                &model,
                black_box(&interleaved),
                k,
                0..n,
                &mut gs,
                &mut tmps,
                &mut values
            ));
            black_box(&gs);
        })
    });
    group.finish();
}

fn mixture(c: &mut Criterion) {
    let mut rng = default_rng(6);
    let x: Vec<f32> = (0..100).map(|i| (i as f32 * 0.37).sin() * 2.0).collect();
    let model = TiedMixture::paper(&x).unwrap();
    let bs = batches(1024, 1, x.len(), &mut rng);
    let theta = [0.3f32, 0.7];
    let mut g = [0.0f32; 2];
    model.add_log_lik_grad(&theta, &bs[0], &mut g);
    assert!(g.iter().all(|v| v.is_finite()), "mixture sanity check");
    let mut group = c.benchmark_group("mixture_lik_grad");
    group.throughput(Throughput::Elements(1));
    let mut k = 0;
    group.bench_function(BenchmarkId::from_parameter(1), |b| {
        b.iter(|| {
            k = (k + 1) % bs.len();
            model.add_log_lik_grad(black_box(&theta), &bs[k], &mut g);
            black_box(&g);
        })
    });
    group.finish();
}

fn ica(c: &mut Criterion) {
    let mut rng = default_rng(7);
    let x = ica_rows(&mut rng);
    let d = 10;
    let model = Ica::new(&x, d, 1.0).unwrap();
    let w: Vec<f64> = (0..d * d)
        .map(|k| f64::from(u8::from(k / d == k % d)) + 0.01 * (k as f64).sin())
        .collect();
    let mut scratch = vec![0.0; Ica::scratch_len(d)];
    let mut out = vec![0.0; d * d];
    let bs = batches(256, 100, model.len(), &mut rng);
    model
        .natural_gradient(&w, &bs[0], &mut out, &mut scratch)
        .unwrap();
    assert!(out.iter().all(|v| v.is_finite()), "ICA sanity check");
    let mut group = c.benchmark_group("ica_natural_gradient");
    group.throughput(Throughput::Elements(100));
    let mut k = 0;
    group.bench_function(BenchmarkId::from_parameter("10x10_batch100"), |b| {
        b.iter(|| {
            k = (k + 1) % bs.len();
            model
                .natural_gradient(black_box(&w), &bs[k], &mut out, &mut scratch)
                .unwrap();
            black_box(&out);
        })
    });
    group.finish();
}

criterion_group!(benches, logistic, lockstep, mixture, ica);
