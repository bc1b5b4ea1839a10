//! The paper's §5.1 demonstration: SGLD on the tied-means mixture of Gaussians.
//!
//! 100 points drawn with θ₁ = 0, θ₂ = 1 (σ₁² = 10, σ₂² = 1, σₓ² = 2); batch size 1;
//! 10000 sweeps; ε from 0.01 to 0.0001 with γ = 0.55. Prints the step-size-weighted
//! posterior moments (eq. 11), the mass near each of the two modes, the sampling
//! threshold (eq. 10) at the start and the end of the run, and a text density of θ₁.
//!
//! Run with `cargo run --release -p sgld --example mixture [-- SEED]`.

use sgld::estimate::{WeightedMoments, sampling_threshold, scores_into, threshold_scratch_len};
use sgld::gradient::{MiniBatch, sample_batch};
use sgld::models::TiedMixture;
use sgld::noise::{default_rng, fill_normal};
use sgld::schedule::{Polynomial, Schedule};
use sgld::{Sgld, StepInfo};

fn main() -> Result<(), sgld::Error> {
    let seed: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2011);
    let mut rng = default_rng(seed);

    // Data: xᵢ ~ ½N(0, 2) + ½N(1, 2).
    let n_data = 100;
    let mut x = vec![0.0f32; n_data];
    fill_normal(&mut rng, &mut x);
    for (i, v) in x.iter_mut().enumerate() {
        *v = *v * 2f32.sqrt() + if i % 2 == 0 { 0.0 } else { 1.0 };
    }
    let model = TiedMixture::paper(&x)?;
    let est = MiniBatch::new(&model);

    let steps = 10_000 * n_data as u64; // 10000 sweeps of batch size 1
    let schedule = Polynomial::from_range(0.01, 0.0001, 0.55, steps)?;
    let mut theta = [0.0f32; 2];
    let mut scratch = [0.0f32; Sgld::scratch_len(2)];
    let mut state = Sgld::init(&mut theta, &mut scratch)?;
    let mut store = [0.0f64; WeightedMoments::storage_len(2)];
    let mut post = WeightedMoments::new(&mut store, 2)?;
    let mut batch = [0usize; 1];
    let (lo, hi, bins) = (-2.0f64, 3.0f64, 50usize);
    let mut hist = vec![0.0f64; bins];
    let (mut mode_a, mut mode_b, mut total) = (0.0f64, 0.0f64, 0.0f64);
    let mut last = StepInfo::default();
    let burn_in = steps / 10;
    let started = std::time::Instant::now();
    for t in 0..steps {
        sample_batch(&mut rng, n_data, &mut batch)?;
        let eps = schedule.step_size(t);
        last = Sgld::new().step(&mut state, &est, &batch, eps, &mut rng)?;
        if t >= burn_in && !last.non_finite {
            let w = eps as f64;
            post.push(w, state.theta())?;
            let [t1, t2] = [state.theta()[0] as f64, state.theta()[1] as f64];
            let b = (t1 - lo) / (hi - lo) * bins as f64;
            if (0.0..bins as f64).contains(&b) {
                hist[b as usize] += w;
            }
            total += w;
            if (t1 - 0.0).powi(2) + (t2 - 1.0).powi(2) < 0.5 {
                mode_a += w;
            } else if (t1 - 1.0).powi(2) + (t2 + 1.0).powi(2) < 0.5 {
                mode_b += w;
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();

    // The sampling threshold with a batch of 10 at the first and the last step size.
    let mut scores = [0.0f32; 20];
    let mut tb = [0usize; 10];
    sample_batch(&mut rng, n_data, &mut tb)?;
    scores_into(&model, state.theta(), &tb, &mut scores)?;
    let mut ts = [0.0f64; threshold_scratch_len(10, 2)];
    let first = sampling_threshold(
        &scores,
        10,
        2,
        schedule.step_size(0) as f64,
        n_data,
        None,
        &mut ts,
    )?;
    let end = sampling_threshold(&scores, 10, 2, last.step_size as f64, n_data, None, &mut ts)?;

    println!("SGLD on the tied-means mixture (Welling & Teh §5.1), seed {seed}");
    println!(
        "{steps} steps in {secs:.2} s ({:.0} ns/step)",
        secs * 1e9 / steps as f64
    );
    println!(
        "weighted posterior mean  θ₁ = {:+.3}  θ₂ = {:+.3}",
        post.mean(0),
        post.mean(1)
    );
    println!(
        "weighted posterior sd    θ₁ = {:.3}   θ₂ = {:.3}",
        post.variance(0).sqrt(),
        post.variance(1).sqrt()
    );
    println!(
        "mass near (0, 1): {:.2}   near (1, −1): {:.2}",
        mode_a / total,
        mode_b / total
    );
    println!(
        "sampling threshold α (batch 10): {:.3} at ε = 0.01, {:.5} at ε = 0.0001",
        first.alpha, end.alpha
    );
    println!("\nposterior density of θ₁ (step-size weighted):");
    let peak = hist.iter().cloned().fold(0.0, f64::max);
    for (b, h) in hist.iter().enumerate().step_by(2) {
        let centre = lo + (b as f64 + 1.0) * (hi - lo) / bins as f64;
        println!(
            "{centre:+5.1} | {}",
            "#".repeat((60.0 * (h + hist[b + 1]) / (2.0 * peak)).round() as usize)
        );
    }
    Ok(())
}
