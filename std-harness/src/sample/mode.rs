//! The posterior's mode and its Laplace approximation, on the full data: the log
//! posterior and its gradient summed over fixed chunks of rows (in parallel, added in
//! chunk order, so the result does not depend on the thread count), L-BFGS for the mode,
//! and the precision `P = F + P₀` (the empirical Fisher `F = Σᵢ gᵢgᵢᵀ` plus the prior's
//! precision) whose inverse is the preconditioner of the warm-up.

use super::problem::ModelSync;
use rand_core::Rng;
use rayon::prelude::*;

/// The metric's old path: `MetricStore` and `covariance` live in [`super::metric_store`].
pub use super::metric_store::{MetricStore, covariance};

/// The diagonal of a prior's precision at θ.
pub type PriorDiagonal<'a> = &'a dyn Fn(&[f32]) -> Vec<f64>;

/// Rows per chunk of a pass.
const CHUNK: usize = 2048;

/// Dense metrics up to this dimension whatever the data; above it only where
/// [`dense_laplace`] allows, and never on the mini-batch path (where a dense metric's
/// `O(d²)` a step would cost more than the mini-batch's gradient). The Hessian by
/// differences of gradients ([`hessian_precision`], `2d` full-data gradients) stops here.
pub const MAX_DENSE_METRIC: usize = 256;

/// Dense Laplace approximations up to this dimension, where [`dense_laplace`] allows.
pub const MAX_DENSE_LAPLACE: usize = 1024;

/// The most multiply-adds (`rows · d²`) the dense precision may take: about a second
/// on one core, and at most 16 MB of partial sums alive ([`CHUNK`] rows each).
const DENSE_WORK: usize = 4_000_000_000;

/// Whether the Laplace approximation of `d` parameters summed over `rows` rows is dense:
/// up to [`MAX_DENSE_METRIC`] always, and up to [`MAX_DENSE_LAPLACE`] where the
/// precision's `rows · d²` work stays within 4·10⁹ multiply-adds. With correlated features the
/// diagonal `1/Pⱼⱼ` understates the marginal variances many times over (a 5,000 × 400
/// logistic regression: 22×), and the exact path's integrator then needs several times
/// the gradients.
pub fn dense_laplace(d: usize, rows: usize) -> bool {
    d <= MAX_DENSE_METRIC
        || (d <= MAX_DENSE_LAPLACE && rows.saturating_mul(d).saturating_mul(d) <= DENSE_WORK)
}

/// Rows of the subsample the mode search starts on and the precision is estimated from,
/// when the data have at least four times as many.
pub const SUBSAMPLE_ROWS: usize = 32_768;

/// Whether the warm-up's estimates of `n` rows start on a subsample ([`Rows::warmup`]).
pub fn subsampled(n: usize) -> bool {
    n >= 4 * SUBSAMPLE_ROWS
}

/// The rows a pass reads: all of them, or a subsample whose log likelihood is scaled by
/// `N/m` to stand for the whole.
#[derive(Debug, Clone)]
pub struct Rows {
    chunks: Vec<Vec<usize>>,
    /// `N/m`: 1 for all rows.
    scale: f64,
}

impl Rows {
    /// All `n` rows.
    pub fn all(n: usize) -> Self {
        let chunks = (0..n.div_ceil(CHUNK))
            .map(|c| (c * CHUNK..((c + 1) * CHUNK).min(n)).collect())
            .collect();
        Self { chunks, scale: 1.0 }
    }

    /// `m` of `n` rows drawn at random without replacement (a fixed seed), in file order;
    /// all rows when `m ≥ n`.
    pub fn sample(n: usize, m: usize) -> Self {
        if m >= n {
            return Self::all(n);
        }
        // Floyd's algorithm: m distinct rows, each subset equally likely.
        let mut rng = rand_pcg::Pcg64Mcg::new(0x5eed_5a3b_1e5f_u128);
        let mut chosen = std::collections::HashSet::with_capacity(m);
        for j in n - m..n {
            let t = (rng.next_u64() % (j as u64 + 1)) as usize;
            if !chosen.insert(t) {
                chosen.insert(j);
            }
        }
        let mut rows: Vec<usize> = chosen.into_iter().collect();
        rows.sort_unstable();
        Self {
            chunks: rows.chunks(CHUNK).map(<[usize]>::to_vec).collect(),
            scale: n as f64 / m as f64,
        }
    }

