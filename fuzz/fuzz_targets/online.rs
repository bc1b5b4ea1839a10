//! The online learner: arbitrary examples (bad ones refused without changing θ), any
//! step sizes from a valid schedule; θ stays finite and the estimator consistent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sgld::Sgld;
use sgld::estimate::WeightedMoments;
use sgld::models::Gaussian;
use sgld::noise::default_rng;
use sgld::online::{Examples, OnlineSgld, SparseBinaryExample};
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
