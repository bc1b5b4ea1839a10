//! Nado et al.: K-FAC preconditioned SGLD for a one-hidden-layer network — Boston housing
//! (Figures 2a–2b and the test log-likelihood beside the paper's), the same protocol on
//! the other UCI regression sets of PBP (a table per data set), and the 1-D toy of
//! Figure 1.
//!
//! Protocol (theirs where given): width 50 with ReLU, batch 32, burn-in 300 steps, then
//! 10 samples thinned every 100 steps; the 20 standard train/test splits, inputs and
//! targets standardised with training statistics. Ours where not given: the prior
//! `N(0, 1/fan-in)` on every weight, the noise precision learned with PBP's `Gamma(6, 6)` prior,
//! K-FAC decay 0.95 with the factors refreshed every 10 steps, and each sampler's step
//! size chosen once per data set from the grid of `sgld sample --model mlp` by the
//! validation log-likelihood on the last
//! 10% of split 0's training rows. Test log-likelihoods are of the posterior predictive
//! (the mean over the 10 samples of `N(y; f(x), 1/λ)`), in the original units.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use rand_core::SeedableRng;
use rayon::prelude::*;
use sgld::ChainState;
use sgld::gradient::{MiniBatch, sample_batch};
use sgld::models::{Mlp, Model, Noise};
use sgld::noise::{DefaultRng, fill_normal};
use sgld::sampler::Sampler;

use super::Context;
use crate::plot::{self, Panel, Series};
use crate::sample::samplers::{self, Inputs, Visit};
use crate::sample::{SampleOptions, SamplerKind, chain_seed, network};

const WIDTH: usize = 50;
const BATCH: usize = 32;
const BURN_IN: usize = 300;
const THIN: usize = 100;
const KEEP: usize = 10;
const STEPS: usize = BURN_IN + THIN * KEEP;

/// Burn-in, thinning and kept samples of a run.
#[derive(Debug, Clone, Copy)]
struct Protocol {
    burn_in: usize,
    thin: usize,
    keep: usize,
}

impl Protocol {
    const PAPER: Protocol = Protocol {
        burn_in: BURN_IN,
        thin: THIN,
        keep: KEEP,
    };
    fn steps(&self) -> usize {
        self.burn_in + self.thin * self.keep
    }
}
/// How often the test log-likelihood is recorded along the run (Figure 2b).
const EVAL_EVERY: usize = 50;

/// The samplers compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Sgld,
    Psgld,
    Kfac,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Sgld => "SGLD",
            Method::Psgld => "pSGLD",
            Method::Kfac => "K-FAC SGLD",
        }
    }
    fn kind(self) -> SamplerKind {
        match self {
            Method::Sgld => SamplerKind::Sgld,
            Method::Psgld => SamplerKind::Psgld,
            Method::Kfac => SamplerKind::Kfac,
        }
    }
}

/// A standardised regression split.
struct Split {
    x: Vec<f32>,
    y: Vec<f32>,
    x_test: Vec<f32>,
    y_test: Vec<f32>,
    d: usize,
    /// Target sd of the training rows (to report in original units).
    y_sd: f64,
}

/// A UCI data set in the PBP layout: `data.txt`, feature and target columns, splits.
struct Uci {
    rows: Vec<Vec<f64>>,
    features: Vec<usize>,
    target: usize,
    dir: std::path::PathBuf,
}

fn read_numbers(path: &Path) -> Result<Vec<Vec<f64>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            l.split_whitespace()
                .map(|t| {
                    t.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| {
                            format!(
                                "{}: line {}: {t:?} is not a finite number",
                                path.display(),
                                i + 1
                            )
                        })
                })
                .collect()
        })
        .collect()
}

fn read_indices(path: &Path) -> Result<Vec<usize>, String> {
    read_numbers(path)?
        .into_iter()
        .map(|r| match r.as_slice() {
            [v] if *v >= 0.0 && v.fract() == 0.0 => Ok(*v as usize),
            _ => Err(format!("{}: expected one index per line", path.display())),
        })
        .collect()
}

