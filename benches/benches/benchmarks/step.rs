//! Whole SGLD steps: sparse logistic regression at the a9a shape (d = 124, 14 non-zeros
//! per row, batch 10) and the §5.1 mixture (d = 2, batch 1).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group};
use sgld::gradient::MiniBatch;
use sgld::models::{Laplace, LogisticSparse, SparseRows, TiedMixture};
use sgld::{Sgld, noise::default_rng};

fn a9a_like(c: &mut Criterion) {
    let (n, d, nnz) = (32_561usize, 124usize, 14usize);
    let mut rng = default_rng(3);
    let mut offsets = vec![0usize];
    let mut indices = Vec::with_capacity(n * nnz);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        for k in 0..nnz - 1 {
            indices.push(((i * 31 + k * 9 + (rand_word(&mut rng) as usize % 9)) % (d - 1)) as u32);
        }
        indices.push((d - 1) as u32); // bias
        let row = &mut indices[offsets[i]..];
        row.sort_unstable();
        offsets.push(indices.len());
        y.push(if rand_word(&mut rng) & 1 == 0 {
            1.0
        } else {
            -1.0
        });
    }
    let rows = SparseRows::new(&offsets, &indices, d).unwrap();
    let model = LogisticSparse::new(rows, &y, Laplace::new(1.0).unwrap()).unwrap();
    let est = MiniBatch::new(&model);
    let mut theta = vec![0.0f32; d];
    let mut scratch = vec![0.0f32; Sgld::scratch_len(d)];
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    let mut batch = [0usize; 10];
    let mut g = c.benchmark_group("sgld_step");
    g.throughput(Throughput::Elements(1));
    g.bench_function("a9a_shape_sparse_batch10", |b| {
        b.iter(|| {
            for slot in batch.iter_mut() {
                *slot = (rand_word(&mut rng) % n as u64) as usize;
            }
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

criterion_group!(benches, a9a_like, mixture);
