//! `sgld bench`: whole-workload timings, the machine's measured peaks, and each
//! workload's floor.
//!
//! # Workloads (one core, f32 unless noted)
//!
//! * `a9a`: SGLD on the §5.2 logistic regression (Laplace(1) prior, 123 binary features
//!   plus a bias, batch 10 drawn uniformly with replacement, constant ε = 0.1/N, θ₀ = 0).
//!   The real a9a from the data directory when present, otherwise a synthetic set of the
//!   same shape (32,561 rows, 14 non-zeros per row). Check: test accuracy of the last θ.
//! * `gmm`: SGLD on the §5.1 tied mixture, batch 1, 100 points drawn from the model at
//!   θ = (0, 1), constant ε = 0.01. Check: the mean of θ over the timed steps.
//! * `ica`: natural-gradient SGLD for ICA (§5.3, eq. 16 with the drift correction;
//!   f64 matrices), 10 × 10, batch 100, 5,000 rows of Laplace sources mixed by
//!   `I + G/√10`, constant ε = 0.1/N. Check: the Amari distance of the last W.
//! * `noise`: standard normals, 65,536 at a time; the unit is one normal.
//!
//! Each step includes drawing its mini-batch. A workload runs repeats of a fixed number
//! of steps (chosen so the eleven repeats take about `--seconds`) on one continuing
//! chain; the report gives the median and the minimum ns per step over the repeats.
//!
//! # Floors
//!
//! The machine's peaks are measured first: normals per ns of the noise kernel alone
//! (4,096 at a time, in L1), gathers per ns of the sparse dot product (random indices
//! into an L1-resident vector), and FMAs per ns of a compute-bound kernel (eight
//! independent vector multiply-add chains; f32 and f64). A workload's floor is the sum
//! of its operation counts at those peaks: the normals it must draw, the gathers and
//! scatters of its sparse rows, and the FMAs of its dense arithmetic (the Langevin
//! update `θ + (ε/2)g + √ε z` and the prior: 3 per parameter; for ICA also `Wx` and
//! the outer products of the batch, `AW`, `W(WᵀW)`, `WᵀW` and `η·√(WᵀW)`). What the floor
//! leaves out is the cost of transcendental functions (the sigmoid, tanh) and of
//! memory latency, so `ratio = ns / floor` says how far a workload is from its pure
//! arithmetic.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use rand_core::{Rng, SeedableRng};
use serde::Serialize;
use sgld::Sgld;
use sgld::gradient::{MiniBatch, sample_batch};
use sgld::ica::Ica;
use sgld::kernels::simd;
use sgld::models::{Laplace, LogisticSparse, Model, SparseRows, TiedMixture};
use sgld::noise::{DefaultRng, fill_normal};

use crate::data::{Dataset, Features, libsvm};

/// The workloads `sgld bench` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    /// SGLD on a9a logistic regression (d = 124, batch 10).
    A9a,
    /// SGLD on the §5.1 mixture (d = 2, batch 1).
    Gmm,
    /// Natural-gradient SGLD for 10 × 10 ICA (batch 100).
    Ica,
    /// Standard normal noise.
    Noise,
    /// All of the above.
    All,
}

impl WorkloadKind {
    /// The workloads this choice stands for.
    pub fn expand(self) -> Vec<WorkloadKind> {
        match self {
            Self::All => vec![Self::A9a, Self::Gmm, Self::Ica, Self::Noise],
            k => vec![k],
        }
    }
}

/// Operation counts of one step (or one unit) of a workload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Ops {
    /// Standard normals drawn.
    pub normals: f64,
    /// Sparse gathers and scatter-adds.
    pub gathers: f64,
    /// f32 fused multiply-adds.
    pub fmas_f32: f64,
    /// f64 fused multiply-adds.
    pub fmas_f64: f64,
}

/// The machine's measured peaks (best of the repeats).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Peaks {
    /// Normals per ns of the noise kernel alone.
    pub normals_per_ns: f64,
    /// Sparse gathers per ns (L1-resident).
    pub gathers_per_ns: f64,
    /// f32 FMAs per ns.
    pub fmas_f32_per_ns: f64,
    /// f64 FMAs per ns.
    pub fmas_f64_per_ns: f64,
}

impl Peaks {
    /// The floor of `ops` at these peaks, in ns.
    pub fn floor_ns(&self, ops: &Ops) -> f64 {
        ops.normals / self.normals_per_ns
            + ops.gathers / self.gathers_per_ns
            + ops.fmas_f32 / self.fmas_f32_per_ns
            + ops.fmas_f64 / self.fmas_f64_per_ns
    }
}

/// A sanity figure each implementation prints, so a fast but wrong run shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What the value is.
    pub name: String,
    /// The values.
    pub value: Vec<f64>,
}

