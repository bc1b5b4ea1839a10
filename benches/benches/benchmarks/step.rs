//! Whole SGLD steps: sparse logistic regression at the a9a shape (d = 124, 14 non-zeros
//! per row, batch 10), the §5.1 mixture (d = 2, batch 1) and ICA (10 × 10, batch 100).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group};
use sgld::gradient::MiniBatch;
use sgld::ica::Ica;
use sgld::models::{Laplace, LogisticSparse, SparseRows, TiedMixture};
use sgld::{Sgld, noise::default_rng};
use sgld_benches::{A9aShape, ica_rows};

fn a9a_like(c: &mut Criterion) {
    let data = A9aShape::new();
    let (n, d) = (data.len(), data.d);
    let mut rng = default_rng(3);
    let rows = SparseRows::new(&data.offsets, &data.indices, d).unwrap();
    let model = LogisticSparse::new(rows, &data.y, Laplace::new(1.0).unwrap()).unwrap();
    let est = MiniBatch::new(&model);
    let mut theta = vec![0.0f32; d];
    let mut scratch = vec![0.0f32; Sgld::scratch_len(d)];
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    let mut batch = [0usize; 10];
    let mut g = c.benchmark_group("sgld_step");
    g.throughput(Throughput::Elements(1));
    g.bench_function("a9a_shape_sparse_batch10", |b| {
        b.iter(|| {
            sgld::gradient::sample_batch(&mut rng, n, &mut batch).unwrap();
            let info = Sgld::new()
                .step(&mut state, &est, &batch, 1e-4, &mut rng)
                .unwrap();
            black_box(info)
        })
    });
    g.finish();
}

fn mixture(c: &mut Criterion) {
    let mut rng = default_rng(4);
    let mut x = vec![0.0f32; 100];
    sgld::noise::fill_normal(&mut rng, &mut x);
    let model = TiedMixture::paper(&x).unwrap();
    let est = MiniBatch::new(&model);
    let mut theta = [0.0f32; 2];
    let mut scratch = [0.0f32; Sgld::scratch_len(2)];
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    let mut g = c.benchmark_group("sgld_step");
    g.throughput(Throughput::Elements(1));
    g.bench_function("mixture_batch1", |b| {
        b.iter(|| {
            let batch = [(rand_word(&mut rng) % 100) as usize];
            black_box(
                Sgld::new()
                    .step(&mut state, &est, &batch, 1e-3, &mut rng)
                    .unwrap(),
            )
        })
    });
    g.finish();
}

fn rand_word(rng: &mut sgld::noise::DefaultRng) -> u64 {
    use rand_core::Rng;
    rng.next_u64()
}

fn ica(c: &mut Criterion) {
    let mut rng = default_rng(8);
    let x = ica_rows(&mut rng);
    let d = 10;
    let model = Ica::new(&x, d, 1.0).unwrap();
    let mut w: Vec<f64> = (0..d * d)
        .map(|k| f64::from(u8::from(k / d == k % d)))
        .collect();
    let mut scratch = vec![0.0; Ica::scratch_len(d)];
    let mut batch = [0usize; 100];
    let eps = 0.1 / model.len() as f64;
    let mut g = c.benchmark_group("sgld_step");
    g.throughput(Throughput::Elements(1));
    g.bench_function("ica_10x10_batch100", |b| {
        b.iter(|| {
            sgld::gradient::sample_batch(&mut rng, model.len(), &mut batch).unwrap();
            let ok = model
                .sgld_step(&mut w, &batch, eps, &mut rng, &mut scratch)
                .unwrap();
            black_box(ok)
        })
    });
    assert!(w.iter().all(|v| v.is_finite()), "ICA step sanity check");
    g.finish();
}

criterion_group!(benches, a9a_like, mixture, ica);
