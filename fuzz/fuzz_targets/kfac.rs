//! The one-hidden-layer network and K-FAC SGLD on fuzzed data, sizes, priors, noise
//! models (classification included), decays, temperatures, batches and step sizes: no panic; invalid input refused
//! by `Result`; gradients finite for moderate input; a step either errs (θ untouched), is
//! refused as non-finite (θ untouched), or leaves θ finite.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sgld::ChainState;
use sgld::kfac::KfacSgld;
use sgld::models::{Mlp, Model, Noise};
use sgld::noise::default_rng;

#[derive(Debug, Arbitrary)]
struct Input {
    d_in: u8,
    width: u8,
    x: Vec<f32>,
    y: Vec<f32>,
    theta: Vec<f32>,
    prior_var: f32,
    learned: Option<(f32, f32)>,
    classify: bool,
    precision: f32,
    decay: f32,
    refresh: u8,
    temperature: f32,
    steps: Vec<(Vec<u16>, f32)>,
    seed: u64,
}

fuzz_target!(|inp: Input| {
    let (d, h) = (inp.d_in as usize % 5, inp.width as usize % 9);
    let noise = match (inp.classify, inp.learned) {
        (true, _) => Noise::Bernoulli,
        (false, Some((shape, rate))) => Noise::Learned { shape, rate },
        (false, None) => Noise::Fixed(inp.precision),
    };
    // Classification takes labels ±1 (the signs of y), regression y itself.
    let labels: Vec<f32> = inp
        .y
        .iter()
        .map(|&v| if v > 0.0 { 1.0 } else { -1.0 })
        .collect();
    let y = if inp.classify { &labels } else { &inp.y };
    assert!(!inp.classify || Mlp::new(&inp.x, &[0.5], d, h, 1.0, noise).is_err());
    let Ok(m) = Mlp::new(&inp.x, y, d, h, inp.prior_var, noise) else {
        return;
    };
    let mut theta = inp.theta.clone();
    theta.resize(m.dim(), 0.0);
    // Gradients of moderate input are finite.
    let moderate = |v: &[f32]| v.iter().all(|x| x.abs() < 100.0);
    if moderate(&theta) && moderate(&inp.x) && moderate(y) && inp.prior_var > 1e-3 {
        let mut g = vec![0.0f32; m.dim()];
        m.add_log_lik_grad(&theta, &[0], &mut g);
        m.add_log_prior_grad(&theta, &mut g);
        if let Noise::Learned { rate, .. } = noise {
            if rate < 100.0 {
                assert!(g.iter().all(|v| v.is_finite()), "{g:?}");
            }
        } else if inp.classify || inp.precision < 100.0 {
            assert!(g.iter().all(|v| v.is_finite()), "{g:?}");
        }
    }
    let Ok(k) = KfacSgld::new(inp.decay, inp.refresh as u32) else {
        return;
    };
    let Ok(k) = k.with_temperature(inp.temperature) else {
        return;
    };
    let mut scratch = vec![0.0f32; KfacSgld::scratch_len(d, h)];
    let Ok(mut st) = k.init(&m, &mut theta, &mut scratch) else {
        return;
    };
    let mut rng = default_rng(inp.seed);
    for (batch, eps) in inp.steps.iter().take(16) {
        let batch: Vec<usize> = batch.iter().map(|&i| i as usize).collect();
        let before = st.theta().to_vec();
        match k.step(&mut st, &m, &batch, *eps, &mut rng) {
            Err(_) => assert_eq!(st.theta(), &before[..]),
            Ok(info) if info.non_finite => assert_eq!(st.theta(), &before[..]),
            Ok(_) => assert!(st.theta().iter().all(|v| v.is_finite())),
        }
    }
});