/// One workload's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadResult {
    /// Workload name.
    pub name: String,
    /// What one unit is (`step` or `normal`).
    pub unit: String,
    /// Median ns per unit over the repeats.
    pub ns_median: f64,
    /// Minimum ns per unit over the repeats.
    pub ns_min: f64,
    /// Repeats timed.
    pub repeats: usize,
    /// Units per repeat.
    pub units_per_repeat: u64,
    /// Operation counts per unit.
    pub ops: Ops,
    /// The floor in ns per unit (null for peers, which do not measure peaks).
    pub floor_ns: Option<f64>,
    /// `ns_median / floor_ns`.
    pub floor_ratio: Option<f64>,
    /// Sanity figure.
    pub check: Check,
    /// Where the data came from.
    pub data: String,
}

/// The report `sgld bench --json` prints (the peers print the same shape).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `sgld` (or the peer's name).
    pub implementation: String,
    /// The crate version.
    pub version: String,
    /// The CPU the run was on (from /proc/cpuinfo where available).
    pub cpu: String,
    /// The target features the binary was compiled with.
    pub cpu_features: Vec<String>,
    /// The measured peaks.
    pub peaks: Option<Peaks>,
    /// The workloads.
    pub workloads: Vec<WorkloadResult>,
}

/// The SIMD-relevant target features the binary was compiled with.
pub fn compiled_features() -> Vec<String> {
    let mut f = Vec::new();
    macro_rules! feat {
        ($($name:tt),*) => {$(
            if cfg!(target_feature = $name) {
                f.push($name.to_string());
            }
        )*};
    }
    feat!(
        "sse2", "sse4.1", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl",
        "neon"
    );
    if sgld::kernels::FORCE_SCALAR {
        f.push("sgld_force_scalar".into());
    }
    f
}

/// The CPU model name, if the OS says.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// A workload: set up once, then timed in repeats of `steps` units on one chain.
pub trait Workload {
    /// The name in the report.
    fn name(&self) -> &'static str;
    /// `step` or `normal`.
    fn unit(&self) -> &'static str {
        "step"
    }
    /// Runs `steps` units and returns the time the loop took. Allocates nothing.
    fn run(&mut self, steps: u64) -> Result<Duration, String>;
    /// Operation counts per unit.
    fn ops(&self) -> Ops;
    /// The sanity figure after the runs.
    fn check(&self) -> Check;
    /// Where the data came from.
    fn data(&self) -> String;
}

/// Seed of every workload's chain.
const SEED: u64 = 20111;

// ---------------------------------------------------------------- a9a

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