impl Uci {
    fn load(dir: &Path) -> Result<Self, String> {
        let rows = read_numbers(&dir.join("data.txt"))?;
        let features = read_indices(&dir.join("index_features.txt"))?;
        let target = *read_indices(&dir.join("index_target.txt"))?
            .first()
            .ok_or("empty index_target.txt")?;
        let width = rows.first().map_or(0, Vec::len);
        if rows.iter().any(|r| r.len() != width)
            || features.iter().chain([&target]).any(|&c| c >= width)
        {
            return Err(format!(
                "{}: ragged data or a column index out of range",
                dir.display()
            ));
        }
        Ok(Self {
            rows,
            features,
            target,
            dir: dir.to_path_buf(),
        })
    }

    fn n_splits(&self) -> usize {
        (0..)
            .take_while(|i| self.dir.join(format!("index_train_{i}.txt")).is_file())
            .count()
    }

    fn split(&self, i: usize) -> Result<Split, String> {
        let train = read_indices(&self.dir.join(format!("index_train_{i}.txt")))?;
        let test = read_indices(&self.dir.join(format!("index_test_{i}.txt")))?;
        if train.iter().chain(&test).any(|&r| r >= self.rows.len())
            || train.is_empty()
            || test.is_empty()
        {
            return Err(format!(
                "{}: split {i} has an index out of range or is empty",
                self.dir.display()
            ));
        }
        Ok(self.standardised(&train, &test))
    }

    fn standardised(&self, train: &[usize], test: &[usize]) -> Split {
        let d = self.features.len();
        let stats = |c: usize| {
            let n = train.len() as f64;
            let m = train.iter().map(|&r| self.rows[r][c]).sum::<f64>() / n;
            let v = train
                .iter()
                .map(|&r| (self.rows[r][c] - m).powi(2))
                .sum::<f64>()
                / n;
            (m, if v > 0.0 { v.sqrt() } else { 1.0 })
        };
        let fs: Vec<(f64, f64)> = self.features.iter().map(|&c| stats(c)).collect();
        let (ym, ys) = stats(self.target);
        let xs = |rows: &[usize]| -> Vec<f32> {
            rows.iter()
                .flat_map(|&r| {
                    self.features
                        .iter()
                        .zip(&fs)
                        .map(move |(&c, (m, s))| ((self.rows[r][c] - m) / s) as f32)
                })
                .collect()
        };
        let ys_of = |rows: &[usize]| -> Vec<f32> {
            rows.iter()
                .map(|&r| ((self.rows[r][self.target] - ym) / ys) as f32)
                .collect()
        };
        Split {
            x: xs(train),
            y: ys_of(train),
            x_test: xs(test),
            y_test: ys_of(test),
            d,
            y_sd: ys,
        }
    }
}

/// One run's results.
struct RunOut {
    /// Kept samples, `dim` floats each.
    samples: Vec<f32>,
    /// Every post-burn-in iterate of the first 200 parameters (for ESS).
    trace: Vec<Vec<f64>>,
    /// (step, test log-likelihood per datum of the current iterate).
    curve: Vec<(usize, f64)>,
    seconds: f64,
    dim: usize,
}

/// The network of every run (width 50, `σ²_w = 1`, PBP's `Gamma(6, 6)` noise prior) on
/// the rows `x`, `y`.
fn net<'a>(x: &'a [f32], y: &'a [f32], d: usize) -> Result<Mlp<'a>, String> {
    Mlp::new(
        x,
        y,
        d,
        WIDTH,
        1.0,
        Noise::Learned {
            shape: 6.0,
            rate: 6.0,
        },
    )
    .map_err(|e| e.to_string())
}

/// Posterior-predictive log-likelihood per datum and RMSE of the samples (`dim` floats
/// each) on the rows `test` holds, in standardised units ([`network::predictive`] with
/// equal weights).
fn predictive(test: &Mlp<'_>, samples: &[f32]) -> (f64, f64) {
    let draws: Vec<(Vec<f32>, f64)> = samples
        .chunks_exact(test.dim())
        .map(|s| (s.to_vec(), 1.0))
        .collect();
    let t = network::predictive(test, &draws, None);
    (t.log_lik_per_datum, t.rmse.unwrap_or(f64::NAN))
}

