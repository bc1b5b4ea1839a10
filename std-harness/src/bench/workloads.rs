//! The four workloads of `sgld bench` and the data they run on.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use rand_core::{Rng, SeedableRng};
use sgld::Sgld;
use sgld::gradient::{GradientEstimator, MiniBatch, sample_batch};
use sgld::ica::Ica;
use sgld::models::{BitRows, Laplace, LogisticBits, Model, SparseRows, TiedMixture};
use sgld::noise::{DefaultRng, fill_normal};

use super::{Check, MixtureChain, Ops, Workload};
use crate::data::{Dataset, Features, libsvm};

/// Seed of every workload's chain.
pub(super) const SEED: u64 = 20111;

/// The a9a workload.
#[derive(Debug)]
pub struct A9a {
    train: SparseData,
    test: SparseData,
    theta: Vec<f32>,
    scratch: Vec<f32>,
    batch: [usize; 10],
    rng: DefaultRng,
    eps: f32,
    source: String,
}

/// The rows as bitmaps (16 bytes a row for a9a's 124 features, 0.52 MB for its
/// training set, which stays in a 1 MB L2 cache), for [`LogisticBits`]; the feature
/// count of each row is kept for the workload's operation counts.
#[derive(Debug)]
struct SparseData {
    words: Vec<u16>,
    y: Vec<f32>,
    d: usize,
    nnz: usize,
}

impl SparseData {
    fn from_dataset(data: Dataset) -> Result<Self, String> {
        let data = data.with_bias();
        let Features::SparseBinary {
            offsets,
            indices,
            d,
        } = data.features
        else {
            return Err("a9a: expected sparse binary rows".into());
        };
        Self::from_rows(&offsets, &indices, data.y, d)
    }

    /// See [`synthetic_a9a`].
    fn synthetic(n: usize, beta: &[f32], rng: &mut DefaultRng) -> Result<Self, String> {
        let (offsets, indices, y) = synthetic_a9a(n, beta, rng);
        Self::from_rows(&offsets, &indices, y, beta.len())
    }

    fn from_rows(
        offsets: &[usize],
        indices: &[u32],
        y: Vec<f32>,
        d: usize,
    ) -> Result<Self, String> {
        let rows = SparseRows::new(offsets, indices, d).map_err(|e| format!("a9a: {e}"))?;
        let mut words = vec![0u16; rows.len() * BitRows::words_per_row(d)];
        BitRows::fill_from_sparse(&rows, &mut words).map_err(|e| format!("a9a: {e}"))?;
        Ok(Self {
            words,
            y,
            d,
            nnz: indices.len(),
        })
    }

    /// The §5.2 model on these rows (Laplace(1) prior).
    fn model(&self) -> Result<LogisticBits<'_, Laplace>, String> {
        let rows = BitRows::new(&self.words, self.d).map_err(|e| e.to_string())?;
        let prior = Laplace::new(1.0).map_err(|e| e.to_string())?;
        LogisticBits::new(rows, &self.y, prior).map_err(|e| e.to_string())
    }

    fn mean_nnz(&self) -> f64 {
        self.nnz as f64 / self.y.len() as f64
    }
}

