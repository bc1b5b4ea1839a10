//! Tools around ICA: centring and whitening, a FastICA initialiser (Hyvärinen 1999:
//! symmetric decorrelation, log-cosh contrast), the Amari distance (Amari, Cichocki &
//! Yang 1996), the instability index of eq. 21, and kurtosis.
//!
//! Matrices are `d × d` row-major `Vec<f64>`; data are `n × d` row-major.

use sgld::linalg::sym_eigen;

/// `a · b` for `d × d` matrices.
pub fn matmul(a: &[f64], b: &[f64], d: usize) -> Vec<f64> {
    let mut out = vec![0.0; d * d];
    for i in 0..d {
        for k in 0..d {
            let aik = a[i * d + k];
            for j in 0..d {
                out[i * d + j] += aik * b[k * d + j];
            }
        }
    }
    out
}

/// The transpose.
pub fn transpose(a: &[f64], d: usize) -> Vec<f64> {
    (0..d * d).map(|k| a[(k % d) * d + k / d]).collect()
}

/// `S^p` of a symmetric positive semi-definite matrix (eigenvalues below 1e-300 are
/// floored), via its eigendecomposition.
pub fn sym_pow(s: &[f64], d: usize, p: f64) -> Vec<f64> {
    let mut a = s.to_vec();
    let mut u = vec![0.0; d * d];
    // Cannot fail for a finite d × d matrix.
    let _ = sym_eigen(&mut a, d, Some(&mut u));
    let mut out = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            out[i * d + j] = (0..d)
                .map(|k| u[i * d + k] * a[k * d + k].max(1e-300).powf(p) * u[j * d + k])
                .sum();
        }
    }
    out
}

/// Column means and the biased covariance `XᵀX/n` of centred data.
pub fn mean_cov(x: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    let n = x.len() / d;
    let mut mean = vec![0.0; d];
    for row in x.chunks_exact(d) {
        for (m, v) in mean.iter_mut().zip(row) {
            *m += v / n as f64;
        }
    }
    let mut cov = vec![0.0; d * d];
    for row in x.chunks_exact(d) {
        for i in 0..d {
            for j in 0..d {
                cov[i * d + j] += (row[i] - mean[i]) * (row[j] - mean[j]) / n as f64;
            }
        }
    }
    (mean, cov)
}

/// Centred and whitened data `z = V (x − μ)` with `V = C^{-1/2}`, so `cov z = I`.
pub struct Whitened {
    /// The whitened data, `n × d`.
    pub z: Vec<f64>,
    /// The whitening matrix `V`.
    pub v: Vec<f64>,
    /// The means removed.
    pub mean: Vec<f64>,
}

/// Centres and whitens `x` (`n × d`).
pub fn whiten(x: &[f64], d: usize) -> Whitened {
    let (mean, cov) = mean_cov(x, d);
    let v = sym_pow(&cov, d, -0.5);
    let mut z = vec![0.0; x.len()];
    for (zr, xr) in z.chunks_exact_mut(d).zip(x.chunks_exact(d)) {
        for i in 0..d {
            zr[i] = (0..d).map(|k| v[i * d + k] * (xr[k] - mean[k])).sum();
        }
    }
    Whitened { z, v, mean }
}

/// Symmetric decorrelation `W ← (WWᵀ)^{-1/2} W`.
fn decorrelate(w: &[f64], d: usize) -> Vec<f64> {
    let wwt = matmul(w, &transpose(w, d), d);
    matmul(&sym_pow(&wwt, d, -0.5), w, d)
}

/// FastICA on whitened data `z` (`n × d`): symmetric, `g(u) = tanh(u)`. Starts from
/// `w0` (row-major, e.g. the identity); returns the unmixing matrix for `z` and the
/// number of iterations. Converges when every row changes direction by less than `tol`.
pub fn fastica(z: &[f64], d: usize, w0: &[f64], max_iter: usize, tol: f64) -> (Vec<f64>, usize) {
    let n = z.len() / d;
    let mut w = decorrelate(w0, d);
    for it in 1..=max_iter {
        let mut next = vec![0.0; d * d];
        let mut gp = vec![0.0; d];
        for row in z.chunks_exact(d) {
            for i in 0..d {
                let y: f64 = (0..d).map(|k| w[i * d + k] * row[k]).sum();
                let g = y.tanh();
                gp[i] += (1.0 - g * g) / n as f64;
                for j in 0..d {
                    next[i * d + j] += g * row[j] / n as f64;
                }
            }
        }
        for i in 0..d {
            for j in 0..d {
                next[i * d + j] -= gp[i] * w[i * d + j];
            }
        }
        let next = decorrelate(&next, d);
        let change = (0..d)
            .map(|i| {
                1.0 - (0..d)
                    .map(|j| next[i * d + j] * w[i * d + j])
                    .sum::<f64>()
                    .abs()
            })
            .fold(0.0f64, f64::max);
        w = next;
        if change < tol {
            return (w, it);
        }
    }
    (w, max_iter)
}

/// The Amari distance between an unmixing `W` and a mixing `A`, normalised to `[0, 1]`:
/// with `P = W A`, `(Σᵢ(Σⱼ|pᵢⱼ|/maxₖ|pᵢₖ| − 1) + Σⱼ(Σᵢ|pᵢⱼ|/maxₖ|pₖⱼ| − 1)) / (2d(d − 1))`;
/// 0 exactly when `P` is a scaled permutation.
pub fn amari_distance(w: &[f64], a: &[f64], d: usize) -> f64 {
    if d < 2 {
        return 0.0;
    }
    let p = matmul(w, a, d);
    let mut s = 0.0;
    for i in 0..d {
        let row_max = (0..d).map(|j| p[i * d + j].abs()).fold(0.0f64, f64::max);
        s += (0..d).map(|j| p[i * d + j].abs()).sum::<f64>() / row_max - 1.0;
    }
    for j in 0..d {
        let col_max = (0..d).map(|i| p[i * d + j].abs()).fold(0.0f64, f64::max);
        s += (0..d).map(|i| p[i * d + j].abs()).sum::<f64>() / col_max - 1.0;
    }
    s / (2.0 * d as f64 * (d as f64 - 1.0))
}

/// The instability index of eq. 21: `Iᵢ = Σⱼ var(Wᵢⱼ) var(xⱼ)`, from per-entry posterior
/// variances (`d × d`) and per-channel data variances.
pub fn instability(var_w: &[f64], var_x: &[f64], d: usize) -> Vec<f64> {
    (0..d)
        .map(|i| (0..d).map(|j| var_w[i * d + j] * var_x[j]).sum())
        .collect()
}

/// The kurtosis `E[(y − ȳ)⁴]/var(y)²` of a series (3 for a Gaussian).
pub fn kurtosis(y: &[f64]) -> f64 {
    let n = y.len() as f64;
    let m = y.iter().sum::<f64>() / n;
    let v = y.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n;
    y.iter().map(|v| (v - m).powi(4)).sum::<f64>() / n / (v * v)
}

/// The recovered components `y = W z` (`n × d`).
pub fn components(w: &[f64], z: &[f64], d: usize) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::with_capacity(z.len() / d); d];
    for row in z.chunks_exact(d) {
        for (i, o) in out.iter_mut().enumerate() {
            o.push((0..d).map(|k| w[i * d + k] * row[k]).sum());
        }
    }
    out
}