/// Runs one sampler on the training rows of `sp` (validation rows excluded by the caller).
#[allow(clippy::too_many_arguments)]
fn run(
    method: Method,
    proto: Protocol,
    x: &[f32],
    y: &[f32],
    d: usize,
    eps: f32,
    seed: u64,
    test: Option<(&[f32], &[f32])>,
) -> Result<RunOut, String> {
    let model = net(x, y, d)?;
    let test_model = test.map(|(xt, yt)| net(xt, yt, d)).transpose()?;
    let dim = model.dim();
    let mut rng = DefaultRng::seed_from_u64(seed);
    // He initialisation for W₁, small output weights, log λ = 0.
    let mut theta = vec![0.0f32; dim];
    fill_normal(&mut rng, &mut theta);
    let he = (2.0 / d as f32).sqrt();
    for (j, t) in theta.iter_mut().enumerate() {
        *t *= if j < WIDTH * (d + 1) { he } else { 0.1 };
    }
    theta[dim - 1] = 0.0;
    let mut out = RunOut {
        samples: Vec::with_capacity(proto.keep * dim),
        trace: vec![Vec::with_capacity(proto.steps() - proto.burn_in); dim.min(200)],
        curve: Vec::new(),
        seconds: 0.0,
        dim,
    };
    let t0 = Instant::now();
    let record = |t: usize, th: &[f32]| {
        if t >= proto.burn_in {
            for (tr, &v) in out.trace.iter_mut().zip(th) {
                tr.push(v as f64);
            }
            if (t + 1 - proto.burn_in).is_multiple_of(proto.thin) {
                out.samples.extend_from_slice(th);
            }
        }
        if let Some(tm) = &test_model
            && (t + 1).is_multiple_of(EVAL_EVERY)
        {
            out.curve.push((t + 1, predictive(tm, th).0));
        }
    };
    // The sampler as `sgld sample --model mlp` builds it (K-FAC's decay 0.95 and refresh
    // every 10 steps, pSGLD's decay 0.99 and λ 1e-5: the defaults are the paper's).
    let options = SampleOptions {
        sampler: method.kind(),
        ..SampleOptions::new(Default::default())
    };
    let steps = Steps {
        model: &model,
        theta: &mut theta,
        rng: &mut rng,
        steps: proto.steps(),
        eps,
        name: method.name(),
        record,
    };
    samplers::build(&options, &Inputs::network(&model), steps)??;
    out.seconds = t0.elapsed().as_secs_f64();
    Ok(out)
}

/// One run's steps with whichever sampler [`samplers::build`] makes: a batch of
/// [`BATCH`] rows a step, `record` called with each step's θ; an error at the first
/// non-finite step.
struct Steps<'r, F> {
    model: &'r Mlp<'r>,
    theta: &'r mut [f32],
    rng: &'r mut DefaultRng,
    steps: usize,
    eps: f32,
    name: &'static str,
    record: F,
}

impl<F: FnMut(usize, &[f32])> Visit for Steps<'_, F> {
    type Out = Result<(), String>;
    fn visit<A: Sampler + Sync>(mut self, sampler: A) -> Self::Out {
        let est = MiniBatch::new(self.model);
        let mut scratch = vec![0.0f32; sampler.scratch_floats(self.theta.len())];
        let mut st = sampler
            .start(self.theta, &mut scratch)
            .map_err(|e| e.to_string())?;
        let (n, mut batch) = (self.model.len(), [0usize; BATCH]);
        for t in 0..self.steps {
            sample_batch(self.rng, n, &mut batch).map_err(|e| e.to_string())?;
            let info = sampler
                .advance(&mut st, &est, &batch, self.eps, self.rng)
                .map_err(|e| e.to_string())?;
            if info.non_finite {
                return Err(format!("{}: non-finite at step {}", self.name, t + 1));
            }
            (self.record)(t, st.theta());
        }
        Ok(())
    }
}