/// Rows of a9a's shape in compressed form `(offsets, indices, labels)`: `n` rows of 13
/// distinct random features of the first `d − 1` and the bias `d − 1` (`d = beta.len()
/// ≥ 15`), sorted within a row, labels ±1 drawn from the logistic model at `beta`.
pub fn synthetic_a9a(
    n: usize,
    beta: &[f32],
    rng: &mut DefaultRng,
) -> (Vec<usize>, Vec<u32>, Vec<f32>) {
    let d = beta.len();
    let (mut offsets, mut indices, mut y) = (vec![0], Vec::new(), Vec::new());
    for _ in 0..n {
        let start = indices.len();
        while indices.len() - start < 13 {
            let j = (rng.next_u64() % (d as u64 - 1)) as u32;
            if !indices[start..].contains(&j) {
                indices.push(j);
            }
        }
        indices.push(d as u32 - 1);
        indices[start..].sort_unstable();
        offsets.push(indices.len());
        let z: f32 = indices[start..].iter().map(|&j| beta[j as usize]).sum();
        let u = (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        y.push(if u < 1.0 / (1.0 + (-z).exp()) {
            1.0
        } else {
            -1.0
        });
    }
    (offsets, indices, y)
}

impl A9a {
    /// a9a from `data_dir/a9a/{a9a, a9a.t}` when present, else synthetic data of its
    /// shape.
    pub fn new(data_dir: Option<&Path>) -> Result<Self, String> {
        let mut rng = DefaultRng::seed_from_u64(SEED);
        let files = data_dir.map(|d| (d.join("a9a/a9a"), d.join("a9a/a9a.t")));
        let (train, test, source) = match files {
            Some((tr, te)) if tr.is_file() && te.is_file() => {
                let train = libsvm::read(&tr).map_err(|e| e.to_string())?;
                let test = libsvm::read(&te)
                    .map_err(|e| e.to_string())?
                    .with_dim(train.dim());
                (
                    SparseData::from_dataset(train)?,
                    SparseData::from_dataset(test)?,
                    format!("{} (a9a.t for the check)", tr.display()),
                )
            }
            _ => {
                let mut beta = vec![0.0f32; 124];
                fill_normal(&mut rng, &mut beta);
                (
                    SparseData::synthetic(32_561, &beta, &mut rng)?,
                    SparseData::synthetic(16_281, &beta, &mut rng)?,
                    "synthetic a9a-shaped rows (no a9a in the data directory)".into(),
                )
            }
        };
        let d = train.d;
        let eps = 0.1 / train.y.len() as f32;
        Ok(Self {
            theta: vec![0.0; d],
            scratch: vec![0.0; Sgld::scratch_len(d)],
            train,
            test,
            batch: [0; 10],
            rng,
            eps,
            source,
        })
    }
}

impl Workload for A9a {
    fn name(&self) -> &'static str {
        "a9a"
    }

    fn run(&mut self, steps: u64) -> Result<Duration, String> {
        let model = self.train.model()?;
        let est = MiniBatch::new(&model);
        let n = model.len();
        let mut state =
            Sgld::init(&mut self.theta, &mut self.scratch).map_err(|e| e.to_string())?;
        let sampler = Sgld::new();
        let t0 = Instant::now();
        let mut next = self.batch;
        sample_batch(&mut self.rng, n, &mut next).map_err(|e| e.to_string())?;
        for _ in 0..steps {
            // The batch after this one is drawn first, and its rows asked for, so they
            // reach the cache while this step runs.
            self.batch = next;
            sample_batch(&mut self.rng, n, &mut next).map_err(|e| e.to_string())?;
            est.prefetch(&next);
            let info = sampler
                .step(&mut state, &est, &self.batch, self.eps, &mut self.rng)
                .map_err(|e| e.to_string())?;
            black_box(info);
        }
        Ok(t0.elapsed())
    }

    fn ops(&self) -> Ops {
        let (d, b) = (self.train.d as f64, self.batch.len() as f64);
        Ops {
            normals: d,
            gathers: 2.0 * b * self.train.mean_nnz(),
            fmas_f32: 3.0 * d,
            fmas_f64: 0.0,
            // One sigmoid per row of the batch.
            tanh: b,
        }
    }

    fn check(&self) -> Check {
        let acc = self
            .test
            .model()
            .map(|m| {
                let correct = (0..m.len())
                    .filter(|&i| (m.margin(&self.theta, i) >= 0.0) == (self.test.y[i] > 0.0))
                    .count();
                correct as f64 / m.len() as f64
            })
            .unwrap_or(f64::NAN);
        Check {
            name: "test_accuracy".into(),
            value: vec![acc],
        }
    }

    fn data(&self) -> String {
        self.source.clone()
    }
}

/// The mixture workload's step size.
const GMM_EPS: f32 = 0.01;

/// The §5.1 mixture workload.
#[derive(Debug)]
pub struct Gmm {
    x: Vec<f32>,
    theta: [f32; 2],
    scratch: [f32; Sgld::scratch_len(2)],
    rng: DefaultRng,
    sum: [f64; 2],
    count: u64,
}

/// The mixture's data: 100 points from `½N(θ₁, 2) + ½N(θ₁ + θ₂, 2)` at `θ = (0, 1)`.
pub fn gmm_data() -> Vec<f32> {
    let mut rng = DefaultRng::seed_from_u64(SEED + 1);
    let mut z = vec![0.0f32; 100];
    fill_normal(&mut rng, &mut z);
    z.iter()
        .map(|&v| {
            let mean = if rng.next_u64() >> 63 == 0 { 0.0 } else { 1.0 };
            mean + std::f32::consts::SQRT_2 * v
        })
        .collect()
}