    /// The subsample the warm-up's estimates use: [`SUBSAMPLE_ROWS`] rows when the data
    /// have four times as many, else all.
    pub fn warmup(n: usize) -> Self {
        if subsampled(n) {
            Self::sample(n, SUBSAMPLE_ROWS)
        } else {
            Self::all(n)
        }
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.chunks.iter().all(Vec::is_empty)
    }

    /// Whether these are all the rows.
    pub fn is_all(&self) -> bool {
        self.scale == 1.0
    }

    /// The rows read by one pass, as a fraction of the data (`m/N`).
    pub fn fraction(&self) -> f64 {
        1.0 / self.scale
    }
}

/// `log p(θ) + Σᵢ log p(xᵢ|θ)`.
pub fn log_posterior(model: &dyn ModelSync, theta: &[f32]) -> f64 {
    log_posterior_on(model, theta, &Rows::all(model.len()))
}

/// `log p(θ) + s·Σ_{i∈rows} log p(xᵢ|θ)`, `s` the rows' scale.
pub fn log_posterior_on(model: &dyn ModelSync, theta: &[f32], rows: &Rows) -> f64 {
    let parts: Vec<f64> = rows
        .chunks
        .par_iter()
        .map(|b| model.log_lik(theta, b))
        .collect();
    model.log_prior(theta) + rows.scale * parts.iter().sum::<f64>()
}

/// `∇ log p(θ) + Σᵢ ∇ log p(xᵢ|θ)`, in f64.
pub fn grad_log_posterior(model: &dyn ModelSync, theta: &[f32]) -> Vec<f64> {
    pass(model, theta, &Rows::all(model.len()), false).1
}

/// The log posterior on `rows` ([`log_posterior_on`]) and its gradient (f64), from one
/// pass over the rows.
pub fn value_and_grad_on(model: &dyn ModelSync, theta: &[f32], rows: &Rows) -> (f64, Vec<f64>) {
    pass(model, theta, rows, true)
}

/// The gradient on `rows` and, when `value`, the log posterior (else NaN).
fn pass(model: &dyn ModelSync, theta: &[f32], rows: &Rows, value: bool) -> (f64, Vec<f64>) {
    let d = model.dim();
    let parts: Vec<(f64, Vec<f32>)> = rows
        .chunks
        .par_iter()
        .map(|b| {
            let mut g = vec![0.0f32; d];
            let v = if value {
                model.add_log_lik_grad_and_value(theta, b, &mut g)
            } else {
                model.add_log_lik_grad(theta, b, &mut g);
                0.0
            };
            (v, g)
        })
        .collect();
    let mut g = vec![0.0f32; d];
    model.add_log_prior_grad(theta, &mut g);
    let mut out = vec![0.0f64; d];
    let mut sum = 0.0;
    for (v, p) in &parts {
        sum += v;
        for (o, &x) in out.iter_mut().zip(p) {
            *o += x as f64;
        }
    }
    for (o, &p) in out.iter_mut().zip(&g) {
        *o = p as f64 + rows.scale * *o;
    }
    let value = if value {
        model.log_prior(theta) + rows.scale * sum
    } else {
        f64::NAN
    };
    (value, out)
}

/// What the mode search found.
#[derive(Debug, Clone)]
pub struct Mode {
    /// The estimate of the mode.
    pub theta: Vec<f32>,
    /// Its log posterior.
    pub log_post: f64,
    /// L-BFGS iterations on all the rows (after those on a subsample).
    pub iterations: u32,
    /// The rows the search read, in passes over the whole data set.
    pub passes: f64,
    /// The full data's log-likelihood gradient at `theta`, where the search's last pass
    /// read every row (the control variates' centre gradient, without a pass of its own).
    pub log_lik_grad: Option<Vec<f32>>,
}