/// The gap to the paper's −2.226, measured from K-FAC's own splits: a Gaussian
/// predictive with one variance scores at most `−½ln(2πe) − ln RMSE` per datum on a
/// split (the variance equal to that split's test MSE), so the predictive means' RMSE
/// bounds what any such noise model could reach.
fn paper_gap(splits: &[(f64, f64)]) -> String {
    let half_ln_2pie = 0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E).ln();
    let ok: Vec<(f64, f64)> = splits.iter().copied().filter(|r| r.0.is_finite()).collect();
    if ok.is_empty() {
        return String::new();
    }
    let n = ok.len() as f64;
    let ll = ok.iter().map(|r| r.0).sum::<f64>() / n;
    let bound = ok.iter().map(|r| -half_ln_2pie - r.1.ln()).sum::<f64>() / n;
    let geo_rmse = (ok.iter().map(|r| r.1.ln()).sum::<f64>() / n).exp();
    let needed = (-(-2.226) - half_ln_2pie).exp();
    format!(
        "Why the paper's −2.226 is higher, measured on these splits: a predictive that is Gaussian with one variance scores at most −½ln(2πe) − ln RMSE per datum on a split, reached with the variance equal to that split's test MSE. With K-FAC's predictive means that bound averages {bound:.3} (the learned noise gives {ll:.3}), so no choice of the noise variance, learned or fixed, closes the gap: −2.226 needs a geometric-mean test RMSE of {needed:.2} or less, and ours is {geo_rmse:.2}. The difference is in the fit of the mean. The paper gives neither its prior, its preprocessing nor its splits, and that is where it has to lie.\n\n"
    )
}

/// Hoffman & Gelman (2014), eq. 13 (as Nado et al. use it): `n / (1 + 2Σₛ ρₛ)`, summing the
/// autocorrelations until the first falls below 0.05.
fn ess_hg(x: &[f64]) -> f64 {
    let n = x.len();
    let ac = crate::diagnostics::autocorrelation(x, n - 1);
    let mut s = 0.0;
    for &r in ac.iter().skip(1) {
        if r < 0.05 {
            break;
        }
        s += r;
    }
    n as f64 / (1.0 + 2.0 * s)
}

/// The step of each method for a data set: the grid value with the best validation
/// log-likelihood (last 10% of split 0's training rows held out).
fn tune(sp: &Split, method: Method, proto: Protocol, seed: u64) -> f32 {
    let n = sp.y.len();
    let n_fit = n - n / 10;
    let (xf, yf) = (&sp.x[..n_fit * sp.d], &sp.y[..n_fit]);
    let (xv, yv) = (&sp.x[n_fit * sp.d..], &sp.y[n_fit..]);
    // The grid of `sgld sample --model mlp --step-size auto`.
    let grid = network::grid(method.kind(), n_fit);
    grid.par_iter()
        .map(|&eps| {
            let score = run(method, proto, xf, yf, sp.d, eps, seed, None)
                .ok()
                .and_then(|r| Some(predictive(&net(xv, yv, sp.d).ok()?, &r.samples).0))
                .filter(|v| v.is_finite())
                .unwrap_or(f64::NEG_INFINITY);
            (eps, score)
        })
        .collect::<Vec<_>>()
        .into_iter()
        .fold((grid[0], f64::NEG_INFINITY), |best, c| {
            if c.1 > best.1 { c } else { best }
        })
        .0
}

/// (step, test log-likelihood per datum) along a run.
type Curve = Vec<(usize, f64)>;

/// One split's run: test log-likelihood and RMSE (original units), its curve, the ESS
/// per parameter and the seconds it took; NaN where it diverged.
struct SplitRun {
    ll: f64,
    rmse: f64,
    curve: Curve,
    ess: Vec<f64>,
    seconds: f64,
}

/// Results of one data set: per method, per split (test LL, RMSE) in original units, and
/// the runs of split 0.
struct SetOut {
    steps: Vec<(Method, f32)>,
    per_split: Vec<(Method, Vec<(f64, f64)>)>,
    curves: Vec<(Method, Vec<Curve>)>,
    ess: Vec<(Method, Vec<f64>)>,
    seconds: Vec<(Method, f64)>,
}

