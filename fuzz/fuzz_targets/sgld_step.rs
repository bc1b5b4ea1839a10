//! Whole SGLD steps on a small logistic regression built from fuzzed data, parameters,
//! batches and step sizes: no panic; invalid input is refused by a `Result`; a step
//! either errors (state untouched), or is refused as non-finite (θ untouched), or moves
//! θ to finite values.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sgld::Sgld;
use sgld::gradient::MiniBatch;
use sgld::models::{Laplace, LogisticDense};
use sgld::noise::default_rng;

#[derive(Debug, Arbitrary)]
struct Input {
    dim: u8,
    x: Vec<f32>,
    y: Vec<bool>,
    theta: Vec<f32>,
    scale: f32,
    steps: Vec<(Vec<u16>, f32)>,
    seed: u64,
}

fuzz_target!(|inp: Input| {
    let dim = inp.dim as usize % 9;
    let y: Vec<f32> = inp.y.iter().map(|&b| if b { 1.0 } else { -1.0 }).collect();
    let Ok(prior) = Laplace::new(inp.scale) else {
        return;
    };
    let Ok(model) = LogisticDense::new(&inp.x, &y, dim, prior) else {
        return;
    };
    let est = MiniBatch::new(&model);
    let mut theta = inp.theta;
    theta.resize(dim, 0.0);
    let mut scratch = vec![0.0f32; Sgld::scratch_len(dim)];
    let Ok(mut state) = Sgld::init(&mut theta, &mut scratch) else {
        return;
    };
    let mut rng = default_rng(inp.seed);
    for (batch, eps) in inp.steps.iter().take(64) {
        let batch: Vec<usize> = batch.iter().map(|&i| i as usize).collect();
        let before = state.theta().to_vec();
        match Sgld::new().step(&mut state, &est, &batch, *eps, &mut rng) {
            Err(_) => assert_eq!(state.theta(), &before[..]),
            Ok(info) if info.non_finite => assert_eq!(state.theta(), &before[..]),
            Ok(_) => assert!(state.theta().iter().all(|v| v.is_finite())),
        }
    }
});