fn to_f32(x: &[f64]) -> Vec<f32> {
    x.iter().map(|&v| v as f32).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// L-BFGS's memory: the last ten steps `s` and gradient changes `y`, and the initial
/// inverse Hessian `H₀` (`γI`, or `γP⁻¹` with a preconditioner `P`).
#[derive(Default)]
struct History {
    s: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
    precond: Option<Precond>,
}

impl History {
    fn push(&mut self, s: Vec<f64>, y: Vec<f64>) {
        if dot(&s, &y) > 1e-12 * dot(&y, &y).sqrt() * dot(&s, &s).sqrt() {
            self.s.push(s);
            self.y.push(y);
            if self.s.len() > 10 {
                self.s.remove(0);
                self.y.remove(0);
            }
        }
    }

    /// The two-loop recursion: `−H g`, H the inverse Hessian these pairs imply.
    fn direction(&self, g: &[f64], gmax: f64) -> Vec<f64> {
        let mut q = g.to_vec();
        let k = self.s.len();
        let mut a = vec![0.0; k];
        for i in (0..k).rev() {
            let rho = 1.0 / dot(&self.y[i], &self.s[i]);
            a[i] = rho * dot(&self.s[i], &q);
            for (qj, yj) in q.iter_mut().zip(&self.y[i]) {
                *qj -= a[i] * yj;
            }
        }
        match &self.precond {
            Some(p) => {
                let r = p.solve(&q);
                let gamma = if k > 0 {
                    let hy = p.solve(&self.y[k - 1]);
                    dot(&self.s[k - 1], &self.y[k - 1]) / dot(&self.y[k - 1], &hy)
                } else {
                    1.0
                };
                q = r.iter().map(|v| gamma * v).collect();
            }
            None => {
                let gamma = if k > 0 {
                    dot(&self.s[k - 1], &self.y[k - 1]) / dot(&self.y[k - 1], &self.y[k - 1])
                } else {
                    // First step: a unit move of the largest coordinate.
                    1.0 / gmax
                };
                for qj in q.iter_mut() {
                    *qj *= gamma;
                }
            }
        }
        for ((s, y), ai) in self.s.iter().zip(&self.y).zip(&a) {
            let b = dot(y, &q) / dot(y, s);
            for (qj, sj) in q.iter_mut().zip(s) {
                *qj += (ai - b) * sj;
            }
        }
        q.iter().map(|v| -v).collect()
    }
}

/// The mode by L-BFGS (ten pairs, backtracking to the Armijo condition) from `start`:
/// [`find_mode_with_prior`] without the prior's precision.
pub fn find_mode(model: &dyn ModelSync, start: &[f32]) -> Result<Mode, String> {
    find_mode_with_prior(model, start, None)
}

/// The mode by L-BFGS (ten pairs, backtracking to the Armijo condition) from `start`.
/// With many rows the search runs first on a subsample ([`Rows::warmup`]) scaled to the
/// whole, then on all rows from there with the curvature the subsample taught, so its
/// full-data passes do not grow with N. A search preconditioned by a curvature `P` (the
/// Fisher information plus `prior`, the diagonal of the prior's precision, when given)
/// stops when the Newton decrement `gᵀP⁻¹g` falls below 0.01, about 0.1 posterior sd from
/// the mode in every direction whatever the parameters' scales. Without a subsample the
/// search starts unpreconditioned, with the absolute rule `max |gⱼ| ≤ 10⁻⁵·N`, and
/// confirms any stop by that decrement under the Fisher information where it stopped,
/// going on preconditioned by it when the decrement is larger: the absolute rule alone
/// stops early along a feature of small scale, whose gradient is small far from the mode.
/// A search also stops when a line search fails (a kink of a Laplace prior, or f32
/// round-off), or after 500 iterations. Errors when the log posterior at the start is not
/// finite.
pub fn find_mode_with_prior(
    model: &dyn ModelSync,
    start: &[f32],
    prior: Option<PriorDiagonal<'_>>,
) -> Result<Mode, String> {
    let n = model.len();
    let sub = Rows::warmup(n);
    if sub.is_all() {
        let check = Check {
            rows: Rows::sample(n, SUBSAMPLE_ROWS / 8),
            prior,
        };
        let mode = lbfgs(model, start, &sub, History::default(), Some(&check))?;
        return Ok(mode);
    }
    // Preconditioned from the start by a smaller subsample's Fisher information
    // (a GLM's changes little between the start and the mode).
    let first = History {
        precond: Precond::at(model, start, &Rows::sample(n, SUBSAMPLE_ROWS / 8), prior),
        ..History::default()
    };
    let mode = lbfgs(model, start, &sub, first, None)?;
    let history = History {
        precond: Precond::at(model, &mode.theta, &sub, prior),
        ..History::default()
    };
    // The precisions' passes over the subsamples.
    let sub_passes = mode.passes + 1.125 * sub.fraction();
    let mut mode = lbfgs(model, &mode.theta, &Rows::all(n), history, None)?;
    mode.passes += sub_passes;
    Ok(mode)
}

/// How a search confirms that it has stopped at the mode: the Newton decrement under the
/// Fisher information on `rows` where it stopped, plus the prior's precision.
struct Check<'a> {
    rows: Rows,
    prior: Option<PriorDiagonal<'a>>,
}