impl Gmm {
    /// The workload on [`gmm_data`].
    pub fn new() -> Self {
        Self {
            x: gmm_data(),
            theta: [0.0; 2],
            scratch: [0.0; Sgld::scratch_len(2)],
            rng: DefaultRng::seed_from_u64(SEED),
            sum: [0.0; 2],
            count: 0,
        }
    }
}

impl Default for Gmm {
    fn default() -> Self {
        Self::new()
    }
}

impl Workload for Gmm {
    fn name(&self) -> &'static str {
        "gmm"
    }

    fn run(&mut self, steps: u64) -> Result<Duration, String> {
        let model = TiedMixture::paper(&self.x).map_err(|e| e.to_string())?;
        let est = MiniBatch::new(&model);
        let mut state =
            Sgld::init(&mut self.theta, &mut self.scratch).map_err(|e| e.to_string())?;
        let sampler = Sgld::new();
        let mut batch = [0usize; 1];
        let (mut s0, mut s1) = (0.0f64, 0.0f64);
        let t0 = Instant::now();
        for _ in 0..steps {
            sample_batch(&mut self.rng, self.x.len(), &mut batch).map_err(|e| e.to_string())?;
            sampler
                .step(&mut state, &est, &batch, GMM_EPS, &mut self.rng)
                .map_err(|e| e.to_string())?;
            let t = state.theta();
            s0 += t[0] as f64;
            s1 += t[1] as f64;
        }
        let elapsed = t0.elapsed();
        self.sum[0] += s0;
        self.sum[1] += s1;
        self.count += steps;
        Ok(elapsed)
    }

    fn ops(&self) -> Ops {
        Ops {
            normals: 2.0,
            gathers: 0.0,
            fmas_f32: 6.0,
            fmas_f64: 2.0,
            // The batch's one responsibility, a sigmoid.
            tanh: 1.0,
        }
    }

    fn chain_ns(&self) -> Option<f64> {
        // Twenty runs of 100,000 steps (about 3 ms each), the best.
        Some(MixtureChain::new(&self.x, GMM_EPS, SEED).ns_per_step(20, 100_000))
    }

    fn check(&self) -> Check {
        let c = self.count.max(1) as f64;
        Check {
            name: "posterior_mean".into(),
            value: vec![self.sum[0] / c, self.sum[1] / c],
        }
    }

    fn data(&self) -> String {
        "100 points from the §5.1 model at θ = (0, 1) (gmm.csv with --data-out)".into()
    }
}

/// The ICA workload.
#[derive(Debug)]
pub struct IcaBench {
    x: Vec<f32>,
    mixing: Vec<f64>,
    w: Vec<f64>,
    scratch: Vec<f64>,
    batch: [usize; 100],
    rng: DefaultRng,
    eps: f64,
}

/// ICA dimension and rows.
pub(super) const ICA_D: usize = 10;
const ICA_N: usize = 5000;

/// The ICA data (`n × 10`, row-major) and its mixing matrix `I + G/√10`: Laplace
/// sources of unit variance.
pub fn ica_data() -> (Vec<f32>, Vec<f64>) {
    let (d, n) = (ICA_D, ICA_N);
    let mut rng = DefaultRng::seed_from_u64(SEED + 2);
    let mut g = vec![0.0f32; d * d];
    fill_normal(&mut rng, &mut g);
    let a: Vec<f64> = (0..d * d)
        .map(|k| f64::from(u8::from(k / d == k % d)) + g[k] as f64 / (d as f64).sqrt())
        .collect();
    let mut x = vec![0.0f32; n * d];
    let mut s = [0.0f64; ICA_D];
    for row in x.chunks_exact_mut(d) {
        for v in s.iter_mut() {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            *v = -u.signum() * (1.0 - 2.0 * u.abs()).max(1e-300).ln() / 2f64.sqrt();
        }
        for (r, out) in row.iter_mut().enumerate() {
            *out = (0..d).map(|c| a[r * d + c] * s[c]).sum::<f64>() as f32;
        }
    }
    (x, a)
}

