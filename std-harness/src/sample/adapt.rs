//! What the exact warm-up adapts: the step by dual averaging toward a target acceptance
//! (Hoffman & Gelman 2014, §3.2, with Stan's constants), and the metric from windows of
//! warm-up draws where the Laplace approximation at the mode disagrees with them.

use super::chains::Chain;
use super::metric_store::MetricStore;
use super::mode::MAX_DENSE_METRIC;
use super::shear::Shear;

/// The metric is replaced by the draws' covariance when a whitened coordinate's
/// variance is off by more than this factor either way (an sd off by 1.6×), or the
/// draws' mean lies more than [`MAX_OFFSET`] whitened units from the mode.
pub const MAX_VARIANCE_RATIO: f64 = 2.5;

/// See [`MAX_VARIANCE_RATIO`].
pub const MAX_OFFSET: f64 = 2.0;

/// Dual averaging of `log ε` toward an acceptance target (Hoffman & Gelman 2014,
/// Algorithm 5, eqs. 5–6; γ = 0.05, t₀ = 10, κ = 0.75 as in Stan).
#[derive(Debug, Clone)]
pub struct DualAveraging {
    mu: f64,
    target: f64,
    h_bar: f64,
    log_eps: f64,
    log_eps_bar: f64,
    t: f64,
}

/// Steps outside `[1e-12, 1e3]` are never tried (a step the chain cannot take).
const LOG_EPS_RANGE: (f64, f64) = (-27.6, 6.9);

impl DualAveraging {
    /// Adapts from `eps` toward acceptance `target`, shrinking toward `10·eps` (μ).
    pub fn new(eps: f64, target: f64) -> Self {
        let log_eps = eps.ln().clamp(LOG_EPS_RANGE.0, LOG_EPS_RANGE.1);
        Self {
            mu: (10.0f64).ln() + log_eps,
            target,
            h_bar: 0.0,
            log_eps,
            log_eps_bar: 0.0,
            t: 0.0,
        }
    }

    /// The step to take next.
    pub fn step_size(&self) -> f64 {
        self.log_eps.exp()
    }

