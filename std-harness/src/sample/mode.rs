//! The posterior's mode and its Laplace approximation, on the full data: the log
//! posterior and its gradient summed over fixed chunks of rows (in parallel, added in
//! chunk order, so the result does not depend on the thread count), L-BFGS for the mode,
//! and the precision `P = F + P₀` (the empirical Fisher `F = Σᵢ gᵢgᵢᵀ` plus the prior's
//! precision) whose inverse is the preconditioner of the warm-up.

use rayon::prelude::*;
use sgld::sampler::{Mala, Metric};

use super::problem::ModelSync;

/// Rows per chunk of a full-data pass.
const CHUNK: usize = 2048;

/// Dense metrics up to this dimension; diagonal above.
pub const MAX_DENSE_METRIC: usize = 256;

fn chunks(n: usize) -> Vec<Vec<usize>> {
    (0..n.div_ceil(CHUNK))
        .map(|c| (c * CHUNK..((c + 1) * CHUNK).min(n)).collect())
        .collect()
}

/// `log p(θ) + Σᵢ log p(xᵢ|θ)`.
pub fn log_posterior(model: &dyn ModelSync, theta: &[f32]) -> f64 {
    let parts: Vec<f64> = chunks(model.len())
        .par_iter()
        .map(|b| model.log_lik(theta, b))
        .collect();
    model.log_prior(theta) + parts.iter().sum::<f64>()
}

/// `∇ log p(θ) + Σᵢ ∇ log p(xᵢ|θ)`, in f64.
pub fn grad_log_posterior(model: &dyn ModelSync, theta: &[f32]) -> Vec<f64> {
    let d = model.dim();
    let parts: Vec<Vec<f32>> = chunks(model.len())
        .par_iter()
        .map(|b| {
            let mut g = vec![0.0f32; d];
            model.add_log_lik_grad(theta, b, &mut g);
            g
        })
        .collect();
    let mut g = vec![0.0f32; d];
    model.add_log_prior_grad(theta, &mut g);
    let mut out: Vec<f64> = g.iter().map(|&v| v as f64).collect();
    for p in &parts {
        for (o, &v) in out.iter_mut().zip(p) {
            *o += v as f64;
        }
    }
    out
}

/// What the mode search found.
#[derive(Debug, Clone)]
pub struct Mode {
    /// The estimate of the mode.
    pub theta: Vec<f32>,
    /// Its log posterior.
    pub log_post: f64,
    /// L-BFGS iterations (one or more full-data passes each).
    pub iterations: u32,
}

