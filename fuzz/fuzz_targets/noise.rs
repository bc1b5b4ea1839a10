//! The noise fill: any length, any generator state (all-zero included); finite values within the 6.66σ cut; SIMD
//! within 8 ulps of max(1,|z|) of the scalar twin; both consume the same words. Batch indices: any data size and
//! batch length give an error (0 or empty) or indices all in range.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rand_core::Rng;
use sgld::gradient::sample_batch;
use sgld::noise::{DefaultRng, fill_normal, fill_normal_simd, reference};

fuzz_target!(|input: ([u64; 4], u16, u64, u16)| {
    let (seed, len, n_data, batch_len) = input;
    let n_data = n_data as usize;
    let mut batch = vec![0usize; batch_len as usize % 1024];
    let mut rng = DefaultRng::from_state(seed);
    match sample_batch(&mut rng, n_data, &mut batch) {
        Ok(()) => assert!(batch.iter().all(|&i| i < n_data)),
        Err(_) => assert!(n_data == 0 || batch.is_empty()),
    }

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
