//! The weighted estimator (eq. 11): bad weights, values and lengths are refused and
//! change nothing; the mean stays within the range of the pushed values and the variance
//! is finite and non-negative; a push equals a direct f64 computation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sgld::estimate::WeightedMoments;

fuzz_target!(|input: (u8, Vec<(f64, Vec<f32>)>)| {
    let (dim, pushes) = input;
    let d = dim as usize % 6;
    let mut store = vec![0.0f64; WeightedMoments::storage_len(d)];
    let Ok(mut m) = WeightedMoments::new(&mut store, d) else {
        assert_eq!(d, 0);
        return;
    };
    let mut accepted: Vec<(f64, Vec<f32>)> = Vec::new();
    for (w, v) in pushes.into_iter().take(200) {
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