fn to_f32(x: &[f64]) -> Vec<f32> {
    x.iter().map(|&v| v as f32).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The mode by L-BFGS (ten pairs, backtracking to the Armijo condition) from `start`;
/// stops when the gradient's largest entry falls below `1e-4·(1 + |log p|/N)·N` relative
/// scale, a line search fails (a kink of a Laplace prior, or f32 round-off), or after
/// 500 iterations. Errors when the log posterior at the start is not finite.
pub fn find_mode(model: &dyn ModelSync, start: &[f32]) -> Result<Mode, String> {
    let n = model.len().max(1) as f64;
    let mut x: Vec<f64> = start.iter().map(|&v| v as f64).collect();
    let mut f = -log_posterior(model, start);
    if !f.is_finite() {
        return Err(format!(
            "the log posterior at the start is not finite ({}): check the data's scale or --init",
            -f
        ));
    }
    let mut g: Vec<f64> = grad_log_posterior(model, start)
        .iter()
        .map(|v| -v)
        .collect();
    if !g.iter().all(|v| v.is_finite()) {
        return Err("the gradient of the log posterior at the start is not finite".into());
    }
    let (mut s_hist, mut y_hist): (Vec<Vec<f64>>, Vec<Vec<f64>>) = (vec![], vec![]);
    let mut iterations = 0;
    for _ in 0..500 {
        let gmax = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if gmax <= 1e-5 * n {
            break;
        }
        // Two-loop recursion: p = −H g.
        let mut q = g.clone();
        let k = s_hist.len();
        let mut a = vec![0.0; k];
        for i in (0..k).rev() {
            let rho = 1.0 / dot(&y_hist[i], &s_hist[i]);
            a[i] = rho * dot(&s_hist[i], &q);
            for (qj, yj) in q.iter_mut().zip(&y_hist[i]) {
                *qj -= a[i] * yj;
            }
        }
        let gamma = if k > 0 {
            dot(&s_hist[k - 1], &y_hist[k - 1]) / dot(&y_hist[k - 1], &y_hist[k - 1])
        } else {
            // First step: a unit move of the largest coordinate.
            1.0 / gmax
        };
        for qj in q.iter_mut() {
            *qj *= gamma;
        }
        for i in 0..k {
            let rho = 1.0 / dot(&y_hist[i], &s_hist[i]);
            let b = rho * dot(&y_hist[i], &q);
            for (qj, sj) in q.iter_mut().zip(&s_hist[i]) {
                *qj += (a[i] - b) * sj;
            }
        }
        let p: Vec<f64> = q.iter().map(|v| -v).collect();
        let slope = dot(&g, &p);
        if slope.is_nan() || slope >= 0.0 {
            s_hist.clear();
            y_hist.clear();
            continue;
        }
        let mut t = 1.0;
        let mut accepted = None;
        for _ in 0..40 {
            let xn: Vec<f64> = x.iter().zip(&p).map(|(a, b)| a + t * b).collect();
            let xf = to_f32(&xn);
            let fnew = -log_posterior(model, &xf);
            if fnew.is_finite() && fnew <= f + 1e-4 * t * slope {
                accepted = Some((xn, xf, fnew));
                break;
            }
            t *= 0.5;
        }
        let Some((xn, xf, fnew)) = accepted else {
            break;
        };
        let gn: Vec<f64> = grad_log_posterior(model, &xf).iter().map(|v| -v).collect();
        if !gn.iter().all(|v| v.is_finite()) {
            break;
        }
        let s: Vec<f64> = xn.iter().zip(&x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = gn.iter().zip(&g).map(|(a, b)| a - b).collect();
        iterations += 1;
        let improvement = f - fnew;
        x = xn;
        f = fnew;
        g = gn;
        if dot(&s, &y) > 1e-12 * dot(&y, &y).sqrt() * dot(&s, &s).sqrt() {
            s_hist.push(s);
            y_hist.push(y);
            if s_hist.len() > 10 {
                s_hist.remove(0);
                y_hist.remove(0);
            }
        }
        if improvement <= 1e-10 * (1.0 + f.abs()) {
            break;
        }
    }
    Ok(Mode {
        theta: to_f32(&x),
        log_post: -f,
        iterations,
    })
}

/// The precision `P = Σᵢ gᵢgᵢᵀ + diag(prior)` at `theta` (`gᵢ = ∇log p(xᵢ|θ)`): the
/// lower triangle of the `d × d` matrix (row-major) up to [`MAX_DENSE_METRIC`]
/// parameters, its diagonal above.
pub fn precision(model: &dyn ModelSync, theta: &[f32], prior: &[f64]) -> Vec<f64> {
    let d = model.dim();
    let dense = d <= MAX_DENSE_METRIC;
    let size = if dense { d * d } else { d };
    let parts: Vec<Vec<f64>> = chunks(model.len())
        .par_iter()
        .map(|rows| {
            let mut f = vec![0.0f64; size];
            let mut g = vec![0.0f32; d];
            let mut nz: Vec<(usize, f64)> = Vec::with_capacity(d);
            for &i in rows {
                // The non-zero entries of gᵢ (sparse rows touch few).
                g.fill(0.0);
                model.add_log_lik_grad(theta, &[i], &mut g);
                nz.clear();
                nz.extend(
                    g.iter()
                        .enumerate()
                        .filter(|(_, v)| **v != 0.0)
                        .map(|(j, &v)| (j, v as f64)),
                );
                for (k, &(j, a)) in nz.iter().enumerate() {
                    if dense {
                        for &(l, b) in &nz[..=k] {
                            f[j * d + l] += a * b;
                        }
                    } else {
                        f[j] += a * a;
                    }
                }
            }
            f
        })
        .collect();
    let mut p = vec![0.0f64; size];
    for part in &parts {
        for (a, b) in p.iter_mut().zip(part) {
            *a += b;
        }
    }
    for (j, &pj) in prior.iter().enumerate().take(d) {
        p[if dense { j * d + j } else { j }] += pj;
    }
    p
}

/// The negative Hessian of the log posterior at `theta` by central differences of its
/// gradient (`h = 10⁻³·max(1, |θₖ|)` a coordinate, symmetrised), as a full `d × d`
/// row-major matrix; `None` above [`MAX_DENSE_METRIC`] parameters or where a gradient
/// is not finite. Costs `2d` full-data gradients.
pub fn hessian_precision(model: &dyn ModelSync, theta: &[f32]) -> Option<Vec<f64>> {
    let d = model.dim();
    if d > MAX_DENSE_METRIC {
        return None;
    }
    let mut h = vec![0.0f64; d * d];
    let mut t = theta.to_vec();
    for k in 0..d {
        let step = 1e-3 * (theta[k].abs() as f64).max(1.0);
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

/// A preconditioner `M ≈ P⁻¹`, owned, with the Laplace approximation's sds.
#[derive(Debug, Clone)]
pub enum MetricStore {
    /// The Cholesky factor of `M` (row-major lower triangle).
    Cholesky(Vec<f32>),
    /// `diag(M)`.
    Diagonal(Vec<f32>),
}

impl MetricStore {
    /// The metric the samplers borrow.
    pub fn metric(&self) -> Metric<'_> {
        match self {
            MetricStore::Cholesky(l) => Metric::Cholesky(l),
            MetricStore::Diagonal(m) => Metric::Diagonal(m),
        }
    }

    /// MALA on `model`'s full data with this metric (`M` itself, by its Cholesky factor
    /// when dense).
    pub fn mala<'m>(
        &'m self,
        model: &'m dyn ModelSync,
    ) -> Result<Mala<'m, &'m dyn ModelSync>, sgld::Error> {
        let m = Mala::new(model);
        match self {
            MetricStore::Cholesky(l) => m.with_covariance_factor(l),
            MetricStore::Diagonal(v) => m.with_metric(v),
        }
    }

    /// `"dense"` or `"diagonal"`.
    pub fn kind(&self) -> &'static str {
        match self {
            MetricStore::Cholesky(_) => "dense",
            MetricStore::Diagonal(_) => "diagonal",
        }
    }

    /// `out = M^½ z` with `M^½ = L` (dense) or `√m` (diagonal).
    pub fn sqrt_times(&self, z: &[f64]) -> Vec<f64> {
        match self {
            MetricStore::Cholesky(l) => {
                let d = z.len();
                (0..d)
                    .map(|i| (0..=i).map(|k| l[i * d + k] as f64 * z[k]).sum())
                    .collect()
            }
            MetricStore::Diagonal(m) => m
                .iter()
                .zip(z)
                .map(|(a, b)| (*a as f64).sqrt() * b)
                .collect(),
        }
    }

    /// `out = (M^½)ᵀ g`: a gradient in the whitened coordinates `z = M^{-½}θ`.
    pub fn whiten_grad(&self, g: &[f32], out: &mut [f32]) {
        match self {
            MetricStore::Cholesky(l) => {
                let d = g.len();
                out.fill(0.0);
                for (i, &gi) in g.iter().enumerate() {
                    for (o, &lik) in out[..=i].iter_mut().zip(&l[i * d..i * d + i + 1]) {
                        *o += lik * gi;
                    }
                }
            }
            MetricStore::Diagonal(m) => {
                for ((o, &mi), &gi) in out.iter_mut().zip(m).zip(g) {
                    *o = mi.sqrt() * gi;
                }
            }
        }
    }

    /// The sds of `M` (`√Mⱼⱼ`).
    pub fn sds(&self) -> Vec<f64> {
        match self {
            MetricStore::Cholesky(l) => {
                let d = l.len().isqrt();
                (0..d)
                    .map(|i| {
                        l[i * d..i * d + i + 1]
                            .iter()
                            .map(|&v| v as f64 * v as f64)
                            .sum::<f64>()
                            .sqrt()
                    })
                    .collect()
            }
            MetricStore::Diagonal(m) => m.iter().map(|&v| (v as f64).sqrt()).collect(),
        }
    }

    /// The same metric scaled by `s` (`M·s`).
    pub fn scaled(&self, s: f64) -> MetricStore {
        let r = s.sqrt();
        match self {
            MetricStore::Cholesky(l) => {
                MetricStore::Cholesky(l.iter().map(|&v| (v as f64 * r) as f32).collect())
            }
            MetricStore::Diagonal(m) => {
                MetricStore::Diagonal(m.iter().map(|&v| (v as f64 * s) as f32).collect())
            }
        }
    }
}

/// The covariance `M = P⁻¹` from a precision of [`precision`]: by Cholesky factors when
/// dense (falling back to `1/Pⱼⱼ` on the diagonal when `P` is not positive definite),
/// `1/Pⱼⱼ` when diagonal. Also returns the Cholesky factor of `P` when dense (MALA's
/// precision factor).
pub fn covariance(p: &[f64], d: usize) -> (MetricStore, Option<Vec<f32>>) {
    // A diagonal entry that is not positive (no information on the parameter) is
    // floored at 10⁻⁶ of the largest, not left to give an infinite variance.
    let diagonal = |p: &[f64], stride: usize| {
        let top = (0..d).map(|j| p[j * stride]).fold(0.0f64, f64::max);
        let floor = (1e-6 * top).max(f64::MIN_POSITIVE);
        MetricStore::Diagonal(
            (0..d)
                .map(|j| (1.0 / p[j * stride].max(floor)) as f32)
                .collect(),
        )
    };
    if p.len() != d * d {
        return (diagonal(p, 1), None);
    }
    let mut r = p.to_vec();
    if sgld::linalg::cholesky(&mut r, d).is_err() {
        return (diagonal(p, d + 1), None);
    }
    // Σ = R⁻ᵀR⁻¹: invert the lower-triangular R column by column, then Σ = R⁻ᵀ R⁻¹.
    let mut inv = vec![0.0f64; d * d];
    for c in 0..d {
        for i in c..d {
            let mut s = if i == c { 1.0 } else { 0.0 };
            for k in c..i {
                s -= r[i * d + k] * inv[k * d + c];
            }
            inv[i * d + c] = s / r[i * d + i];
        }
    }
    let mut sigma = vec![0.0f64; d * d];
    for i in 0..d {
        for j in 0..=i {
            // (R⁻ᵀR⁻¹)ᵢⱼ = Σₖ inv[k][i]·inv[k][j], k ≥ max(i, j) = i.
            let v: f64 = (i..d).map(|k| inv[k * d + i] * inv[k * d + j]).sum();
            sigma[i * d + j] = v;
            sigma[j * d + i] = v;
        }
    }
    let factor = Some(r.iter().map(|&v| v as f32).collect());
    match sgld::linalg::cholesky(&mut sigma, d) {
        // The factor's strict upper triangle is zero.
        Ok(()) => (
            MetricStore::Cholesky(sigma.iter().map(|&v| v as f32).collect()),
            factor,
        ),
        Err(_) => (diagonal(p, d + 1), factor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The covariance of a 2×2 precision is its inverse, factored.
    #[test]
    fn covariance_inverts_the_precision() {
        let p = [4.0, 0.0, 1.0, 2.0]; // lower triangle of [[4, 1], [1, 2]]
        let (m, r) = covariance(&p, 2);
        let MetricStore::Cholesky(l) = m else {
            panic!("dense expected")
        };
        // Σ = [[2, −1], [−1, 4]] / 7
        let s00 = (l[0] * l[0]) as f64;
        let s10 = (l[2] * l[0]) as f64;
        let s11 = (l[2] * l[2] + l[3] * l[3]) as f64;
        assert!((s00 - 2.0 / 7.0).abs() < 1e-6);
        assert!((s10 + 1.0 / 7.0).abs() < 1e-6);
        assert!((s11 - 4.0 / 7.0).abs() < 1e-6);
        assert_eq!(l[1], 0.0);
        assert!(r.is_some());
        let d = MetricStore::Diagonal(vec![4.0, 9.0]);
        assert_eq!(d.sds(), vec![2.0, 3.0]);
        assert_eq!(d.sqrt_times(&[1.0, 1.0]), vec![2.0, 3.0]);
    }
}