impl IcaBench {
    /// The workload on [`ica_data`], W₀ = I.
    pub fn new() -> Self {
        let (x, mixing) = ica_data();
        let d = ICA_D;
        Self {
            x,
            mixing,
            w: (0..d * d)
                .map(|k| f64::from(u8::from(k / d == k % d)))
                .collect(),
            scratch: vec![0.0; Ica::scratch_len(d)],
            batch: [0; 100],
            rng: DefaultRng::seed_from_u64(SEED),
            eps: 0.1 / ICA_N as f64,
        }
    }
}

impl Default for IcaBench {
    fn default() -> Self {
        Self::new()
    }
}

impl Workload for IcaBench {
    fn name(&self) -> &'static str {
        "ica"
    }

    fn run(&mut self, steps: u64) -> Result<Duration, String> {
        let ica = Ica::new(&self.x, ICA_D, 1.0).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        for _ in 0..steps {
            sample_batch(&mut self.rng, ICA_N, &mut self.batch).map_err(|e| e.to_string())?;
            let ok = ica
                .sgld_step(
                    &mut self.w,
                    &self.batch,
                    self.eps,
                    &mut self.rng,
                    &mut self.scratch,
                )
                .map_err(|e| e.to_string())?;
            black_box(ok);
        }
        Ok(t0.elapsed())
    }

    fn ops(&self) -> Ops {
        let (d, b) = (ICA_D as f64, 100.0);
        Ops {
            normals: d * d,
            gathers: 0.0,
            // y = W·x and Σ tanh(y/2)·yᵀ over the batch, and the prior's W·Wᵀ with it, in
            // f32; the step's one product (½ε(A − λWWᵀ + γI) + η)·W in f64.
            fmas_f32: 2.0 * b * d * d + d * d * d,
            fmas_f64: d * d * d,
            // tanh(y/2) of every y.
            tanh: b * d,
        }
    }

    fn check(&self) -> Check {
        Check {
            name: "amari_distance".into(),
            value: vec![crate::ica_tools::amari_distance(
                &self.w,
                &self.mixing,
                ICA_D,
            )],
        }
    }

    fn data(&self) -> String {
        "5000 x 10 Laplace sources mixed by I + G/sqrt(10) (ica.csv with --data-out)".into()
    }
}

/// The noise workload: 65,536 normals per fill.
#[derive(Debug)]
pub struct Noise {
    out: Vec<f32>,
    rng: DefaultRng,
    sum: f64,
    sum_sq: f64,
    count: f64,
}

const NOISE_LEN: usize = 1 << 16;

impl Noise {
    /// The workload.
    pub fn new() -> Self {
        Self {
            out: vec![0.0; NOISE_LEN],
            rng: DefaultRng::seed_from_u64(SEED),
            sum: 0.0,
            sum_sq: 0.0,
            count: 0.0,
        }
    }
}

impl Default for Noise {
    fn default() -> Self {
        Self::new()
    }
}

impl Workload for Noise {
    fn name(&self) -> &'static str {
        "noise"
    }

    fn unit(&self) -> &'static str {
        "normal"
    }

    /// `steps` normals, rounded up to whole fills.
    fn run(&mut self, steps: u64) -> Result<Duration, String> {
        let fills = steps.div_ceil(NOISE_LEN as u64);
        let t0 = Instant::now();
        for _ in 0..fills {
            fill_normal(&mut self.rng, &mut self.out);
            black_box(&mut self.out);
        }
        let elapsed = t0.elapsed();
        self.sum += self.out.iter().map(|&v| v as f64).sum::<f64>();
        self.sum_sq += self
            .out
            .iter()
            .map(|&v| (v as f64) * (v as f64))
            .sum::<f64>();
        self.count += NOISE_LEN as f64;
        // Report per normal as if exactly `steps` were drawn.
        Ok(elapsed.mul_f64(steps as f64 / (fills * NOISE_LEN as u64) as f64))
    }

    fn ops(&self) -> Ops {
        Ops {
            normals: 1.0,
            ..Ops::default()
        }
    }

    fn check(&self) -> Check {
        let m = self.sum / self.count;
        Check {
            name: "mean_and_variance_of_last_fills".into(),
            value: vec![m, self.sum_sq / self.count - m * m],
        }
    }

    fn data(&self) -> String {
        "f32 standard normals, 65536 per fill".into()
    }
}