#[derive(Debug)]
struct SparseData {
    offsets: Vec<usize>,
    indices: Vec<u32>,
    y: Vec<f32>,
    d: usize,
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
        Ok(Self {
            offsets,
            indices,
            y: data.y,
            d,
        })
    }

    /// `n` rows of 13 random features of 123 and the bias, labels drawn from the logistic
    /// model at `beta`.
    fn synthetic(n: usize, beta: &[f32], rng: &mut DefaultRng) -> Self {
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
        Self {
            offsets,
            indices,
            y,
            d,
        }
    }

    fn rows(&self) -> Result<SparseRows<'_>, String> {
        SparseRows::new(&self.offsets, &self.indices, self.d).map_err(|e| e.to_string())
    }

    fn mean_nnz(&self) -> f64 {
        self.indices.len() as f64 / self.y.len() as f64
    }
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
                    SparseData::synthetic(32_561, &beta, &mut rng),
                    SparseData::synthetic(16_281, &beta, &mut rng),
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
        let prior = Laplace::new(1.0).map_err(|e| e.to_string())?;
        let rows = SparseRows::new(&self.train.offsets, &self.train.indices, self.train.d)
            .map_err(|e| e.to_string())?;
        let model = LogisticSparse::new(rows, &self.train.y, prior).map_err(|e| e.to_string())?;
        let est = MiniBatch::new(&model);
        let n = model.len();
        let mut state =
            Sgld::init(&mut self.theta, &mut self.scratch).map_err(|e| e.to_string())?;
        let sampler = Sgld::new();
        let t0 = Instant::now();
        for _ in 0..steps {
            sample_batch(&mut self.rng, n, &mut self.batch).map_err(|e| e.to_string())?;
            let info = sampler
                .step(&mut state, &est, &self.batch, self.eps, &mut self.rng)
                .map_err(|e| e.to_string())?;
            black_box(info);
        }
        Ok(t0.elapsed())
    }

    fn ops(&self) -> Ops {
        let d = self.train.d as f64;
        Ops {
            normals: d,
            gathers: 2.0 * 10.0 * self.train.mean_nnz(),
            fmas_f32: 3.0 * d,
            fmas_f64: 0.0,
        }
    }

    fn check(&self) -> Check {
        let acc = self
            .test
            .rows()
            .map(|rows| {
                let correct = (0..rows.len())
                    .filter(|&i| {
                        let z = simd::sparse_dot(rows.row(i), &self.theta);
                        (z >= 0.0) == (self.test.y[i] > 0.0)
                    })
                    .count();
                correct as f64 / rows.len() as f64
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

// ---------------------------------------------------------------- gmm

/// The §5.1 mixture workload.
#[derive(Debug)]
pub struct Gmm {
    x: Vec<f32>,
    theta: [f32; 2],
    scratch: [f32; 4],
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
            scratch: [0.0; 4],
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
            sample_batch(&mut self.rng, 100, &mut batch).map_err(|e| e.to_string())?;
            sampler
                .step(&mut state, &est, &batch, 0.01, &mut self.rng)
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
        }
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

// ---------------------------------------------------------------- ica

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
const ICA_D: usize = 10;
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
            fmas_f32: 0.0,
            fmas_f64: b * 2.0 * d * d + 5.0 * d * d * d,
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

// ---------------------------------------------------------------- noise

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

// ---------------------------------------------------------------- peaks

/// Times `f` (which does `units` units) `repeats` times; the best ns per unit.
fn best_ns_per_unit(repeats: usize, units: f64, mut f: impl FnMut()) -> f64 {
    f();
    (0..repeats)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_nanos() as f64 / units
        })
        .fold(f64::INFINITY, f64::min)
}

/// Measures the machine's peaks (about a second). The FMA kernels run first, so the
/// core is at its working clock when the noise and gathers are timed.
pub fn measure_peaks() -> Peaks {
    let fma32 = 1.0
        / best_ns_per_unit(20, FMA_ITERS as f64 * 8.0 * 16.0, || {
            black_box(fma_kernel_f32(black_box(1.0)));
        });
    let fma64 = 1.0
        / best_ns_per_unit(20, FMA_ITERS as f64 * 8.0 * 8.0, || {
            black_box(fma_kernel_f64(black_box(1.0)));
        });
    let mut rng = DefaultRng::seed_from_u64(SEED);
    let mut buf = vec![0.0f32; 4096];
    let normals = 1.0
        / best_ns_per_unit(50, 64.0 * 4096.0, || {
            for _ in 0..64 {
                fill_normal(&mut rng, &mut buf);
                black_box(&mut buf);
            }
        });
    let w = buf[..124].to_vec();
    let idx: Vec<u32> = (0..4096).map(|_| (rng.next_u64() % 124) as u32).collect();
    let gathers = 1.0
        / best_ns_per_unit(50, 64.0 * 4096.0, || {
            for _ in 0..64 {
                black_box(simd::sparse_dot(black_box(&idx), black_box(&w)));
            }
        });
    Peaks {
        normals_per_ns: normals,
        gathers_per_ns: gathers,
        fmas_f32_per_ns: fma32,
        fmas_f64_per_ns: fma64,
    }
}

const FMA_ITERS: usize = 100_000;

/// Eight independent chains of 16-lane f32 FMAs (enough to cover the FMA latency on
/// two pipes).
fn fma_kernel_f32(seed: f32) -> f32 {
    use wide::f32x16;
    let a = f32x16::splat(0.999_999);
    let b = f32x16::splat(1e-7);
    let mut acc = [f32x16::splat(seed); 8];
    for _ in 0..FMA_ITERS {
        for v in acc.iter_mut() {
            *v = v.mul_add(a, b);
        }
    }
    acc.iter().fold(f32x16::ZERO, |s, v| s + *v).reduce_add()
}

/// Eight independent chains of 8-lane f64 FMAs.
fn fma_kernel_f64(seed: f64) -> f64 {
    use wide::f64x8;
    let a = f64x8::splat(0.999_999);
    let b = f64x8::splat(1e-7);
    let mut acc = [f64x8::splat(seed); 8];
    for _ in 0..FMA_ITERS {
        for v in acc.iter_mut() {
            *v = v.mul_add(a, b);
        }
    }
    acc.iter().fold(f64x8::ZERO, |s, v| s + *v).reduce_add()
}

// ---------------------------------------------------------------- driver

/// Timed repeats per workload (odd, so the median is one of them).
const REPEATS: usize = 11;

/// Times one workload for about `seconds`: a calibration run, then eleven repeats of
/// a fixed number of units.
pub fn time_workload(
    w: &mut dyn Workload,
    seconds: f64,
    peaks: Option<&Peaks>,
) -> Result<WorkloadResult, String> {
    // Calibrate: grow the step count until a run takes ≥ 20 ms.
    let mut units = 64u64;
    let per_unit = loop {
        let t = w.run(units)?.as_secs_f64();
        if t >= 0.02 || units >= 1 << 40 {
            break t / units as f64;
        }
        units *= 4;
    };
    let repeats = REPEATS;
    let per_repeat = ((seconds / repeats as f64) / per_unit.max(1e-12)).max(1.0) as u64;
    let mut ns: Vec<f64> = (0..repeats)
        .map(|_| {
            w.run(per_repeat)
                .map(|t| t.as_nanos() as f64 / per_repeat as f64)
        })
        .collect::<Result<_, _>>()?;
    ns.sort_by(f64::total_cmp);
    let median = if repeats % 2 == 1 {
        ns[repeats / 2]
    } else {
        0.5 * (ns[repeats / 2 - 1] + ns[repeats / 2])
    };
    let ops = w.ops();
    let floor = peaks.map(|p| p.floor_ns(&ops));
    Ok(WorkloadResult {
        name: w.name().into(),
        unit: w.unit().into(),
        ns_median: median,
        ns_min: ns[0],
        repeats,
        units_per_repeat: per_repeat,
        ops,
        floor_ns: floor,
        floor_ratio: floor.map(|f| median / f),
        check: w.check(),
        data: w.data(),
    })
}

/// Builds a workload.
pub fn workload(kind: WorkloadKind, data_dir: Option<&Path>) -> Result<Box<dyn Workload>, String> {
    Ok(match kind {
        WorkloadKind::A9a => Box::new(A9a::new(data_dir)?),
        WorkloadKind::Gmm => Box::new(Gmm::new()),
        WorkloadKind::Ica => Box::new(IcaBench::new()),
        WorkloadKind::Noise => Box::new(Noise::new()),
        WorkloadKind::All => return Err("`all` is not one workload".into()),
    })
}

/// Runs the chosen workloads, `seconds` each, with the peaks measured first.
pub fn run(kind: WorkloadKind, seconds: f64, data_dir: Option<&Path>) -> Result<Report, String> {
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("--seconds must be positive, got {seconds}"));
    }
    let peaks = measure_peaks();
    let workloads = kind
        .expand()
        .into_iter()
        .map(|k| time_workload(workload(k, data_dir)?.as_mut(), seconds, Some(&peaks)))
        .collect::<Result<_, _>>()?;
    Ok(Report {
        implementation: "sgld".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        cpu: cpu_name(),
        cpu_features: compiled_features(),
        peaks: Some(peaks),
        workloads,
    })
}

