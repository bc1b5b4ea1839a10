//! Every sampler of the family — preconditioned SGLD (diagonal and Cholesky metric),
//! pSGLD (with and without Γ), SGHMC (with the noise estimate), SGHD, SGNHT, MALA —
//! with fuzzed options (temperature, clipping), control-variate gradients and cyclical
//! step sizes, on a small logistic regression: no panic; invalid parameters refused by
//! `Result`; a step either errs (θ untouched), is refused as non-finite (θ untouched), or
//! leaves θ finite.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sgld::gradient::{ControlVariate, GradientEstimator, MiniBatch};
use sgld::models::{Gaussian, LogisticDense};
use sgld::noise::default_rng;
use sgld::sampler::{Mala, Metric, PrecondSgld, Psgld, Sampler, Sghd, Sghmc, Sgnht};
use sgld::schedule::{Cyclical, Schedule};
use sgld::{ChainState, Sgld};

#[derive(Debug, Arbitrary)]
struct Input {
    dim: u8,
    x: Vec<f32>,
    y: Vec<bool>,
    theta: Vec<f32>,
    variance: f32,
    which: u8,
    param: f32,
    param2: f32,
    leapfrog: u8,
    temperature: f32,
    clip: Option<f32>,
    metric: Vec<f32>,
    cv: bool,
    cyclical: Option<(f64, u16, u8)>,
    steps: Vec<(Vec<u16>, f32)>,
    seed: u64,
}

fn drive<S: Sampler>(s: &S, est: &dyn GradientEstimator, inp: &Input, theta0: &[f32]) {
    let mut theta = theta0.to_vec();
    let mut scratch = vec![0.0f32; s.scratch_floats(theta.len())];
    let Ok(mut state) = s.start(&mut theta, &mut scratch) else {
        return;
    };
    let sched = inp
        .cyclical
        .and_then(|(m, t, c)| Cyclical::new(m, t as u64, c as u64).ok());
    let mut rng = default_rng(inp.seed);
    for (t, (batch, eps)) in inp.steps.iter().take(32).enumerate() {
        let eps = sched.map_or(*eps, |c| c.step_size(t as u64));
        let batch: Vec<usize> = batch.iter().map(|&i| i as usize).collect();
        let before = state.theta().to_vec();
        match s.advance(&mut state, est, &batch, eps, &mut rng) {
            Err(_) => assert_eq!(state.theta(), &before[..]),
            Ok(info) if info.non_finite => assert_eq!(state.theta(), &before[..]),
            Ok(_) => assert!(state.theta().iter().all(|v| v.is_finite())),
        }
    }
}

fuzz_target!(|inp: Input| {
    let dim = inp.dim as usize % 7;
    let y: Vec<f32> = inp.y.iter().map(|&b| if b { 1.0 } else { -1.0 }).collect();
    let Ok(prior) = Gaussian::new(inp.variance) else {
        return;
    };
    let Ok(model) = LogisticDense::new(&inp.x, &y, dim, prior) else {
        return;
    };
    let mut theta0 = inp.theta.clone();
    theta0.resize(dim, 0.0);
    let mini = MiniBatch::new(&model);
    let mut buf = vec![0.0f32; ControlVariate::<()>::buffer_len(dim)];
    let cv;
    let est: &dyn GradientEstimator = if inp.cv {
        match ControlVariate::new(&model, &theta0, &mut buf) {
            Ok(c) => {
                cv = c;
                &cv
            }
            Err(_) => return,
        }
    } else {
        &mini
    };
    let mut metric = inp.metric.clone();
    let dense = inp.which & 1 == 0;
    metric.resize(if dense { dim * dim } else { dim }, 1.0);
    let m = if dense {
        Metric::Cholesky(&metric)
    } else {
        Metric::Diagonal(&metric)
    };
    let tau = inp.temperature;
    let clip = inp.clip;
    macro_rules! go {
        ($s:expr) => {{
            let Ok(s) = $s.with_temperature(tau) else {
                return;
            };
            let s = match clip {
                Some(c) => match s.with_clip(c) {
                    Ok(s) => s,
                    Err(_) => return,
                },
                None => s,
            };
            drive(&s, est, &inp, &theta0);
        }};
    }
    match inp.which % 8 {
        0 => go!(Sgld::new()),
        1 => {
            if let Ok(s) = PrecondSgld::new(m, dim) {
                // The Gaussian-exact noise refuses steps of 4 or more.
                if inp.leapfrog & 1 == 1 {
                    go!(s.gaussian_exact())
                } else {
                    go!(s)
                }
            }
        }
        2 => {
            if let Ok(s) = Psgld::new(inp.param, inp.param2) {
                go!(s.with_gamma_correction(inp.leapfrog & 1 == 1))
            }
        }
        3 => {
            if let Ok(s) = Sghmc::new(inp.param) {
                match s.with_noise_estimate(inp.param2) {
                    Ok(s) => go!(s),
                    Err(_) => go!(s),
                }
            }
        }
        4 => {
            if let Ok(s) = Sghd::new(m, dim, (inp.leapfrog % 6) as u32) {
                go!(s)
            }
        }
        5 => {
            if let Ok(s) = Sgnht::new(inp.param) {
                go!(s)
            }
        }
        6 if inp.leapfrog & 1 == 1 => go!(Mala::new(&model).gaussian_exact()),
        6 => go!(Mala::new(&model)),
        _ => {
            // Cholesky of an arbitrary matrix: an error or a finite lower factor.
            let mut a: Vec<f64> = metric.iter().map(|&v| v as f64).collect();
            a.resize(dim * dim, 0.0);
            if sgld::linalg::cholesky(&mut a, dim).is_ok() {
                assert!(a.iter().all(|v| v.is_finite()));
            }
        }
    }
});
