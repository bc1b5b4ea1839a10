//! The weighted estimator (eq. 11), in f64 and in f32 (both forms, in blocks): bad
//! weights, values and lengths are refused and change nothing; the mean stays within the
//! range of the pushed values and the variance is finite and non-negative; the f32 means
//! alone are the f32 moments' means, bit for bit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sgld::estimate::{WeightedMeanF32, WeightedMoments, WeightedMomentsF32};

fuzz_target!(|input: (u8, Vec<(f64, Vec<f32>)>)| {
    let (dim, pushes) = input;
    let d = dim as usize % 6;
    let mut store = vec![0.0f64; WeightedMoments::storage_len(d)];
    let Ok(mut m) = WeightedMoments::new(&mut store, d) else {
        assert_eq!(d, 0);
        return;
    };
    let mut s32 = vec![0.0f32; WeightedMomentsF32::storage_len(d)];
    let mut m32 = WeightedMomentsF32::new(&mut s32, d).unwrap();
    let mut sm = vec![0.0f32; WeightedMeanF32::storage_len(d)];
    let mut mean32 = WeightedMeanF32::new(&mut sm, d).unwrap();
    let mut accepted: Vec<(f64, Vec<f32>)> = Vec::new();
    let mut accepted32: Vec<Vec<f32>> = Vec::new();
    for (w, v) in pushes.into_iter().take(200) {
        let w32 = w as f32;
        let ok32 = v.len() == d
            && w32.is_finite()
            && w32 > 0.0
            && (w32 * w32).is_finite()
            && v.iter().all(|x| x.is_finite())
            && (m32.total_weight() + w32).is_finite();
        let before = m32.count();
        assert_eq!(m32.push(w32, &v).is_ok(), ok32, "f32 push of {w32}");
        assert_eq!(
            mean32.push(w32, &v).is_ok(),
            ok32,
            "f32 means push of {w32}"
        );
        if ok32 {
            accepted32.push(v.clone());
        } else {
            assert_eq!(m32.count(), before);
        }
        let ok = v.len() == d
            && w.is_finite()
            && w > 0.0
            && v.iter().all(|x| x.is_finite())
            && (m.total_weight() + w).is_finite();
        let before = m.count();
        assert_eq!(m.push(w, &v).is_ok(), ok);
        if ok {
            accepted.push((w, v));
        } else {
            assert_eq!(m.count(), before);
        }
    }
    for j in 0..d {
        assert_eq!(
            mean32.mean(j).to_bits(),
            m32.mean(j).to_bits(),
            "f32 means, {j}"
        );
        if accepted32.is_empty() {
            continue;
        }
        let (lo, hi) = accepted32
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), v| {
                (l.min(v[j]), h.max(v[j]))
            });
        let (mean, var) = (m32.mean(j), m32.variance(j));
        // Where the sums of δ² stay finite (see `WeightedF32::push`).
        if lo.abs().max(hi.abs()) < 1e8 {
            // About 8 ulps of the values, in absolute terms among subnormals (whose
            // spacing, 2⁻¹⁴⁹, is no longer relative to them).
            let tiny = 8.0 * f32::from_bits(1);
            let slack = 1e-4 * (hi - lo) + 1e-6 * lo.abs().max(hi.abs()) + tiny;
            assert!(
                mean >= lo - slack && mean <= hi + slack,
                "f32 mean {mean} outside [{lo}, {hi}]"
            );
            assert!(var.is_finite() && var >= 0.0, "f32 var {var}");
        }
    }
    if accepted.is_empty() {
        assert!(m.mean(0).is_nan());
        return;
    }
    let total: f64 = accepted.iter().map(|a| a.0).sum();
    for j in 0..d {
        let (lo, hi) = accepted
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), a| {
                (l.min(a.1[j] as f64), h.max(a.1[j] as f64))
            });
        let mean = m.mean(j);
        let var = m.variance(j);
        if total.is_finite() && lo.abs().max(hi.abs()) < 1e30 {
            let spread = (hi - lo).max(lo.abs().max(hi.abs()) * 1e-12);
            assert!(
                mean >= lo - 1e-9 * spread && mean <= hi + 1e-9 * spread,
                "mean {mean} outside [{lo}, {hi}]"
            );
            assert!(
                var.is_finite() && var >= 0.0 && var <= (hi - lo).powi(2) * (1.0 + 1e-9) + 1e-300,
                "var {var}"
            );
        }
    }
});
