//! The sampling threshold (eq. 10): bad shapes, step sizes, preconditioners and scratch
//! are refused; on valid moderate scores α is finite and non-negative, and λ_max bounds
//! every coordinate's variance (a diagonal entry of V_s never exceeds its top eigenvalue).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sgld::estimate::{sampling_threshold, threshold_scratch_len};

fuzz_target!(
    |input: (u8, u8, Vec<f32>, f64, u32, Option<Vec<f32>>, bool)| {
        let (n, d, scores, eps, n_data, pre, short) = input;
        let (n, d) = (n as usize % 40, d as usize % 40);
        let need = threshold_scratch_len(n, d);
        let mut scratch = vec![0.0f64; if short { need.saturating_sub(1) } else { need }];
        let r = sampling_threshold(
            &scores,
            n,
            d,
            eps,
            n_data as usize,
            pre.as_deref(),
            &mut scratch,
        );
        let valid = eps.is_finite()
            && eps > 0.0
            && eps <= f32::MAX as f64
            && n >= 2
            && d >= 1
            && scores.len() == n * d
            && scores.iter().all(|s| s.is_finite())
            && n_data as usize >= n
            && pre
                .as_ref()
                .is_none_or(|m| m.len() == d && m.iter().all(|x| x.is_finite() && *x >= 0.0))
            && !short;
        assert_eq!(r.is_ok(), valid, "{r:?}");
        if let Ok(t) = r {
            let moderate = scores.iter().all(|s| s.abs() <= 1e6)
                && pre.as_ref().is_none_or(|m| m.iter().all(|x| *x <= 1e6));
            if moderate {
                assert!(
                    t.alpha.is_finite() && t.alpha >= 0.0 && t.lambda_max >= 0.0,
                    "{t:?}"
                );
                for j in 0..d {
                    let col: Vec<f64> = (0..n).map(|i| scores[i * d + j] as f64).collect();
                    let mean = col.iter().sum::<f64>() / n as f64;
                    let m = pre.as_ref().map_or(1.0, |m| m[j] as f64);
                    let var = m * col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
                    assert!(
                        var <= t.lambda_max * (1.0 + 1e-6) + 1e-9 * (1.0 + var),
                        "var {var} > λ_max {}",
                        t.lambda_max
                    );
                }
            }
        }
    }
);