fn run_set(uci: &Uci, methods: &[Method], splits: usize, seed: u64) -> Result<SetOut, String> {
    let sp0 = uci.split(0)?;
    let proto = Protocol::PAPER;
    let steps: Vec<(Method, f32)> = methods
        .iter()
        .map(|&m| (m, tune(&sp0, m, proto, seed)))
        .collect();
    let splits: Vec<Split> = (0..splits)
        .map(|i| uci.split(i))
        .collect::<Result<_, _>>()?;
    let mut out = SetOut {
        steps: steps.clone(),
        per_split: vec![],
        curves: vec![],
        ess: vec![],
        seconds: vec![],
    };
    for &(m, eps) in &steps {
        let runs: Vec<SplitRun> = splits
            .par_iter()
            .enumerate()
            .map(|(i, sp)| -> Result<_, String> {
                let r = run(
                    m,
                    proto,
                    &sp.x,
                    &sp.y,
                    sp.d,
                    eps,
                    chain_seed(seed, i as u64),
                    Some((&sp.x_test, &sp.y_test)),
                )?;
                let (ll, rmse) = predictive(&net(&sp.x_test, &sp.y_test, sp.d)?, &r.samples);
                let ess: Vec<f64> = r.trace.iter().map(|t| ess_hg(t)).collect();
                if !(ll.is_finite() && rmse.is_finite()) {
                    return Err(format!("{}: the predictive is not finite", m.name()));
                }
                Ok(SplitRun {
                    ll: ll - sp.y_sd.ln(),
                    rmse: rmse * sp.y_sd,
                    curve: r
                        .curve
                        .iter()
                        .map(|&(t, v)| (t, v - sp.y_sd.ln()))
                        .collect(),
                    ess,
                    seconds: r.seconds,
                })
            })
            .collect::<Vec<Result<_, String>>>()
            .into_iter()
            // A run that diverges is reported as such, not dropped silently.
            .map(|r| {
                r.unwrap_or(SplitRun {
                    ll: f64::NAN,
                    rmse: f64::NAN,
                    curve: vec![],
                    ess: vec![],
                    seconds: f64::NAN,
                })
            })
            .collect();
        let ok: Vec<&SplitRun> = runs.iter().filter(|r| r.ll.is_finite()).collect();
        out.per_split
            .push((m, runs.iter().map(|r| (r.ll, r.rmse)).collect()));
        out.curves
            .push((m, ok.iter().map(|r| r.curve.clone()).collect()));
        out.ess
            .push((m, ok.first().map(|r| r.ess.clone()).unwrap_or_default()));
        out.seconds.push((
            m,
            ok.iter().map(|r| r.seconds).sum::<f64>() / ok.len().max(1) as f64,
        ));
    }
    Ok(out)
}

/// Mean and sd of the finite values (diverged runs are NaN and counted apart).
fn mean_sd(v: &[f64]) -> (f64, f64) {
    let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let s = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    (m, s)
}

