//! The online API of the core on a real stream: a9a, one example at a time, through a
//! fixed window of recent examples, reaches the test accuracy of a batch SGLD run on the
//! same data within one point.

use std::path::Path;

use rand_core::{Rng, SeedableRng};
use sgld::Sgld;
use sgld::estimate::{WeightedMoments, WeightedMomentsF32};
use sgld::gradient::{MiniBatch, sample_batch};
use sgld::models::{Laplace, LogisticSparse, SparseRows};
use sgld::noise::DefaultRng;
use sgld::online::{Example, Examples, OnlineSgld, SparseBinaryExample};
use sgld::schedule::{Polynomial, PolynomialF32, Schedule};
use sgld_harness::data::{Dataset, Features, libsvm};

const D: usize = 124;

/// One online learner's buffers: θ, the sampler's scratch, the moments and a batch of 10.
struct Buffers {
    theta: [f32; D],
    scratch: [f32; Sgld::scratch_len(D)],
    store: [f64; WeightedMoments::storage_len(D)],
    batch: [usize; 10],
}

impl Buffers {
    fn new() -> Self {
        Self {
            theta: [0.0; D],
            scratch: [0.0; Sgld::scratch_len(D)],
            store: [0.0; WeightedMoments::storage_len(D)],
            batch: [0; 10],
        }
    }

    /// A learner from θ = 0 with a Laplace(1) prior and plain SGLD, its window in
    /// `examples`.
    fn learner<'a, E: Example, const CAP: usize>(
        &'a mut self,
        examples: &'a mut Examples<E, CAP>,
        schedule: Polynomial,
        burn_in: u64,
    ) -> OnlineSgld<'a, E, Laplace, Polynomial, WeightedMoments<'a>, CAP> {
        OnlineSgld::new(
            examples,
            &mut self.theta,
            &mut self.scratch,
            WeightedMoments::new(&mut self.store, D).unwrap(),
            &mut self.batch,
            Laplace::new(1.0).unwrap(),
            schedule,
            Sgld::new(),
            burn_in,
        )
        .unwrap()
    }
}

fn load(name: &str) -> Dataset {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/datasets/a9a")
        .join(name);
    libsvm::read(&p)
        .unwrap_or_else(|e| panic!("the shared a9a data set is needed beside the repository: {e}"))
        .with_dim(123)
        .with_bias()
}

fn rows(d: &Dataset) -> (&[usize], &[u32]) {
    match &d.features {
        Features::SparseBinary {
            offsets, indices, ..
        } => (offsets, indices),
        _ => panic!("a9a is sparse binary"),
    }
}

fn accuracy(test: &Dataset, beta: &[f64]) -> f64 {
    let (o, idx) = rows(test);
    let correct = (0..test.len())
        .filter(|&i| {
            let z: f64 = idx[o[i]..o[i + 1]].iter().map(|&j| beta[j as usize]).sum();
            (z > 0.0) == (test.y[i] > 0.0)
        })
        .count();
    correct as f64 / test.len() as f64
}

