//! The §5.1 tied mixture: construction refuses bad data and variances; on moderate
//! input the gradient is finite and agrees with an f64 reference.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sgld::gradient::MiniBatch;
use sgld::models::TiedMixture;

fuzz_target!(|input: (Vec<f32>, [f32; 3], Vec<f32>, Vec<u16>, bool)| {
    let (x, vars, theta, raw_batch, wrap) = input;
    let Ok(model) = TiedMixture::new(&x, vars[0], vars[1], vars[2]) else {
        return;
    };
    let n = x.len();
    let batch = common::batch(&raw_batch, n, wrap);
    let mut grad = [0.0f32; 2];
    let valid = theta.len() == 2
        && theta.iter().all(|t| t.is_finite())
        && !batch.is_empty()
        && batch.iter().all(|&i| i < n);
    let got = MiniBatch::new(&model).gradient(&theta, &batch, &mut grad);
    let moderate = x.iter().chain(&theta).all(|v| v.abs() <= 100.0)
        && vars.iter().all(|v| (0.01..=1e4).contains(v));
    let mut want = [0.0f64; 2];
    let mut bound = [0.0f64; 2];
    if valid {
        let (t1, t2, vx) = (theta[0] as f64, theta[1] as f64, vars[2] as f64);
        let s = n as f64 / batch.len() as f64;
        for &i in &batch {
            let (d1, d2) = (x[i] as f64 - t1, x[i] as f64 - t1 - t2);
            let r = 1.0 / (1.0 + (-(d1 * d1 - d2 * d2) / (2.0 * vx)).exp());
            want[0] += s * ((1.0 - r) * d1 + r * d2) / vx;
            want[1] += s * r * d2 / vx;
            let b = s * (d1.abs() + d2.abs()) / vx * (1.0 + (d1 * d1 + d2 * d2) / vx);
            bound[0] += b;
            bound[1] += b;
        }
        want[0] -= t1 / vars[0] as f64;
        want[1] -= t2 / vars[1] as f64;
        bound[0] += (t1 / vars[0] as f64).abs();
        bound[1] += (t2 / vars[1] as f64).abs();
    }
    common::check_gradient(got, valid, &grad, moderate.then_some(&want[..]), |j| {
        1e-4 * bound[j] + 1e-6
    });
});