    /// Takes one step's acceptance probability.
    pub fn update(&mut self, accept: f64) {
        let accept = if accept.is_finite() {
            accept.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.t += 1.0;
        let w = 1.0 / (self.t + 10.0);
        self.h_bar = (1.0 - w) * self.h_bar + w * (self.target - accept);
        self.log_eps =
            (self.mu - self.t.sqrt() / 0.05 * self.h_bar).clamp(LOG_EPS_RANGE.0, LOG_EPS_RANGE.1);
        let eta = self.t.powf(-0.75);
        self.log_eps_bar = eta * self.log_eps + (1.0 - eta) * self.log_eps_bar;
    }

    /// The adapted step: the running average of `log ε` (the last step before any update).
    pub fn adapted(&self) -> f64 {
        if self.t > 0.0 {
            self.log_eps_bar.exp()
        } else {
            self.step_size()
        }
    }
}

/// The mean and covariance of a window of draws, all chains pooled: while chains from
/// dispersed starts are still apart it overstates the posterior's spread (a metric too
/// wide mixes, if slowly), where the within-chain spread of slowly mixing chains would
/// understate it (a metric too narrow mixes slower still).
#[derive(Debug, Clone)]
pub struct Moments {
    /// The pooled mean.
    pub mean: Vec<f64>,
    /// The covariance: `d × d` row-major when `dense`, else the `d` variances alone.
    pub cov: Vec<f64>,
    /// Whether `cov` holds the whole covariance.
    pub dense: bool,
    /// The draws it was computed from.
    pub n: usize,
}

impl Moments {
    /// The variance of parameter `j`.
    pub fn var(&self, j: usize) -> f64 {
        if self.dense {
            self.cov[j * self.mean.len() + j]
        } else {
            self.cov[j]
        }
    }
}

/// The moments of every chain's kept draws `from[c]..` (chain `c`) about their pooled
/// mean, to be judged against `metric`: dense up to [`MAX_DENSE_METRIC`] parameters or
/// against a dense metric, the variances alone otherwise (`O(d)` memory at any width).
/// `None` with fewer than two draws a chain. With a `shear` the draws are taken to its
/// coordinates first (the hub's entry is `z_hub`).
pub fn window_moments(
    chains: &[Chain],
    from: &[usize],
    metric: &MetricStore,
    shear: Option<&Shear>,
) -> Result<Option<Moments>, String> {
    let Some(first) = chains.first() else {
        return Ok(None);
    };
    let d = first.theta.len();
    let dense = d <= MAX_DENSE_METRIC || matches!(metric, MetricStore::Cholesky(_));
    let mut n = 0usize;
    let mut mean = vec![0.0f64; d];
    for (ch, &start) in chains.iter().zip(from) {
        if ch.kept().saturating_sub(start) < 2 {
            return Ok(None);
        }
        ch.draws.rows(start..ch.kept(), |_, row| {
            for (a, &v) in mean.iter_mut().zip(row) {
                *a += v as f64;
            }
            if let Some(sh) = shear {
                mean[sh.hub] += sh.hub_z(row) - row[sh.hub] as f64;
            }
            n += 1;
            Ok(())
        })?;
    }
    for a in mean.iter_mut() {
        *a /= n as f64;
    }
    let mut cov = vec![0.0f64; if dense { d * d } else { d }];
    let mut dev = vec![0.0f64; d];
    for (ch, &start) in chains.iter().zip(from) {
        ch.draws.rows(start..ch.kept(), |_, row| {
            for ((e, &v), &mu) in dev.iter_mut().zip(row).zip(&mean) {
                *e = v as f64 - mu;
            }
            if let Some(sh) = shear {
                dev[sh.hub] = sh.hub_z(row) - mean[sh.hub];
            }
            if dense {
                for i in 0..d {
                    let di = dev[i];
                    for (c, &dj) in cov[i * d..i * d + i + 1].iter_mut().zip(&dev[..=i]) {
                        *c += di * dj;
                    }
                }
            } else {
                for (c, &e) in cov.iter_mut().zip(&dev) {
                    *c += e * e;
                }
            }
            Ok(())
        })?;
    }
    let dof = (n - 1) as f64;
    let cov = if dense {
        let mut full = vec![0.0f64; d * d];
        for i in 0..d {
            for j in 0..=i {
                let v = cov[i * d + j] / dof;
                full[i * d + j] = v;
                full[j * d + i] = v;
            }
        }
        full
    } else {
        cov.iter().map(|c| c / dof).collect()
    };
    Ok(Some(Moments {
        mean,
        cov,
        dense,
        n,
    }))
}

/// The draws' variances along the axes that `metric` whitens (`diag(L⁻¹SL⁻ᵀ)` for
/// `M = LLᵀ`, `Sⱼⱼ/mⱼ` for a diagonal `M`): all 1 where the metric is the draws'
/// covariance.
pub fn whitened_variances(metric: &MetricStore, m: &Moments) -> Vec<f64> {
    let d = m.mean.len();
    match metric {
        MetricStore::Diagonal(diag) => (0..d)
            .map(|j| m.var(j) / (diag[j] as f64).max(f64::MIN_POSITIVE))
            .collect(),
        MetricStore::Cholesky(_) if !m.dense => {
            // Without the covariances, the variances against `Mⱼⱼ` alone.
            let sds = metric.sds();
            (0..d).map(|j| m.var(j) / (sds[j] * sds[j])).collect()
        }
        MetricStore::Cholesky(l) => {
            let l: Vec<f64> = l.iter().map(|&v| v as f64).collect();
            // B = L⁻¹S column by column (S is symmetric: its columns are its rows);
            // W = L⁻¹Bᵀ, whose column j is L⁻¹ times row j of B: its entry j needs only
            // the row's first j + 1 entries.
            let b: Vec<Vec<f64>> = (0..d)
                .map(|c| forward(&l, d, &m.cov[c * d..(c + 1) * d]))
                .collect(); // b[c] = column c of B
            (0..d)
                .map(|j| {
                    let row: Vec<f64> = (0..=j).map(|c| b[c][j]).collect();
                    forward(&l, d, &row)[j]
                })
                .collect()
        }
    }
}

/// How far the draws are from what `metric` (centred at `centre`) says: the largest
/// ratio (either way) of a whitened variance ([`whitened_variances`]) to 1, and the
/// largest offset of the draws' mean from `centre` in whitened units.
pub fn disagreement(metric: &MetricStore, centre: &[f32], m: &Moments) -> (f64, f64) {
    let d = m.mean.len();
    let worst_var = whitened_variances(metric, m)
        .into_iter()
        .fold(1.0f64, |a, v| a.max(ratio(v)));
    let o: Vec<f64> = (0..d).map(|j| m.mean[j] - centre[j] as f64).collect();
    let o = match metric {
        MetricStore::Diagonal(diag) => o
            .iter()
            .zip(diag)
            .map(|(v, &m)| v / (m as f64).sqrt())
            .collect(),
        MetricStore::Cholesky(l) => {
            let l: Vec<f64> = l.iter().map(|&v| v as f64).collect();
            forward(&l, d, &o)
        }
    };
    (worst_var, o.iter().fold(0.0, |a, v| a.max(v.abs())))
}

/// `max(v, 1/v)`, infinite for a non-positive or non-finite `v`.
fn ratio(v: f64) -> f64 {
    if v > 0.0 && v.is_finite() {
        v.max(1.0 / v)
    } else {
        f64::INFINITY
    }
}

/// Forward substitution: `x` with `L x = b` for the lower triangle of row-major `L`
/// (`d × d`), the first `b.len()` entries (they need no more of `b`).
fn forward(l: &[f64], d: usize, b: &[f64]) -> Vec<f64> {
    let mut x = vec![0.0f64; b.len()];
    for i in 0..b.len() {
        let s = super::dense::dot(&l[i * d..i * d + i], &x);
        x[i] = (b[i] - s) / l[i * d + i];
    }
    x
}

/// Draws per parameter from which their dense covariance is the metric (fewer give too
/// noisy an estimate of `d(d+1)/2` entries: the base metric rescaled instead).
pub const DENSE_DRAWS_PER_PARAM: usize = 50;

/// A metric from the moments. With at least [`DENSE_DRAWS_PER_PARAM`] draws a parameter
/// (and `d` ≤ [`MAX_DENSE_METRIC`] or a dense `base`): their covariance, off-diagonals shrunk toward zero
/// by `5/(n+5)` as Stan regularises it. With fewer: `base` stretched along the axes it
/// whitens to the draws' variances there (`L·diag(√wⱼ)` for `M = LLᵀ`), which few draws
/// estimate well and which keeps the base's correlations: rescaling the marginal
/// variances instead would tilt the narrow directions of strongly correlated
/// parameters (one-hot features beside an intercept) into wide ones. `None` when a
/// variance is zero or not finite (a chain that never moved).
pub fn metric_from(m: &Moments, base: &MetricStore) -> Option<MetricStore> {
    let d = m.mean.len();
    let var: Vec<f64> = (0..d).map(|j| m.var(j)).collect();
    if var.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let n = m.n as f64;
    let dense = d <= MAX_DENSE_METRIC || matches!(base, MetricStore::Cholesky(_));
    if dense && m.dense && m.n >= DENSE_DRAWS_PER_PARAM * d {
        let shrink = n / (n + 5.0);
        let mut c = m.cov.clone();
        for i in 0..d {
            for j in 0..d {
                if i != j {
                    c[i * d + j] *= shrink;
                }
            }
        }
        if sgld::linalg::cholesky(&mut c, d).is_ok() && c.iter().all(|v| v.is_finite()) {
            return Some(MetricStore::Cholesky(c.iter().map(|&v| v as f32).collect()));
        }
    }
    let w = whitened_variances(base, m);
    if w.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    Some(match base {
        MetricStore::Cholesky(l) => {
            let mut l = l.clone();
            for row in l.chunks_exact_mut(d) {
                for (v, wj) in row.iter_mut().zip(&w) {
                    *v *= wj.sqrt() as f32;
                }
            }
            MetricStore::Cholesky(l)
        }
        MetricStore::Diagonal(diag) => MetricStore::Diagonal(
            diag.iter()
                .zip(&w)
                .map(|(&m, wj)| (m as f64 * wj) as f32)
                .collect(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::draws::Draws;
    use crate::sample::kept::Kept;

    /// Dual averaging finds the step of a known acceptance curve: `a(ε) = exp(−ε)`
    /// reaches 0.65 at `ε = −ln 0.65`.
    #[test]
    fn dual_averaging_finds_the_target_step() {
        let mut da = DualAveraging::new(10.0, 0.65);
        for _ in 0..2000 {
            let a = (-da.step_size()).exp();
            da.update(a);
        }
        let want = -(0.65f64).ln();
        assert!((da.adapted() / want - 1.0).abs() < 0.05, "{}", da.adapted());
        // From far below too, and a non-finite acceptance counts as a rejection.
        let mut da = DualAveraging::new(1e-6, 0.65);
        da.update(f64::NAN);
        for _ in 0..2000 {
            let a = (-da.step_size()).exp();
            da.update(a);
        }
        assert!((da.adapted() / want - 1.0).abs() < 0.05, "{}", da.adapted());
    }

    fn chain_of(rows: &[[f32; 2]]) -> Chain {
        let rows: Vec<Vec<f32>> = rows.iter().map(|r| r.to_vec()).collect();
        chain_of_rows(&rows)
    }

    fn chain_of_rows(rows: &[Vec<f32>]) -> Chain {
        let mut draws = Draws::in_memory(rows[0].len());
        let mut kept = Kept::default();
        for (k, r) in rows.iter().enumerate() {
            draws.push(r).unwrap();
            kept.push(k as u64 + 1, 0.1, 0.1);
        }
        Chain::from_draws(0, draws, kept)
    }

    /// Above [`MAX_DENSE_METRIC`] parameters the moments hold `d` variances (no `d × d`
    /// matrix), the same as the dense ones' diagonal; with a shear the hub's are
    /// `z_hub = θ_hub + Σ μⱼθⱼ`'s, and a metric of those variances agrees with them.
    #[test]
    fn wide_moments_are_variances_and_sheared_ones_the_hubs_z() {
        let d = MAX_DENSE_METRIC + 44;
        let row = |k: usize| -> Vec<f32> {
            (0..d)
                .map(|j| ((k * 7 + j * 3) % 11) as f32 - 5.0 + 0.1 * j as f32)
                .collect()
        };
        let rows: Vec<Vec<f32>> = (0..40).map(row).collect();
        let (a, b) = (chain_of_rows(&rows[..20]), chain_of_rows(&rows[20..]));
        let chains = [a, b];
        let diag = MetricStore::Diagonal(vec![1.0; d]);
        let m = window_moments(&chains, &[0, 0], &diag, None)
            .unwrap()
            .unwrap();
        assert!(!m.dense && m.cov.len() == d && m.n == 40);
        let var = |x: &[f64]| {
            let mean = x.iter().sum::<f64>() / x.len() as f64;
            x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (x.len() - 1) as f64
        };
        for j in [0, 1, d - 1] {
            let col: Vec<f64> = rows.iter().map(|r| r[j] as f64).collect();
            assert!((m.var(j) - var(&col)).abs() < 1e-9 * var(&col), "{j}");
        }
        let mut mu = vec![0.0; d];
        (mu[1], mu[d - 1]) = (0.5, -2.0);
        let shear = Shear { hub: 0, mu };
        let m = window_moments(&chains, &[0, 0], &diag, Some(&shear))
            .unwrap()
            .unwrap();
        let z: Vec<f64> = rows
            .iter()
            .map(|r| r[0] as f64 + 0.5 * r[1] as f64 - 2.0 * r[d - 1] as f64)
            .collect();
        assert!((m.var(0) - var(&z)).abs() < 1e-9 * var(&z));
        assert!((m.mean[0] - z.iter().sum::<f64>() / 40.0).abs() < 1e-9);
        let col: Vec<f64> = rows.iter().map(|r| r[1] as f64).collect();
        assert!((m.var(1) - var(&col)).abs() < 1e-9 * var(&col));
        let fitted = metric_from(&m, &diag).unwrap();
        let centre: Vec<f32> = m.mean.iter().map(|&v| v as f32).collect();
        let (v, o) = disagreement(&fitted, &centre, &m);
        assert!((v - 1.0).abs() < 1e-5 && o < 1e-5, "{v} {o}");
    }

    /// The chains are pooled: two chains apart widen the first coordinate's variance;
    /// a metric agrees with the moments it matches and disagrees with a wrong one.
    #[test]
    fn moments_pool_within_chains_and_disagreement_sees_a_wrong_metric() {
        let a = chain_of(&[[0.0, 0.0], [2.0, 2.0], [0.0, 2.0], [2.0, 0.0]]);
        let b = chain_of(&[[10.0, 0.0], [12.0, 2.0], [10.0, 2.0], [12.0, 0.0]]);
        let m = window_moments(&[a, b], &[0, 0], &MetricStore::Diagonal(vec![1.0; 2]), None)
            .unwrap()
            .unwrap();
        assert_eq!(m.n, 8);
        assert!((m.mean[0] - 6.0).abs() < 1e-12 && (m.mean[1] - 1.0).abs() < 1e-12);
        // x: deviations ±4, ±6 (four each) from 6: 208/7; y: ±1, 8/7; uncorrelated.
        assert!((m.cov[0] - 208.0 / 7.0).abs() < 1e-12, "{:?}", m.cov);
        assert!((m.cov[3] - 8.0 / 7.0).abs() < 1e-12, "{:?}", m.cov);
        assert!(m.cov[1].abs() < 1e-12);
        let exact = MetricStore::Diagonal(vec![208.0 / 7.0, 8.0 / 7.0]);
        let (v, o) = disagreement(&exact, &[6.0, 1.0], &m);
        assert!((v - 1.0).abs() < 1e-6 && o < 1e-6, "{v} {o}");
        let dense = MetricStore::Cholesky(vec![
            (208.0f32 / 7.0).sqrt(),
            0.0,
            0.0,
            (8.0f32 / 7.0).sqrt(),
        ]);
        let (v, o) = disagreement(&dense, &[6.0, 1.0], &m);
        assert!((v - 1.0).abs() < 1e-6 && o < 1e-6, "{v} {o}");
        let narrow = MetricStore::Cholesky(vec![0.1, 0.0, 0.0, 1.0]);
        let (v, o) = disagreement(&narrow, &[0.0, 1.0], &m);
        assert!(v > 100.0 && o > 50.0, "{v} {o}");
        // Too few draws for a dense metric: the base rescaled to the draws' variances.
        let Some(MetricStore::Cholesky(l)) = metric_from(&m, &narrow) else {
            panic!("a rescaled dense metric expected")
        };
        assert!((l[0] * l[0] - 208.0 / 7.0).abs() < 1e-4 && (l[3] * l[3] - 8.0 / 7.0).abs() < 1e-5);
        assert!(matches!(
            metric_from(&m, &exact),
            Some(MetricStore::Diagonal(_))
        ));
        // Rescaled along its own axes, a correlated base keeps its correlation.
        let corr = MetricStore::Cholesky(vec![1.0, 0.0, 0.9, (1.0f32 - 0.81).sqrt()]);
        let Some(MetricStore::Cholesky(l)) = metric_from(&m, &corr) else {
            panic!("a rescaled dense metric expected")
        };
        let w = whitened_variances(&MetricStore::Cholesky(l.clone()), &m);
        assert!(w.iter().all(|v| (v - 1.0).abs() < 1e-4), "{w:?}");
        assert_eq!(l[1], 0.0);
    }
}