#[test]
fn streaming_a9a_matches_the_batch_run_within_one_point() {
    let (train, test) = (load("a9a"), load("a9a.t"));
    let n = train.len();
    let (o, idx) = rows(&train);

    // Batch run: SGLD over the whole training set, 10 sweeps of batch 10, posterior mean
    // over the second half.
    let model = LogisticSparse::new(
        SparseRows::new(o, idx, D).unwrap(),
        &train.y,
        Laplace::new(1.0).unwrap(),
    )
    .unwrap();
    let est = MiniBatch::new(&model);
    let steps = 10 * n as u64 / 10;
    let schedule = Polynomial::from_range(1e-4, 1e-6, 0.55, steps).unwrap();
    let (mut theta, mut scratch) = (vec![0.0f32; D], vec![0.0f32; Sgld::scratch_len(D)]);
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    let mut store = vec![0.0f64; WeightedMoments::storage_len(D)];
    let mut batch_moments = WeightedMoments::new(&mut store, D).unwrap();
    let mut rng = DefaultRng::seed_from_u64(1);
    let mut batch = [0usize; 10];
    for t in 0..steps {
        sample_batch(&mut rng, n, &mut batch).unwrap();
        let eps = schedule.step_size(t);
        Sgld::new()
            .step(&mut state, &est, &batch, eps, &mut rng)
            .unwrap();
        if t >= steps / 2 {
            batch_moments.push(eps as f64, state.theta()).unwrap();
        }
    }
    let batch_mean: Vec<f64> = (0..D).map(|j| batch_moments.mean(j)).collect();
    let batch_acc = accuracy(&test, &batch_mean);

    // Online: one pass over the training rows in random order, a window of 512 examples.
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let schedule = Polynomial::from_range(1e-3, 1e-5, 0.55, n as u64).unwrap();
    let mut buffers = Buffers::new();
    let mut window = Examples::<SparseBinaryExample<16>, 512>::new();
    let mut learner = buffers.learner(&mut window, schedule, n as u64 / 2);
    for &i in &order {
        let ex = SparseBinaryExample::new(&idx[o[i]..o[i + 1]], train.y[i]).unwrap();
        let info = learner.push(ex, &mut rng).unwrap();
        assert!(!info.non_finite);
    }
    assert_eq!(learner.window().seen(), n as u64);
    let online_mean: Vec<f64> = (0..D).map(|j| learner.moments().mean(j)).collect();
    let online_acc = accuracy(&test, &online_mean);
    eprintln!("test accuracy: batch {batch_acc:.4}, online {online_acc:.4}");
    assert!(
        (online_acc - batch_acc).abs() <= 0.01,
        "online {online_acc} vs batch {batch_acc}"
    );
    assert!(batch_acc > 0.84);

    // The device's configuration — f32 schedule and f32 estimator, as on a Cortex-M4F —
    // on the same stream: within one point of the batch run as well.
    let schedule = PolynomialF32::from_range(1e-3, 1e-5, 0.55, n as u64).unwrap();
    let (mut theta, mut scratch) = ([0.0f32; D], [0.0f32; Sgld::scratch_len(D)]);
    let mut store32 = [0.0f32; WeightedMomentsF32::storage_len(D)];
    let mut window32 = Examples::<SparseBinaryExample<16>, 512>::new();
    let mut batch32 = [0usize; 10];
    let mut device = OnlineSgld::new(
        &mut window32,
        &mut theta,
        &mut scratch,
        WeightedMomentsF32::new(&mut store32, D).unwrap(),
        &mut batch32,
        Laplace::new(1.0).unwrap(),
        schedule,
        Sgld::new(),
        n as u64 / 2,
    )
    .unwrap();
    let mut rng32 = DefaultRng::seed_from_u64(2);
    for &i in &order {
        let ex = SparseBinaryExample::new(&idx[o[i]..o[i + 1]], train.y[i]).unwrap();
        assert!(!device.push(ex, &mut rng32).unwrap().non_finite);
    }
    let f32_mean: Vec<f64> = (0..D).map(|j| device.moments().mean(j) as f64).collect();
    let f32_acc = accuracy(&test, &f32_mean);
    eprintln!("test accuracy, f32 learner: {f32_acc:.4}");
    assert!(
        (f32_acc - batch_acc).abs() <= 0.01,
        "f32 online {f32_acc} vs batch {batch_acc}"
    );

    // A bad example is refused and changes nothing.
    let before = learner.theta().to_vec();
    assert!(
        learner
            .push(SparseBinaryExample::new(&[500], 1.0).unwrap(), &mut rng)
            .is_err()
    );
    assert!(
        learner
            .push(SparseBinaryExample::new(&[3], 0.5).unwrap(), &mut rng)
            .is_err()
    );
    assert_eq!(learner.theta(), &before[..]);
    assert_eq!(learner.window().seen(), n as u64);
    assert!(SparseBinaryExample::<2>::new(&[1, 2, 3], 1.0).is_err());
}

/// The same stream as `u8` and as `u32` examples: the learner's θ and moments agree bit
/// for bit after every example (narrow indices change the memory, not the arithmetic).
#[test]
fn narrow_examples_learn_exactly_what_wide_ones_do() {
    let train = load("a9a");
    let (o, idx) = rows(&train);
    let n = 3000;
    let schedule = Polynomial::from_range(1e-3, 1e-5, 0.55, n as u64).unwrap();
    let (mut b8, mut b32) = (Buffers::new(), Buffers::new());
    let mut w8 = Examples::<SparseBinaryExample<16, u8>, 128>::new();
    let mut w32 = Examples::<SparseBinaryExample<16>, 128>::new();
    let mut narrow = b8.learner(&mut w8, schedule, 100);
    let mut wide = b32.learner(&mut w32, schedule, 100);
    let (mut rng8, mut rng32) = (DefaultRng::seed_from_u64(5), DefaultRng::seed_from_u64(5));
    for i in 0..n {
        let row = &idx[o[i]..o[i + 1]];
        let row8: Vec<u8> = row.iter().map(|&j| u8::try_from(j).unwrap()).collect();
        let y = train.y[i];
        let a = narrow
            .push(SparseBinaryExample::narrow(&row8, y).unwrap(), &mut rng8)
            .unwrap();
        let b = wide
            .push(SparseBinaryExample::new(row, y).unwrap(), &mut rng32)
            .unwrap();
        assert_eq!(a, b, "example {i}");
        assert_eq!(narrow.theta(), wide.theta(), "example {i}");
    }
    assert!(narrow.theta().iter().any(|&t| t != 0.0));
    for j in 0..D {
        assert_eq!(narrow.moments().mean(j), wide.moments().mean(j));
    }
    // An index past the dimension is refused in either width.
    let bad = SparseBinaryExample::<16, u8>::narrow(&[200], 1.0).unwrap();
    assert!(narrow.push(bad, &mut rng8).is_err());
}
