//! The mixture's step arithmetic alone, as one chain: its latency floor.
//!
//! A step of the §5.1 mixture needs the gradient at `θₜ` (an `exp` and a division)
//! before `θₜ₊₁` exists, so however fast its two normals are drawn, one chain cannot step
//! faster than that dependent arithmetic. [`MixtureChain`] runs it with `θ` in
//! registers, the batch indices and the noise read from tables, and no checks, no
//! scratch and no counters; its time per step is the workload's latency floor.

use std::hint::black_box;
use std::time::Instant;

use rand_core::{Rng, SeedableRng};
use sgld::noise::{DefaultRng, fill_normal};

/// Steps whose indices and noise the tables hold (the chain cycles through them).
const TABLE: usize = 2048;

/// The arithmetic of an SGLD step on `TiedMixture::paper` (σₓ² = 2, σ₁² = 10, σ₂² = 1),
/// batch 1: the gradient of eq. 4 with the responsibility as [`sgld::math::sigmoid`],
/// the prior, and the update; a non-finite proposal is refused, as the sampler does.
#[derive(Debug, Clone)]
pub struct MixtureChain {
    x: Vec<f32>,
    idx: Vec<usize>,
    eta: Vec<f32>,
    h: f32,
    s: f32,
}

impl MixtureChain {
    /// The chain on data `x` (non-empty) with step size `eps`; indices and noise drawn
    /// from `seed`.
    pub fn new(x: &[f32], eps: f32, seed: u64) -> Self {
        let mut rng = DefaultRng::seed_from_u64(seed);
        let mut eta = vec![0.0f32; 2 * TABLE];
        fill_normal(&mut rng, &mut eta);
        let n = x.len().max(1) as u64;
        let idx = (0..TABLE).map(|_| (rng.next_u64() % n) as usize).collect();
        Self {
            x: x.to_vec(),
            idx,
            eta,
            h: 0.5 * eps,
            s: eps.sqrt(),
        }
    }

    /// `θₜ₊₁` from `θₜ` with the indices and noise of table entry `k % 2048`.
    #[inline(always)]
    pub fn step(&self, t: [f32; 2], k: usize) -> [f32; 2] {
        let k = k % TABLE;
        let n = self.x.len() as f32;
        let d1 = self.x[self.idx[k]] - t[0];
        let d2 = d1 - t[1];
        let r = sgld::math::sigmoid(0.25 * (d1 * d1 - d2 * d2));
        let g1 = n * 0.5 * ((1.0 - r) * d1 + r * d2) - t[0] / 10.0;
        let g2 = n * 0.5 * (r * d2) - t[1];
        let p = [
            t[0] + self.h * g1 + self.s * self.eta[2 * k],
            t[1] + self.h * g2 + self.s * self.eta[2 * k + 1],
        ];
        if p[0].is_finite() && p[1].is_finite() {
            p
        } else {
            t
        }
    }

    /// Runs `steps` steps from `t`.
    pub fn run(&self, mut t: [f32; 2], steps: usize) -> [f32; 2] {
        for k in 0..steps {
            t = self.step(t, k);
        }
        t
    }

    /// The best ns per step over `repeats` runs of `steps` steps (after one untimed
    /// run): the chain's latency.
    pub fn ns_per_step(&self, repeats: usize, steps: usize) -> f64 {
        let mut t = self.run([0.0; 2], steps);
        (0..repeats)
            .map(|_| {
                let t0 = Instant::now();
                t = self.run(black_box(t), steps);
                t0.elapsed().as_nanos() as f64 / steps.max(1) as f64
            })
            .fold(f64::INFINITY, f64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_stays_near_the_posterior_modes() {
        let chain = MixtureChain::new(&super::super::gmm_data(), 0.01, 1);
        let t = chain.run([0.0; 2], 20_000);
        assert!(t.iter().all(|v| v.is_finite() && v.abs() < 5.0), "{t:?}");
        assert!(chain.ns_per_step(3, 1000) > 0.0);
    }
}
