//! Eight schools (Rubin 1981), non-centred: the model on its own scale with the library's
//! priors, τ > 0 declared, θⱼ = μ + τθ̃ⱼ reported beside it. `cargo run --example eight_schools`
use sgld::models::{Dist, Model, PerBlock, Prior};
use sgld_harness::constrained::Constrained;
use sgld_harness::constrained::Support::{Positive, Real};
use sgld_harness::sample::{Outcome, SampleOptions, Target};

const Y: [f32; 8] = [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0];
const SIGMA: [f32; 8] = [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0];

/// θ = (μ, τ, θ̃₁…θ̃₈): `yⱼ ~ N(μ + τθ̃ⱼ, σⱼ²)`, μ ~ N(0, 5²), τ ~ half-Cauchy(5), θ̃ⱼ ~ N(0, 1).
pub struct Schools(pub [(Dist, usize); 3]);

impl Model for Schools {
    fn dim(&self) -> usize {
        10
    }
    fn len(&self) -> usize {
        8
    }
    fn add_log_prior_grad(&self, t: &[f32], g: &mut [f32]) {
        PerBlock::new(&self.0).add_grad(t, g)
    }
    fn log_prior(&self, t: &[f32]) -> f64 {
        PerBlock::new(&self.0).log_density(t)
    }
    fn add_log_lik_grad(&self, t: &[f32], batch: &[usize], g: &mut [f32]) {
        for &j in batch.iter().filter(|&&j| j < 8) {
            let r = (Y[j] - t[0] - t[1] * t[2 + j]) / (SIGMA[j] * SIGMA[j]);
            (g[0], g[1], g[2 + j]) = (g[0] + r, g[1] + r * t[2 + j], g[2 + j] + r * t[1]);
        }
    }
    fn log_lik(&self, t: &[f32], batch: &[usize]) -> f64 {
        let z = |j: usize| ((Y[j] - t[0] - t[1] * t[2 + j]) / SIGMA[j]) as f64;
        let rows = batch.iter().filter(|&&j| j < 8);
        rows.map(|&j| -0.5 * z(j) * z(j)).sum()
    }
}

/// Samples the posterior into `out` with the defaults of `sgld sample`.
pub fn run(out: std::path::PathBuf) -> Result<Outcome, Box<dyn std::error::Error>> {
    let (normal, half_cauchy) = (Dist::normal(0.0, 5.0)?, Dist::half_cauchy(5.0)?);
    let schools = Schools([(normal, 1), (half_cauchy, 1), (Dist::normal(0.0, 1.0)?, 8)]);
    let model = Constrained::new(&schools, vec![(Real, 1), (Positive, 1), (Real, 8)])?;
    let school = |name: &'static str| (1..=8).map(move |j| format!("{name}[{j}]"));
    let mut names = vec!["mu".to_string(), "tau".to_string()];
    names.extend(school("eta"));
    let effects = |t: &[f32]| t[2..].iter().map(|e| t[0] + t[1] * e).collect();
    let target = Target::constrained(&model, "eight-schools", names)
        .with_derived(school("theta").collect(), &effects);
    Ok(target.sample(&SampleOptions::new(out))?)
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1);
    run(dir.as_deref().unwrap_or("eight-schools").into())?.print();
    Ok(())
}
