//! Small dense symmetric eigenproblems in f64, in caller storage: every eigenpair by
//! cyclic Jacobi, the largest eigenvalue alone by Householder tridiagonalisation and
//! bisection; Cholesky factors and triangular solves.

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
    let nn = check_square(a, n)?;
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

/// `n²`, when `a` holds that many values, all finite.
fn check_square(a: &[f64], n: usize) -> Result<usize, Error> {
    let nn = n.checked_mul(n).ok_or(Error::InvalidParameter {
        what: "matrix dimension overflows usize",
    })?;
    check_len("matrix", nn, a.len())?;
    if !a.iter().all(|x| x.is_finite()) {
        return Err(Error::NonFinite { what: "matrix" });
    }
    Ok(nn)
}

/// The largest eigenvalue of a symmetric `n × n` row-major matrix (destroys `a`; both
/// triangles are read). Householder reduction to tridiagonal form, `4n³/3` flops in
/// place, then bisection on the Sturm sequence of the tridiagonal matrix: to a few ulps
/// of the largest eigenvalue in magnitude, as [`sym_eigen`], at a small fraction of its
/// cost. `−∞` for `n = 0`. Errors on a wrong length or a non-finite entry.
///
/// ```
/// let mut a = [2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 0.0, 1.0, 2.0];
/// let top = sgld::linalg::sym_max_eigenvalue(&mut a, 3)?;
/// assert!((top - (2.0 + 2f64.sqrt())).abs() < 1e-12);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn sym_max_eigenvalue(a: &mut [f64], n: usize) -> Result<f64, Error> {
    check_square(a, n)?;
    if n == 0 {
        return Ok(f64::NEG_INFINITY);
    }
    tridiagonalise(a, n);
    finite(max_tridiagonal(n, |i| a[i * n + i], |i| a[i * n + i + 1]))
}

/// The largest eigenvalue of the symmetric tridiagonal matrix with diagonal `diag` and
/// off-diagonal `off` (`off.len() + 1 == diag.len()`), by bisection on its Sturm
/// sequence. `−∞` for an empty matrix. Errors on a wrong length or a non-finite entry.
///
/// ```
/// // [[1, 2], [2, 1]] has eigenvalues −1 and 3.
/// let top = sgld::linalg::tridiagonal_max_eigenvalue(&[1.0, 1.0], &[2.0])?;
/// assert!((top - 3.0).abs() < 1e-12);
/// # Ok::<(), sgld::Error>(())
/// ```
pub fn tridiagonal_max_eigenvalue(diag: &[f64], off: &[f64]) -> Result<f64, Error> {
    let n = diag.len();
    if n == 0 {
        return if off.is_empty() {
            Ok(f64::NEG_INFINITY)
        } else {
            Err(Error::LengthMismatch {
                what: "off-diagonal",
                expected: 0,
                found: off.len(),
            })
        };
    }
    check_len("off-diagonal", n - 1, off.len())?;
    if !diag.iter().chain(off).all(|x| x.is_finite()) {
        return Err(Error::NonFinite { what: "matrix" });
    }
    finite(max_tridiagonal(n, |i| diag[i], |i| off[i]))
}

/// `top`, or an error where the reduction overflowed.
fn finite(top: f64) -> Result<f64, Error> {
    if top.is_finite() {
        Ok(top)
    } else {
        Err(Error::NonFinite { what: "matrix" })
    }
}

