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
//! into an L1-resident vector), FMAs per ns of a compute-bound kernel (eight
//! independent vector multiply-add chains; f32 and f64), and `tanh(y/2)` per ns of the
//! f32 kernel alone (4,096 at a time, in L1). A workload's floor is the sum of its
//! operation counts at those peaks: the normals it must draw, the gathers and scatters
//! of its sparse rows, the FMAs of its dense arithmetic (the Langevin update
//! `θ + (ε/2)g + √ε z` and the prior: 3 per parameter; for ICA `Wx` and the outer
//! products `tanh(y/2)·yᵀ` of the batch with the prior's `WWᵀ` in f32, and the one
//! product `(½ε(A − λWWᵀ + γI) + η)·W` that makes the step in f64), and its `tanh` and sigmoid
//! evaluations (one sigmoid per a9a row, one per mixture step, a `tanh` per ICA `y`).
//! That is the `ops_floor_ns` of the report. It counts throughput, not latency: a step
//! that cannot start before the last one ends is bound by its chain of dependent
//! operations instead. The mixture is such a
//! step (θₜ₊₁ needs the gradient at θₜ: an `exp` and a division), so its workload also
//! times that chain alone ([`MixtureChain`]: its arithmetic with θ in registers, no
//! checks, no scratch), as `chain_ns`. A workload's `floor_ns` is the larger of the two,
//! and `floor_ratio = ns_median / floor_ns`. What the floor still leaves out is memory
//! latency (the batch's rows are drawn at random) and bookkeeping (the checks of input
//! and result, the batch's indices), so the ratio says how far a workload is from its
//! arithmetic.

mod chain;
mod peaks;
mod workloads;

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

pub use chain::MixtureChain;
pub use peaks::measure_peaks;
use workloads::ICA_D;
pub use workloads::{A9a, Gmm, IcaBench, Noise, gmm_data, ica_data, synthetic_a9a};

/// The workloads `sgld bench` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
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
    /// `tanh` or sigmoid evaluations (a sigmoid is a `tanh`: `σ(z) = (1 + tanh(z/2))/2`).
    pub tanh: f64,
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
    /// `tanh(y/2)` per ns of the f32 kernel alone.
    pub tanh_per_ns: f64,
}

impl Peaks {
    /// The floor of `ops` at these peaks, in ns.
    pub fn floor_ns(&self, ops: &Ops) -> f64 {
        ops.normals / self.normals_per_ns
            + ops.gathers / self.gathers_per_ns
            + ops.fmas_f32 / self.fmas_f32_per_ns
            + ops.fmas_f64 / self.fmas_f64_per_ns
            + ops.tanh / self.tanh_per_ns
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
    /// The operation counts at the peaks, in ns per unit (null for peers, which do not
    /// measure peaks).
    pub ops_floor_ns: Option<f64>,
    /// The measured latency of the step's chain of dependent arithmetic alone, in ns
    /// (null where a workload does not time one).
    pub chain_ns: Option<f64>,
    /// The floor in ns per unit: the larger of `ops_floor_ns` and `chain_ns` (null for
    /// peers).
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
    /// The ns per unit of the unit's chain of dependent arithmetic alone, for a workload
    /// bound by latency rather than throughput (timed when asked; none by default).
    fn chain_ns(&self) -> Option<f64> {
        None
    }
    /// The sanity figure after the runs.
    fn check(&self) -> Check;
    /// Where the data came from.
    fn data(&self) -> String;
}

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
    let ops_floor = peaks.map(|p| p.floor_ns(&ops));
    let chain = peaks.and_then(|_| w.chain_ns());
    let floor = ops_floor.map(|f| chain.map_or(f, |c| f.max(c)));
    Ok(WorkloadResult {
        name: w.name().into(),
        unit: w.unit().into(),
        ns_median: median,
        ns_min: ns[0],
        repeats,
        units_per_repeat: per_repeat,
        ops,
        ops_floor_ns: ops_floor,
        chain_ns: chain,
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
            "peaks: {:.2} normals/ns, {:.2} gathers/ns, {:.1} f32 FMAs/ns, {:.1} f64 FMAs/ns, \
             {:.2} tanh/ns\n\n",
            p.normals_per_ns, p.gathers_per_ns, p.fmas_f32_per_ns, p.fmas_f64_per_ns, p.tanh_per_ns
        );
    }
    s += "| workload | ns per | median | min | ops floor | chain | floor | median / floor | check |\n";
    s += "|---|---|---|---|---|---|---|---|---|\n";
    for w in &r.workloads {
        let check: Vec<String> = w.check.value.iter().map(|v| format!("{v:.4}")).collect();
        s += &format!(
            "| {} | {} | {:.2} | {:.2} | {} | {} | {} | {} | {} {} |\n",
            w.name,
            w.unit,
            w.ns_median,
            w.ns_min,
            w.ops_floor_ns.map_or("–".into(), |f| format!("{f:.2}")),
            w.chain_ns.map_or("–".into(), |f| format!("{f:.2}")),
            w.floor_ns.map_or("–".into(), |f| format!("{f:.2}")),
            w.floor_ratio.map_or("–".into(), |f| format!("{f:.1}")),
            w.check.name,
            check.join(", ")
        );
    }
    s
}
