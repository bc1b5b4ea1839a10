//! Posteriors known in closed form, as references: the Normal–inverse-gamma linear
//! regression of handout 6, §4.
//!
//! With `β|σ² ~ N(0, σ²V·I)`, `σ² ~ IG(φ, ψ)` and `N` rows `y = Xβ + e`:
//! `Vₙ = (XᵀX + I/V)⁻¹`, `μₙ = VₙXᵀy`, `aₙ = φ + N/2`,
//! `bₙ = ψ + (yᵀy − μₙᵀVₙ⁻¹μₙ)/2`; `σ²|y ~ IG(aₙ, bₙ)` and `βⱼ|y` is Student-t with
//! `2aₙ` degrees of freedom, location `μₙⱼ` and scale `√(bₙ/aₙ·Vₙⱼⱼ)`.

use statrs::function::gamma::{digamma, ln_gamma};

/// The exact posterior of the NIG regression.
#[derive(Debug, Clone)]
pub struct NigPosterior {
    /// `μₙ`.
    pub mu: Vec<f64>,
    /// `Vₙ` (row-major `d × d`).
    pub vn: Vec<f64>,
    /// `aₙ`.
    pub a: f64,
    /// `bₙ`.
    pub b: f64,
}

/// Trigamma `ψ₁(x)` by recurrence and its asymptotic series (error < 1e-14 for x > 0).
pub fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 6.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + 1.0 / x
        + 0.5 * x2
        + x2 / x * (1.0 / 6.0 - x2 * (1.0 / 30.0 - x2 * (1.0 / 42.0 - x2 / 30.0)))
}

impl NigPosterior {
    /// The posterior for dense `x` (`N × d`, row-major), `y`, and prior `(V, φ, ψ)`.
    pub fn new(x: &[f32], y: &[f32], d: usize, v: f64, phi: f64, psi: f64) -> Result<Self, String> {
        let n = y.len();
        if x.len() != n * d || d == 0 || n == 0 {
            return Err(format!(
                "NIG posterior: {} values for {n} rows x {d}",
                x.len()
            ));
        }
        let mut prec = vec![0.0f64; d * d];
        let mut xty = vec![0.0f64; d];
        for (row, &yi) in x.chunks_exact(d).zip(y) {
            for i in 0..d {
                xty[i] += row[i] as f64 * yi as f64;
                for j in 0..=i {
                    prec[i * d + j] += row[i] as f64 * row[j] as f64;
                }
            }
        }
        for i in 0..d {
            prec[i * d + i] += 1.0 / v;
            for j in 0..i {
                prec[j * d + i] = prec[i * d + j];
            }
        }
        let mut l = prec.clone();
        sgld::linalg::cholesky(&mut l, d).map_err(|e| format!("NIG posterior: {e}"))?;
        let solve = |b: &[f64]| -> Vec<f64> {
            // L z = b, then Lᵀ x = z.
            let mut z = b.to_vec();
            for i in 0..d {
                for k in 0..i {
                    z[i] -= l[i * d + k] * z[k];
                }
                z[i] /= l[i * d + i];
            }
            for i in (0..d).rev() {
                for k in i + 1..d {
                    z[i] -= l[k * d + i] * z[k];
                }
                z[i] /= l[i * d + i];
            }
            z
        };
        let mu = solve(&xty);
        let mut vn = vec![0.0f64; d * d];
        for j in 0..d {
            let mut e = vec![0.0f64; d];
            e[j] = 1.0;
            for (i, c) in solve(&e).into_iter().enumerate() {
                vn[i * d + j] = c;
            }
        }
        let yty: f64 = y.iter().map(|&t| t as f64 * t as f64).sum();
        let quad: f64 = mu.iter().zip(&xty).map(|(m, t)| m * t).sum();
        Ok(Self {
            mu,
            vn,
            a: phi + n as f64 / 2.0,
            b: psi + 0.5 * (yty - quad),
        })
    }

    fn d(&self) -> usize {
        self.mu.len()
    }

    /// Posterior means of `(β, log σ²)`.
    pub fn mean(&self) -> Vec<f64> {
        let mut m = self.mu.clone();
        m.push(self.b.ln() - digamma(self.a));
        m
    }

    /// Posterior sds of `(β, log σ²)`.
    pub fn sd(&self) -> Vec<f64> {
        let d = self.d();
        let mut s: Vec<f64> = (0..d)
            .map(|j| (self.vn[j * d + j] * self.b / (self.a - 1.0)).sqrt())
            .collect();
        s.push(trigamma(self.a).sqrt());
        s
    }

    /// The MLE `(β̂, log σ̂²)` (least squares) — what SGD converges to without a prior.
    pub fn mle(x: &[f32], y: &[f32], d: usize) -> Result<Vec<f64>, String> {
        let p = Self::new(x, y, d, 1e12, 0.0, 0.0)?;
        let n = y.len() as f64;
        let rss = 2.0 * p.b;
        let mut m = p.mu;
        m.push((rss / n).ln());
        Ok(m)
    }

    /// Marginal density of parameter `j` at `t` (Student-t for `βⱼ`; for `log σ²` the
    /// inverse-gamma density of `σ² = eᵗ` times the Jacobian `eᵗ`).
    pub fn marginal_pdf(&self, j: usize, t: f64) -> f64 {
        let d = self.d();
        if j < d {
            let nu = 2.0 * self.a;
            let scale = (self.b / self.a * self.vn[j * d + j]).sqrt();
            let z = (t - self.mu[j]) / scale;
            (ln_gamma((nu + 1.0) / 2.0)
                - ln_gamma(nu / 2.0)
                - 0.5 * (nu * std::f64::consts::PI).ln()
                - scale.ln()
                - (nu + 1.0) / 2.0 * (1.0 + z * z / nu).ln())
            .exp()
        } else {
            (self.a * self.b.ln() - ln_gamma(self.a) - self.a * t - self.b * (-t).exp()).exp()
        }
    }
}