/// Writes the synthetic workloads' data for the peers: `gmm.csv` (one column `x`),
/// `ica.csv` (ten columns, no header) and its mixing matrix `ica_mixing.csv`.
pub fn write_data(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut gmm = String::from("x\n");
    for v in gmm_data() {
        gmm.push_str(&format!("{v:e}\n"));
    }
    let (x, mixing) = ica_data();
    let mut ica = String::new();
    for row in x.chunks_exact(ICA_D) {
        let cells: Vec<String> = row.iter().map(|v| format!("{v:e}")).collect();
        ica.push_str(&cells.join(","));
        ica.push('\n');
    }
    let mut a = String::new();
    for row in mixing.chunks_exact(ICA_D) {
        let cells: Vec<String> = row.iter().map(|v| format!("{v:e}")).collect();
        a.push_str(&cells.join(","));
        a.push('\n');
    }
    for (name, text) in [("gmm.csv", gmm), ("ica.csv", ica), ("ica_mixing.csv", a)] {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// The report as a Markdown table.
pub fn table(r: &Report) -> String {
    let mut s = format!(
        "sgld {} on {} (compiled for: {})\n\n",
        r.version,
        r.cpu,
        r.cpu_features.join(" ")
    );
    if let Some(p) = &r.peaks {
        s += &format!(
            "peaks: {:.2} normals/ns, {:.2} gathers/ns, {:.1} f32 FMAs/ns, {:.1} f64 FMAs/ns\n\n",
            p.normals_per_ns, p.gathers_per_ns, p.fmas_f32_per_ns, p.fmas_f64_per_ns
        );
    }
    s += "| workload | ns per | median | min | floor | median / floor | check |\n";
    s += "|---|---|---|---|---|---|---|\n";
    for w in &r.workloads {
        let check: Vec<String> = w.check.value.iter().map(|v| format!("{v:.4}")).collect();
        s += &format!(
            "| {} | {} | {:.2} | {:.2} | {} | {} | {} {} |\n",
            w.name,
            w.unit,
            w.ns_median,
            w.ns_min,
            w.floor_ns.map_or("–".into(), |f| format!("{f:.2}")),
            w.floor_ratio.map_or("–".into(), |f| format!("{f:.1}")),
            w.check.name,
            check.join(", ")
        );
    }
    s
}