/// `sgld reproduce boston`: Figures 1, 2a, 2b and the table beside the paper's.
pub fn run_boston(ctx: &Context) -> Result<(), String> {
    let dir = ctx
        .data_dir
        .as_deref()
        .ok_or("boston needs the data directory")?;
    let uci = Uci::load(&dir.join("uci_pbp/bostonHousing"))?;
    let splits = if ctx.quick { 3 } else { uci.n_splits() };
    let methods = [Method::Psgld, Method::Kfac];
    let res = run_set(&uci, &methods, splits, ctx.seed)?;
    let mut rep = String::from("# Nado et al.: K-FAC preconditioned SGLD on Boston housing\n\n");
    let _ = writeln!(
        rep,
        "Width {WIDTH}, ReLU, batch {BATCH}, burn-in {BURN_IN}, {KEEP} samples thinned every {THIN} steps ({STEPS} steps), {splits} of the 20 standard splits{}. Steps chosen on split 0's validation rows: {}.\n",
        if ctx.quick { " (**quick run**)" } else { "" },
        res.steps
            .iter()
            .map(|(m, e)| format!("{} ε = {e}", m.name()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    rep += "Test log-likelihood and RMSE: mean ± sd over the splits; a split whose run diverged is left out of them and counted beside the method.\n\n| method | test log-likelihood | test RMSE | paper |\n|---|---|---|---|\n";
    for (m, v) in &res.per_split {
        let (ll, lls) = mean_sd(&v.iter().map(|r| r.0).collect::<Vec<_>>());
        let (rm, rms) = mean_sd(&v.iter().map(|r| r.1).collect::<Vec<_>>());
        let paper = if *m == Method::Kfac {
            "−2.226 ± 0.069"
        } else {
            "–"
        };
        let bad = v.iter().filter(|r| !r.0.is_finite()).count();
        let note = if bad > 0 {
            format!(" ({bad} of {} splits diverged)", v.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            rep,
            "| {}{note} | {ll:.3} ± {lls:.3} | {rm:.3} ± {rms:.3} | {paper} |",
            m.name()
        );
    }
    rep += "| PBP (paper) | | | −2.574 ± 0.089 |\n\n";
    if let Some((_, v)) = res.per_split.iter().find(|(m, _)| *m == Method::Kfac) {
        rep += &paper_gap(v);
    }
    // Figure 2a: ESS per parameter (sorted), split 0.
    let panels = vec![Panel {
        title: "Figure 2a: ESS per parameter (Hoffman & Gelman), split 0".into(),
        x_label: "parameter (sorted by ESS)".into(),
        y_label: "ESS of 1000 post-burn-in steps".into(),
        log_y: true,
        series: res
            .ess
            .iter()
            .map(|(m, e)| {
                let mut e = e.clone();
                e.sort_by(f64::total_cmp);
                Series {
                    label: m.name().into(),
                    x: (0..e.len()).map(|i| i as f64).collect(),
                    y: e.iter().map(|v| v.max(1e-3)).collect(),
                    ..Series::default()
                }
            })
            .collect(),
        ..Panel::default()
    }];
    plot::line_chart(&ctx.out.join("figure_2a"), &panels)?;
    for (m, e) in &res.ess {
        let mut e = e.clone();
        e.sort_by(f64::total_cmp);
        let _ = writeln!(
            rep,
            "- {}: median ESS {:.0}, min {:.1} (of 1000 post-burn-in steps; first 200 parameters)",
            m.name(),
            e[e.len() / 2],
            e[0]
        );
    }
    // Figure 2b: test log-likelihood of the current iterate against steps, mean ± sd over splits.
    let series: Vec<Series> = res
        .curves
        .iter()
        .map(|(m, cs)| {
            let k = cs[0].len();
            let steps: Vec<f64> = cs[0].iter().map(|c| c.0 as f64).collect();
            let stats: Vec<(f64, f64)> = (0..k)
                .map(|j| mean_sd(&cs.iter().map(|c| c[j].1).collect::<Vec<_>>()))
                .collect();
            Series {
                label: format!("{}: mean over {} splits, band ±1 sd", m.name(), cs.len()),
                x: steps,
                y: stats.iter().map(|s| s.0).collect(),
                band: Some((
                    stats.iter().map(|s| s.0 - s.1).collect(),
                    stats.iter().map(|s| s.0 + s.1).collect(),
                )),
                ..Series::default()
            }
        })
        .collect();
    let mut cols: Vec<(String, Vec<f64>)> = vec![("step".into(), series[0].x.clone())];
    for s in &series {
        cols.push((
            format!(
                "{}_test_ll",
                s.label.split(':').next().unwrap_or("").replace(' ', "_")
            ),
            s.y.clone(),
        ));
    }
    plot::write_csv(
        &ctx.out.join("figure_2b.csv"),
        &cols
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect::<Vec<_>>(),
    )?;
    plot::line_chart(
        &ctx.out.join("figure_2b"),
        &[Panel {
            title: "Figure 2b: test log-likelihood per datum (current iterate)".into(),
            x_label: "training step".into(),
            y_label: "test log-likelihood".into(),
            series,
            ..Panel::default()
        }],
    )?;
    rep += "\n![Figure 2a](figure_2a.svg)\n\n![Figure 2b](figure_2b.svg)\n\n";
    let mut ll_cols: Vec<(String, Vec<f64>)> = vec![];
    for (m, v) in &res.per_split {
        ll_cols.push((
            format!("{}_test_ll", m.name().replace(' ', "_")),
            v.iter().map(|r| r.0).collect(),
        ));
        ll_cols.push((
            format!("{}_rmse", m.name().replace(' ', "_")),
            v.iter().map(|r| r.1).collect(),
        ));
    }
    plot::write_csv(
        &ctx.out.join("splits.csv"),
        &ll_cols
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect::<Vec<_>>(),
    )?;
    toy(ctx, &mut rep)?;
    std::fs::write(ctx.out.join("report.md"), rep)
        .map_err(|e| format!("cannot write report.md: {e}"))
}

/// Figure 1: a 1-D function drawn from a squared-exponential GP (length scale 1), 120
/// noisy training points on [−3, 3] (noise sd 0.1), predictive mean ± 2 sd of pSGLD and
/// K-FAC SGLD over [−5, 5] from 50 samples (burn-in 3000, thinning 100; steps chosen
/// by validation as for the data sets), and the test log-likelihood over steps.
fn toy(ctx: &Context, rep: &mut String) -> Result<(), String> {
    let mut rng = DefaultRng::seed_from_u64(chain_seed(ctx.seed, 0x0707));
    let n_grid = 400usize;
    let grid: Vec<f64> = (0..n_grid)
        .map(|i| -5.0 + 10.0 * i as f64 / (n_grid - 1) as f64)
        .collect();
    let mut k = vec![0.0f64; n_grid * n_grid];
    for i in 0..n_grid {
        for j in 0..n_grid {
            k[i * n_grid + j] =
                (-0.5 * (grid[i] - grid[j]).powi(2)).exp() + if i == j { 1e-6 } else { 0.0 };
        }
    }
    sgld::linalg::cholesky(&mut k, n_grid).map_err(|e| e.to_string())?;
    let mut z = vec![0.0f32; n_grid];
    fill_normal(&mut rng, &mut z);
    let f: Vec<f64> = (0..n_grid)
        .map(|i| (0..=i).map(|j| k[i * n_grid + j] * z[j] as f64).sum())
        .collect();
    // Training inputs: grid points in [−3, 3]; test: the rest of that interval's points.
    let inside: Vec<usize> = (0..n_grid).filter(|&i| grid[i].abs() <= 3.0).collect();
    let train: Vec<usize> = inside.iter().copied().step_by(2).collect();
    let test: Vec<usize> = inside.iter().copied().skip(1).step_by(2).collect();
    let mut e = vec![0.0f32; n_grid];
    fill_normal(&mut rng, &mut e);
    let (x, y): (Vec<f32>, Vec<f32>) = train
        .iter()
        .map(|&i| (grid[i] as f32, (f[i] + 0.1 * e[i] as f64) as f32))
        .unzip();
    let (xt, yt): (Vec<f32>, Vec<f32>) = test
        .iter()
        .map(|&i| (grid[i] as f32, (f[i] + 0.1 * e[i] as f64) as f32))
        .unzip();
    let mut panels = Vec::new();
    let mut curves = Vec::new();
    let proto = Protocol {
        burn_in: 3000,
        thin: 100,
        keep: if ctx.quick { 10 } else { 50 },
    };
    // Interleave the training points so that the validation tail spans the interval.
    let order: Vec<usize> = (0..x.len()).map(|i| (i * 7) % x.len()).collect();
    let fit = Split {
        x: order.iter().map(|&i| x[i]).collect(),
        y: order.iter().map(|&i| y[i]).collect(),
        x_test: vec![],
        y_test: vec![],
        d: 1,
        y_sd: 1.0,
    };
    for m in [Method::Psgld, Method::Kfac] {
        let eps = tune(&fit, m, proto, ctx.seed);
        let r = run(
            m,
            proto,
            &x,
            &y,
            1,
            eps,
            chain_seed(ctx.seed, 0x0708),
            Some((&xt, &yt)),
        )?;
        let model = net(&xt, &yt, 1)?;
        let preds: Vec<Vec<f64>> = r
            .samples
            .chunks_exact(r.dim)
            .map(|s| {
                grid.iter()
                    .map(|&g| model.predict(s, &[g as f32]) as f64)
                    .collect()
            })
            .collect();
        let (mean, sd): (Vec<f64>, Vec<f64>) = (0..n_grid)
            .map(|i| mean_sd(&preds.iter().map(|p| p[i]).collect::<Vec<_>>()))
            .unzip();
        let (ll, _) = predictive(&model, &r.samples);
        let _ = writeln!(
            rep,
            "- toy, {} (ε = {eps}): test log-likelihood {ll:.3}",
            m.name()
        );
        panels.push(Panel {
            title: format!("Figure 1: {} (mean ± 2 sd)", m.name()),
            x_label: "x".into(),
            y_label: "f(x)".into(),
            series: vec![
                Series {
                    label: "true function".into(),
                    x: grid.clone(),
                    y: f.clone(),
                    thick: true,
                    ..Series::default()
                },
                Series {
                    label: "predictive mean, band ±2 sd".into(),
                    x: grid.clone(),
                    y: mean.clone(),
                    band: Some((
                        mean.iter().zip(&sd).map(|(m, s)| m - 2.0 * s).collect(),
                        mean.iter().zip(&sd).map(|(m, s)| m + 2.0 * s).collect(),
                    )),
                    ..Series::default()
                },
            ],
            ..Panel::default()
        });
        curves.push(Series {
            label: m.name().into(),
            x: r.curve.iter().map(|c| c.0 as f64).collect(),
            y: r.curve.iter().map(|c| c.1).collect(),
            ..Series::default()
        });
    }
    panels.push(Panel {
        title: "Figure 1c: test log-likelihood".into(),
        x_label: "training step".into(),
        y_label: "log-likelihood per datum".into(),
        series: curves,
        ..Panel::default()
    });
    plot::line_chart(&ctx.out.join("figure_1"), &panels)?;
    *rep += "\n![Figure 1](figure_1.svg)\n";
    Ok(())
}

/// The UCI sets besides Boston, in the order of PBP's table.
const SETS: [&str; 8] = [
    "concrete",
    "energy",
    "kin8nm",
    "naval-propulsion-plant",
    "power-plant",
    "protein-tertiary-structure",
    "wine-quality-red",
    "yacht",
];

/// `sgld reproduce uci`: the Boston protocol on every UCI set present, one table.
pub fn run_uci(ctx: &Context) -> Result<(), String> {
    let dir = ctx
        .data_dir
        .as_deref()
        .ok_or("uci needs the data directory")?;
    let methods = [Method::Sgld, Method::Psgld, Method::Kfac];
    let mut rep = String::from("# The UCI regression benchmarks: SGLD, pSGLD and K-FAC SGLD\n\n");
    let _ = writeln!(
        rep,
        "The Boston protocol (width {WIDTH}, batch {BATCH}, {STEPS} steps, {KEEP} thinned samples) on each set's standard splits{}; steps chosen per set and sampler on split 0's validation rows. Test log-likelihood (posterior predictive, original units) and RMSE, mean ± sd over splits; a split whose run diverged (non-finite predictions) is left out of the mean and sd and counted in brackets.\n\n| data set | N | splits | SGLD LL | pSGLD LL | K-FAC LL | SGLD RMSE | pSGLD RMSE | K-FAC RMSE | steps ε |\n|---|---|---|---|---|---|---|---|---|---|",
        if ctx.quick {
            " (**quick run**: 2 splits each)"
        } else {
            ""
        }
    );
    for name in ["bostonHousing"].iter().chain(SETS.iter()) {
        let path = dir.join("uci_pbp").join(name);
        if !path.join("data.txt").is_file() {
            let _ = writeln!(rep, "| {name} | – | – | missing | | | | | |");
            continue;
        }
        let uci = Uci::load(&path)?;
        let splits = if ctx.quick { 2 } else { uci.n_splits() };
        let res = run_set(&uci, &methods, splits, ctx.seed).map_err(|e| format!("{name}: {e}"))?;
        let fmt = |f: &dyn Fn(&(f64, f64)) -> f64| -> Vec<String> {
            res.per_split
                .iter()
                .map(|(_, v)| {
                    let (m, s) = mean_sd(&v.iter().map(f).collect::<Vec<_>>());
                    let bad = v.iter().filter(|r| !f(r).is_finite()).count();
                    if bad == v.len() {
                        "diverged".to_string()
                    } else if bad > 0 {
                        format!("{m:.3} ± {s:.3} ({bad} diverged)")
                    } else {
                        format!("{m:.3} ± {s:.3}")
                    }
                })
                .collect()
        };
        let (ll, rmse) = (fmt(&|r| r.0), fmt(&|r| r.1));
        let _ = writeln!(
            rep,
            "| {name} | {} | {splits} | {} | {} | {} |",
            uci.rows.len(),
            ll.join(" | "),
            rmse.join(" | "),
            res.steps
                .iter()
                .map(|(_, e)| format!("{e}"))
                .collect::<Vec<_>>()
                .join(" / ")
        );
    }
    std::fs::write(ctx.out.join("report.md"), rep)
        .map_err(|e| format!("cannot write report.md: {e}"))
}
