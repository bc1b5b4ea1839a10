//! ICA (§5.3): construction refuses bad data and precisions; the natural gradient
//! succeeds exactly on valid input and is finite for moderate input; SGLD and corrected-
//! Langevin steps never panic, leave W untouched when they refuse, and keep it finite
//! when they accept.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use common::identical as same;
use libfuzzer_sys::fuzz_target;
use sgld::ica::Ica;
use sgld::noise::default_rng;

fuzz_target!(|input: (u8, Vec<f32>, f64, Vec<f64>, Vec<u16>, f64, u64)| {
    let (dim, x, lambda, w, raw_batch, eps, seed) = input;
    let d = dim as usize % 5;
    let Ok(ica) = Ica::new(&x, d, lambda) else {
        return;
    };
    let n = ica.len();
    let batch: Vec<usize> = raw_batch
        .iter()
        .take(32)
        .map(|&i| i as usize % (n + 1))
        .collect();
    let mut scratch = vec![0.0; Ica::scratch_len(d)];
    let mut out = vec![0.0; d * d];
    let valid = w.len() == d * d
        && w.iter().all(|v| v.is_finite())
        && !batch.is_empty()
        && batch.iter().all(|&i| i < n);
    let r = ica.natural_gradient(&w, &batch, &mut out, &mut scratch);
    assert_eq!(r.is_ok(), valid, "{r:?}");
    let moderate = x.iter().all(|v| v.abs() <= 10.0)
        && w.iter().all(|v| v.abs() <= 10.0)
        && (1e-3..=1e3).contains(&lambda);
    if valid && moderate {
        assert!(out.iter().all(|v| v.is_finite()), "D_W not finite: {out:?}");
    }
    let mut rng = default_rng(seed);
    let mut ws = w.clone();
    match ica.sgld_step(&mut ws, &batch, eps, &mut rng, &mut scratch) {
        Ok(true) => assert!(ws.iter().all(|v| v.is_finite())),
        Ok(false) | Err(_) => assert!(same(&ws, &w)),
    }
    if n <= 64 {
        let mut wm = w.clone();
        let mut prop = vec![0.0; d * d];
        match ica.mala_step(&mut wm, eps, &mut rng, &mut prop, &mut scratch) {
            Ok(info) if info.accepted => assert!(wm.iter().all(|v| v.is_finite())),
            _ => assert!(same(&wm, &w)),
        }
    }
});
