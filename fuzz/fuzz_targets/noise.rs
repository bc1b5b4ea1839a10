//! The noise fill: any length, any generator state (all-zero included); finite values within the 6.66σ cut; SIMD
//! within 8 ulps of max(1,|z|) of the scalar twin; both consume the same words.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rand_core::Rng;
use sgld::noise::{DefaultRng, fill_normal, fill_normal_simd, reference};

fuzz_target!(|input: ([u64; 4], u16)| {
    let (seed, len) = input;
    let len = len as usize % 4096;
    let (mut a, mut b) = (DefaultRng::from_state(seed), DefaultRng::from_state(seed));
    let (mut za, mut zb) = (vec![0.0f32; len], vec![0.0f32; len]);
    fill_normal_simd(&mut a, &mut za);
    reference::fill_normal(&mut b, &mut zb);
    assert_eq!(a.next_u64(), b.next_u64());
    for (x, y) in za.iter().zip(&zb) {
        assert!(x.is_finite() && x.abs() < 6.67, "{x}");
        assert!(
            (x - y).abs() <= 8.0 * f32::EPSILON * y.abs().max(1.0),
            "{x} vs {y}"
        );
    }
    let mut zc = vec![0.0f32; len];
    fill_normal(&mut DefaultRng::from_state(seed), &mut zc);
    assert!(zc.iter().all(|x| x.is_finite()));
});
