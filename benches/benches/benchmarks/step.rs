//! Whole SGLD steps: sparse logistic regression at the a9a shape (d = 124, 14 non-zeros
//! per row, batch 10; rows as index lists and as bitmaps), the §5.1 mixture (d = 2, batch 1) and ICA (10 × 10, batch 100);
//! and the mixture's arithmetic alone, as one chain in registers; and the a9a step's
//! parts, each alone, for its profile.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group};
use sgld::gradient::MiniBatch;
use sgld::ica::Ica;
use sgld::models::{
    BitRows, Laplace, LogisticBits, LogisticSparse, Model, SparseRows, TiedMixture,
};
use sgld::{Sgld, noise::default_rng};
use sgld_benches::{A9aShape, ica_rows};
use sgld_harness::bench::MixtureChain;

fn a9a_like(c: &mut Criterion) {
    let data = A9aShape::new();
    let d = data.d;
    let prior = Laplace::new(1.0).unwrap();
    let rows = SparseRows::new(&data.offsets, &data.indices, d).unwrap();
    let by_index = LogisticSparse::new(rows, &data.y, prior).unwrap();
    let words = data.bitmaps();
    let bits = LogisticBits::new(BitRows::new(&words, d).unwrap(), &data.y, prior).unwrap();
    let mut g = c.benchmark_group("sgld_step");
    g.throughput(Throughput::Elements(1));
    a9a_steps(&mut g, "a9a_shape_sparse_batch10", &by_index);
    a9a_steps(&mut g, "a9a_shape_bits_batch10", &bits);
    g.finish();
}

/// SGLD steps of `model` from θ = 0, each on a fresh batch of ten.
fn a9a_steps<M: Model>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    model: &M,
) {
    let (n, d) = (model.len(), model.dim());
    let est = MiniBatch::new(model);
    let mut rng = default_rng(3);
    let mut theta = vec![0.0f32; d];
    let mut scratch = vec![0.0f32; Sgld::scratch_len(d)];
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    let mut batch = [0usize; 10];
    g.bench_function(name, |b| {
        b.iter(|| {
            sgld::gradient::sample_batch(&mut rng, n, &mut batch).unwrap();
            let info = Sgld::new()
                .step(&mut state, &est, &batch, 1e-4, &mut rng)
                .unwrap();
            black_box(info)
        })
    });
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

/// The mixture's step as one chain in registers ([`MixtureChain`]: the same gradient,
/// prior and update, with the batch indices and the noise read from tables, and no
/// checks, no scratch, no counters). What remains is the latency of `θₜ → θₜ₊₁`, the
/// floor of any one-chain implementation of this model's arithmetic, which `sgld bench`
/// also times as the gmm workload's `chain_ns`.
fn mixture_chain(c: &mut Criterion) {
    let mut rng = default_rng(4);
    let mut x = vec![0.0f32; 100];
    sgld::noise::fill_normal(&mut rng, &mut x);
    let chain = MixtureChain::new(&x, 1e-3, 5);
    // Sanity check: the chain stays finite and near the posterior's modes.
    let mut t = chain.run([0.0; 2], 20_000);
    assert!(
        t.iter().all(|v| v.is_finite() && v.abs() < 5.0),
        "mixture chain: {t:?}"
    );
    let mut g = c.benchmark_group("sgld_step");
    g.throughput(Throughput::Elements(1));
    let mut k = 0;
    g.bench_function("mixture_chain_in_registers", |b| {
        b.iter(|| {
            k += 1;
            t = chain.step(t, k);
            black_box(t[0]);
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

/// The a9a bitmap step's parts, each timed alone at the workload's shape (d = 124,
/// batch 10, the 32,561 rows as bitmaps), on batches drawn beforehand and taken in turn:
/// the batch draw, the Laplace prior, the margins, the noise, the weights' sigmoid, the
/// scatter-adds and the update; then the margins and the noise back to back (they do
/// not depend on each other, so a processor that ran them together would take less
/// than the two alone), and the whole step on the same batches. The parts' times add
/// up to the step's: this is the step's profile.
fn a9a_parts(c: &mut Criterion) {
    use sgld::kernels::simd;
    use sgld::models::Prior;
    let data = A9aShape::new();
    let (n, d) = (data.len(), data.d);
    let words = data.bitmaps();
    let stride = BitRows::words_per_row(d);
    let prior = Laplace::new(1.0).unwrap();
    let bits = LogisticBits::new(BitRows::new(&words, d).unwrap(), &data.y, prior).unwrap();
    let mut rng = default_rng(9);
    let batches: Vec<[usize; 10]> = (0..4096)
        .map(|_| {
            let mut b = [0usize; 10];
            sgld::gradient::sample_batch(&mut rng, n, &mut b).unwrap();
            b
        })
        .collect();
    let mut next = batches.iter().cycle();
    let mut theta = vec![0.0f32; d];
    sgld::noise::fill_normal(&mut rng, &mut theta);
    theta.iter_mut().for_each(|t| *t *= 0.1);
    let (mut grad, mut noise) = (vec![0.0f32; d], vec![0.0f32; d]);
    let alphas = [0.25f32; 10];
    let z = [0.5f32; 16];
    // Sanity check: the margins are the model's.
    let first = simd::bitmap_dots16(&words, stride, &batches[0], &theta);
    for (k, &i) in batches[0].iter().enumerate() {
        assert!(
            (first[k] - bits.margin(&theta, i)).abs() <= 1e-4,
            "a9a margins"
        );
    }
    let mut g = c.benchmark_group("a9a_step_parts");
    g.throughput(Throughput::Elements(1));
    let mut batch = [0usize; 10];
    g.bench_function("batch", |b| {
        b.iter(|| sgld::gradient::sample_batch(&mut rng, n, black_box(&mut batch)))
    });
    g.bench_function("prior", |b| {
        b.iter(|| prior.write_grad(black_box(&theta), black_box(&mut grad)))
    });
    g.bench_function("margins", |b| {
        b.iter(|| simd::bitmap_dots16(&words, stride, next.next().unwrap(), black_box(&theta)))
    });
    g.bench_function("noise", |b| {
        b.iter(|| sgld::noise::fill_normal(&mut rng, black_box(&mut noise)))
    });
    g.bench_function("weights", |b| {
        b.iter(|| {
            let mut w = [0.0f32; 16];
            simd::sigmoid(black_box(&z), &mut w);
            w
        })
    });
    g.bench_function("scatter", |b| {
        b.iter(|| {
            simd::bitmap_axpys(
                black_box(&alphas),
                &words,
                stride,
                next.next().unwrap(),
                black_box(&mut grad),
            )
        })
    });
    g.bench_function("update", |b| {
        b.iter(|| {
            simd::langevin_step_checked(
                black_box(&mut theta),
                black_box(&grad),
                &mut noise,
                1e-9,
                1e-9,
            )
        })
    });
    g.bench_function("margins_then_noise", |b| {
        b.iter(|| {
            let m = simd::bitmap_dots16(&words, stride, next.next().unwrap(), black_box(&theta));
            sgld::noise::fill_normal(&mut rng, black_box(&mut noise));
            m
        })
    });
    let est = MiniBatch::new(&bits);
    let mut scratch = vec![0.0f32; Sgld::scratch_len(d)];
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    g.bench_function("step_without_batch_draw", |b| {
        b.iter(|| {
            let info = Sgld::new()
                .step(&mut state, &est, next.next().unwrap(), 1e-4, &mut rng)
                .unwrap();
            black_box(info)
        })
    });
    g.finish();
}

criterion_group!(benches, a9a_like, mixture, mixture_chain, ica, a9a_parts);