/// A point of the search, its objective and its gradient.
type Point = (Vec<f64>, f64, Vec<f64>);

/// The first of `x + t·p`, `t = 1, ½, ¼, …` (40 halvings), whose objective meets the
/// Armijo condition `f(x + tp) ≤ f + 10⁻⁴·t·slope`.
fn backtrack(
    eval: &mut impl FnMut(&[f32]) -> (f64, Vec<f64>),
    x: &[f64],
    p: &[f64],
    f: f64,
    slope: f64,
) -> Option<Point> {
    let mut t = 1.0;
    for _ in 0..40 {
        let xn: Vec<f64> = x.iter().zip(p).map(|(a, b)| a + t * b).collect();
        let (fnew, gn) = eval(&to_f32(&xn));
        if fnew.is_finite() && fnew <= f + 1e-4 * t * slope {
            return Some((xn, fnew, gn));
        }
        t *= 0.5;
    }
    None
}

/// A preconditioner of the mode search: `P`, an estimate of the negative Hessian.
enum Precond {
    /// The Cholesky factor of a dense `P` (row-major lower triangle).
    Dense(Vec<f64>),
    /// `diag(P)`.
    Diagonal(Vec<f64>),
}

impl Precond {
    /// The empirical Fisher information on `rows` at `theta` plus `prior(θ)`, the
    /// diagonal of the prior's precision, with a ridge of 10⁻⁶ of each diagonal entry
    /// (10⁻⁶ of the largest for a parameter nothing informs); `None` when it is not
    /// positive definite.
    fn at(
        model: &dyn ModelSync,
        theta: &[f32],
        rows: &Rows,
        prior: Option<PriorDiagonal<'_>>,
    ) -> Option<Self> {
        let d = model.dim();
        let prior = prior.map_or_else(|| vec![0.0; d], |p| p(theta));
        let dense = dense_laplace(d, rows.len());
        let mut p = precision_on(model, theta, &prior, rows, dense);
        let diag = |j: usize| if dense { j * d + j } else { j };
        let top = (0..d).map(|j| p[diag(j)]).fold(0.0, f64::max);
        if !(top.is_finite() && top > 0.0) {
            return None;
        }
        // Relative to each parameter's own scale: a ridge relative to the largest would
        // swamp the precision of a feature of small scale.
        for j in 0..d {
            let pj = p[diag(j)];
            p[diag(j)] = if pj > 0.0 {
                pj * (1.0 + 1e-6)
            } else {
                1e-6 * top
            };
        }
        if dense {
            sgld::linalg::cholesky(&mut p, d).ok()?;
            Some(Precond::Dense(p))
        } else {
            Some(Precond::Diagonal(p))
        }
    }

    /// `P⁻¹ g`.
    fn solve(&self, g: &[f64]) -> Vec<f64> {
        match self {
            Precond::Diagonal(p) => g.iter().zip(p).map(|(a, b)| a / b).collect(),
            Precond::Dense(l) => {
                let d = g.len();
                let mut x = g.to_vec();
                for i in 0..d {
                    let s: f64 = (0..i).map(|k| l[i * d + k] * x[k]).sum();
                    x[i] = (x[i] - s) / l[i * d + i];
                }
                for i in (0..d).rev() {
                    let s: f64 = (i + 1..d).map(|k| l[k * d + i] * x[k]).sum();
                    x[i] = (x[i] - s) / l[i * d + i];
                }
                x
            }
        }
    }
}

