//! The online learner: arbitrary examples (bad ones refused without changing θ), any
//! step sizes from a valid schedule; θ stays finite and the estimator consistent. Each
//! row also reads slices of every length, shorter than its indices included.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sgld::Sgld;
use sgld::estimate::WeightedMoments;
use sgld::models::Gaussian;
use sgld::noise::default_rng;
use sgld::online::{Example, Examples, OnlineSgld, SparseBinaryExample};
use sgld::schedule::Constant;

fuzz_target!(|input: (Vec<(Vec<u32>, f32)>, f32, u64)| {
    let (examples, eps, seed) = input;
    let Ok(schedule) = Constant::new(eps) else {
        return;
    };
    let (mut theta, mut scratch) = ([0.0f32; 6], [0.0f32; Sgld::scratch_len(6)]);
    let mut store = [0.0f64; WeightedMoments::storage_len(6)];
    let mut batch = [0usize; 3];
    let mut window = Examples::<SparseBinaryExample<4>, 8>::new();
    let mut learner = OnlineSgld::new(
        &mut window,
        &mut theta,
        &mut scratch,
        WeightedMoments::new(&mut store, 6).unwrap(),
        &mut batch,
        Gaussian::new(1.0).unwrap(),
        schedule,
        Sgld::new(),
        2,
    )
    .unwrap();
    let mut rng = default_rng(seed);
    for (idx, y) in examples.into_iter().take(100) {
        let Ok(ex) = SparseBinaryExample::<4>::new(&idx, y) else {
            assert!(idx.len() > 4);
            continue;
        };
        // A row against slices of every length: the indices out of range are skipped.
        let w = [1.0f32, 2.0, 4.0, 8.0, 16.0, 32.0];
        for len in 0..=w.len() {
            let want: f32 = idx.iter().filter_map(|&j| w[..len].get(j as usize)).sum();
            assert_eq!(ex.margin(&w[..len]), want);
            let mut g = [0.0f32; 6];
            ex.add_scaled(1.0, &mut g[..len]);
            assert_eq!(
                g.iter().sum::<f32>(),
                idx.iter().filter(|&&j| (j as usize) < len).count() as f32
            );
        }
        let before = learner.theta().to_vec();
        let seen = learner.window().seen();
        match learner.push(ex, &mut rng) {
            Err(_) => {
                assert_eq!(learner.theta(), &before[..]);
                assert_eq!(learner.window().seen(), seen);
            }
            Ok(info) if info.non_finite => assert_eq!(learner.theta(), &before[..]),
            Ok(_) => assert!(learner.theta().iter().all(|v| v.is_finite())),
        }
    }
});
