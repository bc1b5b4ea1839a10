//! The Normal–inverse-gamma linear regression: construction refuses bad data and prior
//! parameters; on moderate input the gradient is finite and agrees with an f64 reference
//! of handout eq. 4.1–4.2.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sgld::gradient::MiniBatch;
use sgld::models::LinearRegression;

/// The fuzzer's input, taken apart below.
type Input = (u8, Vec<f32>, Vec<f32>, [f32; 3], Vec<f32>, Vec<u16>, bool);

fuzz_target!(|input: Input| {
    let (dim, x, y, prior, theta, raw_batch, wrap) = input;
    let d = dim as usize % 7;
    let Ok(model) = LinearRegression::new(&x, &y, d, prior[0], prior[1], prior[2]) else {
        return;
    };
    let n = y.len();
    let batch = common::batch(&raw_batch, n, wrap);
    let mut grad = vec![0.0f32; d + 1];
    let valid = theta.len() == d + 1
        && theta.iter().all(|t| t.is_finite())
        && !batch.is_empty()
        && batch.iter().all(|&i| i < n);
    let got = MiniBatch::new(&model).gradient(&theta, &batch, &mut grad);
    let moderate = x
        .iter()
        .chain(&y)
        .chain(&theta[..theta.len().min(d)])
        .all(|v| v.abs() <= 30.0)
        && theta.get(d).is_some_and(|g| g.abs() <= 5.0)
        && prior.iter().all(|p| (0.01..=100.0).contains(p))
        && n <= 1000;
    let mut want = vec![0.0f64; d + 1];
    let mut bound = vec![0.0f64; d + 1];
    if valid {
        let (v, phi, psi) = (prior[0] as f64, prior[1] as f64, prior[2] as f64);
        let g = theta[d] as f64;
        let e = (-g).exp();
        let s = n as f64 / batch.len() as f64;
        for &i in &batch {
            let row = &x[i * d..(i + 1) * d];
            let r = y[i] as f64
                - row
                    .iter()
                    .zip(&theta)
                    .map(|(a, b)| *a as f64 * *b as f64)
                    .sum::<f64>();
            let rabs = (y[i] as f64).abs()
                + row
                    .iter()
                    .zip(&theta)
                    .map(|(a, b)| (*a as f64 * *b as f64).abs())
                    .sum::<f64>();
            for j in 0..d {
                want[j] += s * r * e * row[j] as f64;
                bound[j] += s * rabs * e * (row[j] as f64).abs();
            }
            want[d] += s * (-0.5 + 0.5 * r * r * e);
            bound[d] += s * (0.5 + rabs * rabs * e);
        }
        let bb: f64 = theta[..d].iter().map(|b| (*b as f64).powi(2)).sum();
        for j in 0..d {
            want[j] -= e * theta[j] as f64 / v;
            bound[j] += (e * theta[j] as f64 / v).abs();
        }
        want[d] += -0.5 * d as f64 + 0.5 * e * bb / v - phi + psi * e;
        bound[d] += 0.5 * d as f64 + e * bb / v + phi + psi * e;
    }
    common::check_gradient(got, valid, &grad, moderate.then_some(&want[..]), |j| {
        1e-4 * bound[j] + 1e-5
    });
});