/// L-BFGS on `rows` from `start` with the memory `history`. With a preconditioner `P`
/// it stops when the Newton decrement `gᵀP⁻¹g` falls below 0.01: the mode is then about
/// 0.1 posterior sd away (`√(gᵀP⁻¹g)` sds, where `P` is the precision); without one,
/// when the gradient's largest entry falls below `10⁻⁵·N`. With a [`Check`], a stop where
/// the preconditioner is not the Fisher information at that point is confirmed: the
/// search goes on, preconditioned by it, unless its decrement is below 0.01 (again only
/// after a gain of more than 0.005 since the last confirmation; at most eight times).
fn lbfgs(
    model: &dyn ModelSync,
    start: &[f32],
    rows: &Rows,
    history: History,
    check: Option<&Check<'_>>,
) -> Result<Mode, String> {
    let n = model.len().max(1) as f64;
    let mut passes = 0.0;
    let mut eval = |theta: &[f32]| {
        passes += rows.fraction();
        let (v, g) = value_and_grad_on(model, theta, rows);
        (-v, g.iter().map(|v| -v).collect::<Vec<f64>>())
    };
    let (f, g) = eval(start);
    if !f.is_finite() {
        return Err(format!(
            "the log posterior at the start is not finite ({}): check the data's scale or --init",
            -f
        ));
    }
    if !g.iter().all(|v| v.is_finite()) {
        return Err("the gradient of the log posterior at the start is not finite".into());
    }
    let x = start.iter().map(|&v| v as f64).collect();
    let mut search = Search {
        x,
        f,
        g,
        history,
        iterations: 0,
    };
    // The objective where the last stop was confirmed: a stop is confirmed again only
    // after the search has gained more than the decrement's 0.01 implies (about 0.005),
    // so a kink of a Laplace prior, where no decrement is small, ends it.
    let mut confirmed_at: Option<f64> = None;
    let (mut confirmations, mut check_passes) = (0, 0.0);
    for _ in 0..500 {
        if search.step(&mut eval, 1e-5 * n) {
            continue;
        }
        let again = confirmed_at.is_none_or(|f| search.f < f - 5e-3);
        let Some(check) = check.filter(|_| again && confirmations < 8) else {
            break;
        };
        let theta = to_f32(&search.x);
        let Some(p) = Precond::at(model, &theta, &check.rows, check.prior) else {
            break;
        };
        check_passes += check.rows.fraction();
        confirmations += 1;
        confirmed_at = Some(search.f);
        search.history = History {
            precond: Some(p),
            ..History::default()
        };
    }
    let theta = to_f32(&search.x);
    // `search.g` is −∇log p(θ) − Σᵢ∇log p(xᵢ|θ) at θ, the prior's part added in f64 from
    // f32: taken off again, the rest is the rows' sum.
    let log_lik_grad = rows.is_all().then(|| {
        let mut prior = vec![0.0f32; theta.len()];
        model.add_log_prior_grad(&theta, &mut prior);
        search
            .g
            .iter()
            .zip(&prior)
            .map(|(&g, &p)| (-g - p as f64) as f32)
            .collect()
    });
    Ok(Mode {
        theta,
        log_post: -search.f,
        iterations: search.iterations,
        passes: passes + check_passes,
        log_lik_grad,
    })
}

/// A mode search's state: the point, its objective (the negative log posterior) and
/// gradient, and L-BFGS's memory.
struct Search {
    x: Vec<f64>,
    f: f64,
    g: Vec<f64>,
    history: History,
    iterations: u32,
}