/// Householder reduction of the symmetric `a` (`n × n`, `n ≥ 1`, trusted) to a similar
/// tridiagonal matrix, whose diagonal is left on `a`'s diagonal and whose off-diagonal
/// entry `k` at `a[k][k + 1]`. Step `k` keeps its reflector `v` in column `k` below the
/// diagonal and `p = βA₂₂v` in row `k` beside it, then updates the trailing block
/// `A₂₂ ← A₂₂ − vwᵀ − wvᵀ` with `w = p − (βvᵀp/2)v` (Golub & Van Loan, §8.3.1).
fn tridiagonalise(a: &mut [f64], n: usize) {
    for k in 0..n.saturating_sub(2) {
        let lo = k + 1;
        // The column below the diagonal, scaled to at most 1 in magnitude.
        let scale = (lo..n).map(|i| a[i * n + k].abs()).fold(0.0, f64::max);
        if scale == 0.0 {
            continue;
        }
        let mut sigma = 0.0;
        for i in lo..n {
            let v = a[i * n + k] / scale;
            a[i * n + k] = v;
            sigma += v * v;
        }
        let x0 = a[lo * n + k];
        let norm = libm::sqrt(sigma);
        let alpha = if x0 > 0.0 { -norm } else { norm };
        a[lo * n + k] = x0 - alpha;
        let vtv: f64 = (lo..n).map(|i| a[i * n + k] * a[i * n + k]).sum();
        let beta = 2.0 / vtv;
        // p = βA₂₂v into row k.
        let mut vtp = 0.0;
        for i in lo..n {
            let row = &a[i * n + lo..i * n + n];
            let p = beta
                * row
                    .iter()
                    .zip(lo..n)
                    .map(|(x, j)| x * a[j * n + k])
                    .sum::<f64>();
            a[k * n + i] = p;
            vtp += p * a[i * n + k];
        }
        // w = p − (βvᵀp/2)v, in place of p.
        let half = 0.5 * beta * vtp;
        for i in lo..n {
            a[k * n + i] -= half * a[i * n + k];
        }
        for i in lo..n {
            let (vi, wi) = (a[i * n + k], a[k * n + i]);
            for j in lo..n {
                let (vj, wj) = (a[j * n + k], a[k * n + j]);
                a[i * n + j] -= vi * wj + wi * vj;
            }
        }
        a[k * n + lo] = alpha * scale;
    }
}

/// Bisection for the largest eigenvalue of the tridiagonal matrix with diagonal `diag(i)`
/// (`i < n`) and off-diagonal `off(i)` (`i < n − 1`), from Gershgorin's interval.
fn max_tridiagonal(n: usize, diag: impl Fn(usize) -> f64, off: impl Fn(usize) -> f64) -> f64 {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut e2max = 0.0f64;
    for i in 0..n {
        let left = if i > 0 { off(i - 1).abs() } else { 0.0 };
        let right = if i + 1 < n { off(i).abs() } else { 0.0 };
        lo = lo.min(diag(i) - left - right);
        hi = hi.max(diag(i) + left + right);
        e2max = e2max.max(right * right);
    }
    if e2max == 0.0 {
        // Diagonal: the largest entry, exactly.
        return hi;
    }
    let pivmin = f64::MIN_POSITIVE * e2max.max(1.0);
    let width = f64::EPSILON * lo.abs().max(hi.abs()) + pivmin;
    lo -= 2.0 * width;
    hi += 2.0 * width;
    // Invariant: λ_max ≥ lo and every eigenvalue < hi; halved until they are neighbours
    // (about 60 halvings), so an eigenvalue a float can hold comes out exactly.
    for _ in 0..256 {
        let mid = 0.5 * (lo + hi);
        if !(mid > lo && mid < hi) {
            break;
        }
        if count_below(n, &diag, &off, mid, pivmin) == n {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    lo
}

/// The number of eigenvalues below `x`: the negative pivots of `T − xI = LDLᵀ`, a pivot
/// smaller than `pivmin` in magnitude taken as `−pivmin`.
fn count_below(
    n: usize,
    diag: &impl Fn(usize) -> f64,
    off: &impl Fn(usize) -> f64,
    x: f64,
    pivmin: f64,
) -> usize {
    let mut count = 0;
    let mut q = 1.0;
    for i in 0..n {
        let e2 = if i > 0 { off(i - 1) * off(i - 1) } else { 0.0 };
        q = diag(i) - x - e2 / q;
        if q.abs() < pivmin {
            q = -pivmin;
        }
        if q < 0.0 {
            count += 1;
        }
    }
    count
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
