//! The fixed-point learner: arbitrary examples (bad ones refused without changing θ),
//! any prior and step size their constructors accept, any starting θ; no panic, and θ
//! and the estimate stay in range (a coordinate held at the bound is reported).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sgld::noise::default_rng;
use sgld::online::fixed::{FixedPrior, FixedSgld};
use sgld::online::{Examples, SparseBinaryExample};
use sgld::schedule::Constant;

type Ex = SparseBinaryExample<4, u8>;
/// Examples (indices, label), the step size, the prior's scale, Laplace or Gaussian, the
/// starting θ in Q7.24, the generator's seed.
type Input = (Vec<(Vec<u8>, f32)>, f32, f32, bool, [i32; 6], u64);

fuzz_target!(|input: Input| {
    let (examples, eps, scale, laplace, start, seed) = input;
    let Ok(schedule) = Constant::new(eps) else {
        return;
    };
    let prior = if laplace {
        FixedPrior::laplace(scale)
    } else {
        FixedPrior::gaussian(scale)
    };
    let Ok(prior) = prior else {
        return;
    };
    let (mut theta, mut mean) = (start, [0i32; 6]);
    let mut window = Examples::<Ex, 8>::new();
    let mut learner =
        FixedSgld::<4, u8, _, 8, 3>::new(&mut window, &mut theta, &mut mean, prior, schedule, 2)
            .unwrap();
    let mut rng = default_rng(seed);
    for (idx, y) in examples.into_iter().take(100) {
        let Ok(ex) = Ex::narrow(&idx, y) else {
            assert!(idx.len() > 4);
            continue;
        };
        let before = learner.theta().to_vec();
        let seen = learner.seen();
        match learner.push(ex, &mut rng) {
            Err(_) => {
                assert_eq!(learner.theta(), &before[..]);
                assert_eq!(learner.seen(), seen);
            }
            Ok(_) => {
                assert!(learner.theta().iter().all(|&q| q != i32::MIN));
                for j in 0..6 {
                    let m = learner.mean(j);
                    assert_eq!(m.is_nan(), learner.count() == 0);
                    assert!(m.is_nan() || m.abs() <= 128.0);
                }
            }
        }
    }
});