impl Search {
    /// One iteration: `false` to stop (the decrement below 0.01 or, without a
    /// preconditioner, the gradient's largest entry below `absolute`; no descent, a failed
    /// line search or no improvement).
    fn step(&mut self, eval: &mut impl FnMut(&[f32]) -> (f64, Vec<f64>), absolute: f64) -> bool {
        let g = &self.g;
        let gmax = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        match &self.history.precond {
            Some(p) if dot(g, &p.solve(g)) <= 1e-2 => return false,
            None if gmax <= absolute => return false,
            _ => {}
        }
        let p = self.history.direction(g, gmax);
        let slope = dot(g, &p);
        if slope.is_nan() || slope >= 0.0 {
            if self.history.s.is_empty() {
                return false;
            }
            self.history.s.clear();
            self.history.y.clear();
            return true;
        }
        let Some((xn, fnew, gn)) = backtrack(eval, &self.x, &p, self.f, slope) else {
            return false;
        };
        if !gn.iter().all(|v| v.is_finite()) {
            return false;
        }
        let s: Vec<f64> = xn.iter().zip(&self.x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = gn.iter().zip(g).map(|(a, b)| a - b).collect();
        self.iterations += 1;
        let improvement = self.f - fnew;
        (self.x, self.f, self.g) = (xn, fnew, gn);
        self.history.push(s, y);
        improvement > 1e-10 * (1.0 + self.f.abs())
    }
}

/// The precision `P = Σᵢ gᵢgᵢᵀ + diag(prior)` at `theta` (`gᵢ = ∇log p(xᵢ|θ)`): the
/// lower triangle of the `d × d` matrix (row-major) where [`dense_laplace`] allows, its
/// diagonal otherwise. The sum is over the warm-up's subsample of rows
/// ([`Rows::warmup`]), scaled to all of them.
pub fn precision(model: &dyn ModelSync, theta: &[f32], prior: &[f64]) -> Vec<f64> {
    let rows = Rows::warmup(model.len());
    let dense = dense_laplace(model.dim(), rows.len());
    precision_on(model, theta, prior, &rows, dense)
}

/// [`precision`] with the sum over `rows`, scaled to all of them: the lower triangle when
/// `dense`, else the diagonal.
fn precision_on(
    model: &dyn ModelSync,
    theta: &[f32],
    prior: &[f64],
    rows: &Rows,
    dense: bool,
) -> Vec<f64> {
    let d = model.dim();
    let size = if dense { d * d } else { d };
    let (mut nz, mut wide): (Vec<(usize, f64)>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut p = fold_row_grads(model, theta, rows, size, move |g, f| {
        // The non-zero entries of gᵢ (sparse rows touch few).
        nz.clear();
        nz.extend(
            g.iter()
                .enumerate()
                .filter(|(_, v)| **v != 0.0)
                .map(|(j, &v)| (j, v as f64)),
        );
        if dense && 2 * nz.len() > d {
            // Mostly non-zero: whole rows of the triangle, contiguous (the same sums).
            wide.clear();
            wide.extend(g.iter().map(|&v| v as f64));
            for &(j, a) in &nz {
                let row = &mut f[j * d..=j * d + j];
                for (x, &b) in row.iter_mut().zip(&wide[..=j]) {
                    *x += a * b;
                }
            }
            return;
        }
        for (k, &(j, a)) in nz.iter().enumerate() {
            if dense {
                for &(l, b) in &nz[..=k] {
                    f[j * d + l] += a * b;
                }
            } else {
                f[j] += a * a;
            }
        }
    });
    for (j, &pj) in prior.iter().enumerate().take(d) {
        p[if dense { j * d + j } else { j }] += pj;
    }
    p
}

/// `Σᵢ add(gᵢ, ·)` over `rows` into `size` sums, scaled to all rows: `gᵢ` is row `i`'s
/// log-likelihood gradient at `theta`, and `add` adds what it contributes (the
/// empirical Fisher information's entries). Chunks of rows run in parallel, each with
/// its own sums and its own copy of `add`'s state.
pub fn fold_row_grads<A>(
    model: &dyn ModelSync,
    theta: &[f32],
    rows: &Rows,
    size: usize,
    add: A,
) -> Vec<f64>
where
    A: FnMut(&[f32], &mut [f64]) + Clone + Send + Sync,
{
    let d = model.dim();
    let parts: Vec<Vec<f64>> = rows
        .chunks
        .par_iter()
        .map(|rows| {
            let mut add = add.clone();
            let mut f = vec![0.0f64; size];
            let mut g = vec![0.0f32; d];
            for &i in rows {
                g.fill(0.0);
                model.add_log_lik_grad(theta, &[i], &mut g);
                add(&g, &mut f);
            }
            f
        })
        .collect();
    let mut sum = vec![0.0f64; size];
    for part in &parts {
        for (a, b) in sum.iter_mut().zip(part) {
            *a += rows.scale * b;
        }
    }
    sum
}

/// The negative Hessian of the log posterior at `theta` by central differences of its
/// gradient (symmetrised), as a full `d × d` row-major matrix; `None` above
/// [`MAX_DENSE_METRIC`] parameters or where a gradient is not finite. A coordinate's step
/// is `10⁻³·max(1, |θₖ|)`, or one posterior sd where that is smaller (`1/√Fₖₖ`, the
/// Fisher information's on a subsample, but at least `10⁻⁵·|θₖ|` for f32): a parameter
/// of small scale is not differenced over thousands of sds. Costs `2d` full-data
/// gradients.
pub fn hessian_precision(model: &dyn ModelSync, theta: &[f32]) -> Option<Vec<f64>> {
    let d = model.dim();
    if d > MAX_DENSE_METRIC {
        return None;
    }
    let rows = Rows::sample(model.len(), SUBSAMPLE_ROWS / 8);
    let fisher = precision_on(model, theta, &vec![0.0; d], &rows, false);
    let mut h = vec![0.0f64; d * d];
    let mut t = theta.to_vec();
    for k in 0..d {
        let at = theta[k].abs() as f64;
        let (base, sd) = (1e-3 * at.max(1.0), 1.0 / fisher[k].sqrt());
        let step = if sd.is_nan() {
            base
        } else {
            base.min(sd.max(1e-5 * at))
        };
        t[k] = (theta[k] as f64 + step) as f32;
        let up = (t[k] as f64, grad_log_posterior(model, &t));
        t[k] = (theta[k] as f64 - step) as f32;
        let down = (t[k] as f64, grad_log_posterior(model, &t));
        t[k] = theta[k];
        let dx = up.0 - down.0;
        for j in 0..d {
            h[j * d + k] = -(up.1[j] - down.1[j]) / dx;
        }
    }
    for j in 0..d {
        for k in 0..j {
            let v = 0.5 * (h[j * d + k] + h[k * d + j]);
            h[j * d + k] = v;
            h[k * d + j] = v;
        }
    }
    h.iter().all(|v| v.is_finite()).then_some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dense at any size of data up to 256 parameters; up to 1,024 where the precision's
    /// `rows · d²` work is small; diagonal beyond.
    #[test]
    fn dense_where_the_work_is_small() {
        assert!(dense_laplace(256, 10_000_000));
        assert!(dense_laplace(401, 5_000) && dense_laplace(1_001, 2_000));
        assert!(!dense_laplace(401, SUBSAMPLE_ROWS) && !dense_laplace(1_001, 4_000));
        assert!(!dense_laplace(1_025, 10));
        assert!(!dense_laplace(usize::MAX, usize::MAX));
    }

    /// A logistic regression on `n` rows of a feature of scale 1, one of scale 3·10⁻⁵
    /// (its coefficient 2·10⁴), one of scale 100 and a bias, and the same data with the small feature
    /// multiplied by 10⁴ (a vague prior, so the posteriors are the same up to that
    /// scale): both searches reach the same mode, within 0.1 posterior sd.
    fn mode_of_a_small_feature(n: usize) {
        use sgld::models::{Gaussian, LogisticDense};
        let mut rng = sgld::noise::default_rng(7);
        let mut z = vec![0.0f32; 3 * n];
        sgld::noise::fill_normal(&mut rng, &mut z);
        let (mut small, mut scaled, mut y) = (vec![], vec![], vec![]);
        for r in z.chunks(3) {
            let t = r[0] + 0.6 * r[1] + 0.5 * r[2];
            let p = 1.0 / (1.0 + (-t as f64).exp());
            let label = if sgld::noise::uniform(&mut rng) < p {
                1.0
            } else {
                -1.0
            };
            y.push(label);
            small.extend([r[0], r[1] * 3e-5, r[2] * 100.0, 1.0]);
            scaled.extend([r[0], r[1] * 3e-1, r[2] * 100.0, 1.0]);
        }
        let prior = Gaussian::new(1e14).unwrap();
        let a = LogisticDense::new(&small, &y, 4, prior).unwrap();
        let b = LogisticDense::new(&scaled, &y, 4, prior).unwrap();
        let ma = find_mode(&a, &[0.0; 4]).unwrap();
        let mb = find_mode(&b, &[0.0; 4]).unwrap();
        // The search's last pass read every row: its log-likelihood gradient is the
        // control variates' centre gradient, to f32 round-off of sums of |xᵢⱼ|.
        let mut buf = [0.0f32; 8];
        let cv = sgld::gradient::ControlVariate::new(&a, &ma.theta, &mut buf).unwrap();
        let known = ma.log_lik_grad.as_deref().expect("a full-data gradient");
        for (j, (g, c)) in known.iter().zip(cv.centre_grad()).enumerate() {
            let mass: f64 = small
                .iter()
                .skip(j)
                .step_by(4)
                .map(|x| x.abs() as f64)
                .sum();
            assert!((g - c).abs() as f64 <= 1e-5 * mass, "{j}: {g} vs {c}");
        }
        let back = [mb.theta[0], mb.theta[1] * 1e4, mb.theta[2], mb.theta[3]];
        let best = log_posterior(&a, &back);
        assert!((best - mb.log_post).abs() < 1e-3, "{best} {}", mb.log_post);
        assert!(best - ma.log_post < 0.01, "{} below {best}", ma.log_post);
        // The coefficient's sd: 1/√(Σ pᵢ(1 − pᵢ) xᵢ²), with pᵢ(1 − pᵢ) about 0.2.
        let sd = 1.0 / ((0.2 * n as f64).sqrt() * 3e-5);
        let off = (ma.theta[1] - back[1]).abs() as f64;
        assert!(
            off < 0.1 * sd,
            "{:?} {back:?}: {off} > 0.1 sd ({sd})",
            ma.theta
        );
    }

    /// The absolute rule `max |gⱼ| ≤ 10⁻⁵·N` alone stops hundreds of log-density units
    /// below the mode; confirmed by the decrement under the Fisher information, the
    /// search reaches it.
    #[test]
    fn the_mode_does_not_depend_on_a_features_scale() {
        mode_of_a_small_feature(20_000);
    }

    /// The same with enough rows for the subsample's search: a ridge of 10⁻⁶ of the
    /// largest precision swamped the small feature's, and the search stopped thousands
    /// of units below the mode.
    #[test]
    fn the_subsampled_mode_does_not_depend_on_a_features_scale() {
        mode_of_a_small_feature(4 * SUBSAMPLE_ROWS + 10_000);
    }

    /// The Hessian by differences of a logistic regression whose first feature is
    /// multiplied by 10⁵ is the unscaled one's, scaled by 10⁻⁵ in that row and column:
    /// its step follows the coefficient's sd (about 4·10⁻⁷), not `10⁻³`.
    #[test]
    fn the_hessian_steps_by_the_posteriors_scale() {
        use sgld::models::{Gaussian, LogisticDense};
        let n = 5000;
        let mut rng = sgld::noise::default_rng(11);
        let mut z = vec![0.0f32; 2 * n];
        sgld::noise::fill_normal(&mut rng, &mut z);
        let (mut x, mut wide, mut y) = (vec![], vec![], vec![]);
        for r in z.chunks(2) {
            let p = 1.0 / (1.0 + (-(r[0] + 0.8 * r[1]) as f64).exp());
            let label = if sgld::noise::uniform(&mut rng) < p {
                1.0
            } else {
                -1.0
            };
            y.push(label);
            x.extend([r[0], r[1], 1.0]);
            wide.extend([r[0] * 1e5, r[1], 1.0]);
        }
        let prior = Gaussian::new(1e12).unwrap();
        let a = LogisticDense::new(&x, &y, 3, prior).unwrap();
        let b = LogisticDense::new(&wide, &y, 3, prior).unwrap();
        let ma = find_mode(&a, &[0.0; 3]).unwrap();
        let mb = find_mode(&b, &[0.0; 3]).unwrap();
        let ha = hessian_precision(&a, &ma.theta).unwrap();
        let hb = hessian_precision(&b, &mb.theta).unwrap();
        let unit = [1e-5, 1.0, 1.0];
        for j in 0..3 {
            for k in 0..3 {
                let want = ha[j * 3 + k] / (unit[j] * unit[k]);
                let got = hb[j * 3 + k];
                let scale = (ha[j * 3 + j] * ha[k * 3 + k]).sqrt() / (unit[j] * unit[k]);
                assert!(
                    (got - want).abs() < 0.01 * scale,
                    "({j}, {k}): {got} {want}"
                );
            }
        }
    }
}
