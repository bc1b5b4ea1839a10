//! Small dense symmetric eigenproblems in f64 (cyclic Jacobi), in caller storage.

use crate::error::{Error, check_len};

/// Sweeps after which [`sym_eigen`] gives up (convergence is quadratic; 50 is ample).
const MAX_SWEEPS: usize = 50;

/// Eigen-decomposes the symmetric `n × n` row-major matrix `a` in place by cyclic
/// Jacobi rotations: on return its diagonal holds the eigenvalues (unsorted) and, if
/// given, `vectors` (`n × n`) holds the matching eigenvectors as columns.
///
/// Both triangles are read and updated; pass a symmetric matrix. Accuracy: off-diagonal mass below `10⁻³⁰` of the
/// Frobenius norm squared, i.e. eigenvalues to a few ulps of the largest in magnitude.
/// Errors on a wrong length or a non-finite entry.
///
/// ```
/// let mut a = [2.0, 1.0, 1.0, 2.0];
/// sgld::linalg::sym_eigen(&mut a, 2, None)?;
/// let (mut l0, mut l1) = (a[0], a[3]);
/// if l0 > l1 { core::mem::swap(&mut l0, &mut l1) }
/// assert!((l0 - 1.0).abs() < 1e-12 && (l1 - 3.0).abs() < 1e-12);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn sym_eigen(a: &mut [f64], n: usize, mut vectors: Option<&mut [f64]>) -> Result<(), Error> {
    let nn = n.checked_mul(n).ok_or(Error::InvalidParameter {
        what: "matrix dimension overflows usize",
    })?;
    check_len("matrix", nn, a.len())?;
    if !a.iter().all(|x| x.is_finite()) {
        return Err(Error::NonFinite { what: "matrix" });
    }
    if let Some(v) = vectors.as_deref_mut() {
        check_len("eigenvector storage", nn, v.len())?;
        v.fill(0.0);
        for i in 0..n {
            v[i * n + i] = 1.0;
        }
    }
    let frob: f64 = a.iter().map(|x| x * x).sum();
    if frob == 0.0 {
        return Ok(());
    }
    for _ in 0..MAX_SWEEPS {
        let mut off = 0.0;
        for p in 0..n {
            for q in p + 1..n {
                off += a[p * n + q] * a[p * n + q];
            }
        }
        if off <= 1e-30 * frob {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = if theta.abs() > 1e150 {
                    0.5 / theta
                } else {
                    let t = 1.0 / (theta.abs() + libm::sqrt(theta * theta + 1.0));
                    if theta < 0.0 { -t } else { t }
                };
                let c = 1.0 / libm::sqrt(t * t + 1.0);
                let s = t * c;
                let tau = s / (1.0 + c);
                a[p * n + p] -= t * apq;
                a[q * n + q] += t * apq;
                a[p * n + q] = 0.0;
                a[q * n + p] = 0.0;
                for r in 0..n {
                    if r == p || r == q {
                        continue;
                    }
                    let g = a[r * n + p];
                    let h = a[r * n + q];
                    let rp = g - s * (h + g * tau);
                    let rq = h + s * (g - h * tau);
                    a[r * n + p] = rp;
                    a[p * n + r] = rp;
                    a[r * n + q] = rq;
                    a[q * n + r] = rq;
                }
                if let Some(v) = vectors.as_deref_mut() {
                    for r in 0..n {
                        let g = v[r * n + p];
                        let h = v[r * n + q];
                        v[r * n + p] = g - s * (h + g * tau);
                        v[r * n + q] = h + s * (g - h * tau);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The largest eigenvalue of a symmetric matrix (destroys `a`; see [`sym_eigen`]).
pub fn sym_max_eigenvalue(a: &mut [f64], n: usize) -> Result<f64, Error> {
    sym_eigen(a, n, None)?;
    Ok((0..n)
        .map(|i| a[i * n + i])
        .fold(f64::NEG_INFINITY, f64::max))
}

/// Cholesky factorisation in place: on return the lower triangle of the row-major
/// `n × n` matrix `a` holds `L` with `A = LLᵀ`, and the strict upper triangle is zero.
/// Reads the lower triangle only. Errors on a wrong length, a non-finite entry, or a
/// matrix that is not positive definite (a pivot `≤ 0`).
///
/// ```
/// let mut a = [4.0, 2.0, 2.0, 5.0];
/// sgld::linalg::cholesky(&mut a, 2)?;
/// assert_eq!(a, [2.0, 0.0, 1.0, 2.0]);
/// assert!(sgld::linalg::cholesky(&mut [1.0, 2.0, 2.0, 1.0], 2).is_err());
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn cholesky(a: &mut [f64], n: usize) -> Result<(), Error> {
    let nn = n.checked_mul(n).ok_or(Error::InvalidParameter {
        what: "matrix dimension overflows usize",
    })?;
    check_len("matrix", nn, a.len())?;
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            if !s.is_finite() {
                return Err(Error::NonFinite { what: "matrix" });
            }
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return Err(Error::InvalidParameter {
                        what: "matrix is not positive definite",
                    });
                }
                a[i * n + i] = libm::sqrt(s);
            } else {
                a[i * n + j] = s / a[j * n + j];
            }
        }
        for j in i + 1..n {
            a[i * n + j] = 0.0;
        }
    }
    Ok(())
}

/// Solves `L·x = b` in place for the lower triangle of row-major `L` (`n × n`, `n =
/// x.len()`, trusted): forward substitution in f32.
pub(crate) fn solve_lower(l: &[f32], x: &mut [f32]) {
    let n = x.len();
    for i in 0..n {
        let s = x[i] - crate::kernels::imp::dot(&l[i * n..i * n + i], &x[..i]);
        x[i] = s / l[i * n + i];
    }
}

/// Solves `Lᵀ·x = b` in place (back substitution with the transpose of the lower
/// triangle of `L`, `n = x.len()`, trusted).
pub(crate) fn solve_lower_t(l: &[f32], x: &mut [f32]) {
    let n = x.len();
    for i in (0..n).rev() {
        let mut s = x[i];
        for k in i + 1..n {
            s -= l[k * n + i] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
}
