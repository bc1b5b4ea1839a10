//! Dense logistic regression (§5.2), packed or read in place from records with an
//! intercept (`DenseRows::strided`): construction refuses bad data; the checked gradient
//! succeeds exactly on valid input, and on moderate input it is finite and agrees with an
//! f64 reference.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sgld::gradient::MiniBatch;
use sgld::models::{DenseRows, Design, Gaussian, LogisticDense};

/// The fuzzer's input, taken apart below: `layout` is `None` for packed rows, else the
/// records' extra values a row and the first row's offset.
type Input = (
    u8,
    Vec<f32>,
    Vec<bool>,
    Vec<f32>,
    Vec<u16>,
    f32,
    bool,
    Option<(u8, u8)>,
);

fuzz_target!(|input: Input| {
    let (dim, x, labels, theta, raw_batch, var, wrap, layout) = input;
    let d = dim as usize % 9;
    let y: Vec<f32> = labels.iter().map(|&b| if b { 1.0 } else { -1.0 }).collect();
    let Ok(prior) = Gaussian::new(var) else {
        return;
    };
    let (model, rows) = match layout {
        None => (
            LogisticDense::new(&x, &y, d, prior),
            DenseRows::new(&x, d.max(1)),
        ),
        Some((extra, offset)) => {
            let rows = DenseRows::strided(&x, d, d + extra as usize % 4, offset as usize % 5)
                .map(DenseRows::with_intercept);
            let model = rows.and_then(|r| LogisticDense::from_rows(r, &y, prior));
            (model, rows)
        }
    };
    let (Ok(model), Ok(rows)) = (model, rows) else {
        return;
    };
    // Features, and the intercept where the layout has one.
    let (f, d) = (d, rows.dim());
    let n = y.len();
    let batch = common::batch(&raw_batch, n, wrap);
    let mut grad = vec![0.0f32; d];
    let valid = theta.len() == d
        && theta.iter().all(|t| t.is_finite())
        && !batch.is_empty()
        && batch.iter().all(|&i| i < n);
    let got = MiniBatch::new(&model).gradient(&theta, &batch, &mut grad);
    let moderate = x.iter().chain(&theta).all(|v| v.abs() <= 100.0) && var >= 1e-3 && n <= 1000;
    let scale = n as f64 / batch.len().max(1) as f64;
    let mut want = vec![0.0f64; d];
    let mut bound = vec![0.0f64; d];
    if valid {
        for &i in &batch {
            let mut row: Vec<f32> = rows.row(i).to_vec();
            assert_eq!(row.len(), f);
            row.resize(d, 1.0);
            let z: f64 = row
                .iter()
                .zip(&theta)
                .map(|(a, b)| *a as f64 * *b as f64)
                .sum();
            let zabs: f64 = row
                .iter()
                .zip(&theta)
                .map(|(a, b)| (*a as f64 * *b as f64).abs())
                .sum();
            let c = y[i] as f64 / (1.0 + (y[i] as f64 * z).exp());
            for j in 0..d {
                want[j] += scale * c * row[j] as f64;
                bound[j] += scale * (row[j] as f64).abs() * (1.0 + zabs);
            }
        }
        for j in 0..d {
            want[j] -= theta[j] as f64 / var as f64;
            bound[j] += (theta[j] as f64 / var as f64).abs();
        }
    }
    common::check_gradient(got, valid, &grad, moderate.then_some(&want[..]), |j| {
        1e-4 * bound[j] + 1e-6
    });
});
