//! The Normal–inverse-gamma regression as a user's model: `yᵢ ~ N(xᵢᵀβ, σ²)`,
//! `β|σ² ~ N(0, σ²V)`, `σ² ~ IG(φ, ψ)` from the library, σ² declared positive. θ = (β, σ²);
//! the fields are the rows `x` (row-major, `d` columns), `y`, `d`, `V = v·I` and `σ²`'s prior.
use sgld::models::{Dist, Model};

pub struct Nig<'a>(pub &'a [f32], pub &'a [f32], pub usize, pub f32, pub Dist);

fn resid(m: &Nig, t: &[f32], i: usize) -> f32 {
    let row = &m.0[i * m.2..(i + 1) * m.2];
    m.1[i] - row.iter().zip(t).map(|(a, b)| a * b).sum::<f32>()
}

impl Model for Nig<'_> {
    fn dim(&self) -> usize {
        self.2 + 1
    }
    fn len(&self) -> usize {
        self.1.len()
    }
    fn add_log_prior_grad(&self, t: &[f32], g: &mut [f32]) {
        let (d, s2v) = (self.2, t[self.2] * self.3);
        let ss: f32 = t[..d].iter().map(|b| b * b).sum();
        (0..d).for_each(|j| g[j] -= t[j] / s2v);
        g[d] += self.4.grad_log_pdf(t[d] as f64) as f32 + (ss / s2v - d as f32) / (2.0 * t[d]);
    }
    fn log_prior(&self, t: &[f32]) -> f64 {
        let s2v = (t[self.2] * self.3) as f64;
        let ss: f64 = t[..self.2].iter().map(|&b| (b as f64).powi(2)).sum();
        self.4.log_pdf(t[self.2] as f64) - 0.5 * (self.2 as f64 * s2v.ln() + ss / s2v)
    }
    fn add_log_lik_grad(&self, t: &[f32], batch: &[usize], g: &mut [f32]) {
        for &i in batch {
            let (r, s2) = (resid(self, t, i), t[self.2]);
            (0..self.2).for_each(|j| g[j] += r * self.0[i * self.2 + j] / s2);
            g[self.2] += (r * r / s2 - 1.0) / (2.0 * s2);
        }
    }
    fn log_lik(&self, t: &[f32], batch: &[usize]) -> f64 {
        let s2 = t[self.2] as f64;
        let r2 = |i: usize| (resid(self, t, i) as f64).powi(2);
        batch.iter().map(|&i| -0.5 * (s2.ln() + r2(i) / s2)).sum()
    }
}

#[allow(dead_code)]
fn main() {}
