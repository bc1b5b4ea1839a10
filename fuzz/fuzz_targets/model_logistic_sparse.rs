//! Sparse binary logistic regression: the sparse-row and model constructors refuse bad
//! offsets, indices and labels; the gradient equals the dense model's on the same rows,
//! and the bitmap model's when no row repeats a feature; a prefetch and the control
//! variate's difference take any index, and the difference is 0 at its centre.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sgld::gradient::MiniBatch;
use sgld::models::{
    BitRows, Laplace, LogisticBits, LogisticDense, LogisticSparse, Model, SparseRows,
};

/// The fuzzer's input, taken apart below.
type Input = (u8, Vec<u8>, Vec<u32>, Vec<bool>, Vec<f32>, Vec<u16>, f32);

fuzz_target!(|input: Input| {
    let (dim, lens, raw_idx, labels, theta, raw_batch, scale) = input;
    let d = dim as usize % 17;
    // Offsets from row lengths (a malformed variant is tried too).
    let mut offsets = vec![0usize];
    for &l in lens.iter().take(64) {
        offsets.push((offsets.last().unwrap() + (l as usize % 8)).min(raw_idx.len()));
    }
    let bad = SparseRows::new(&[1, 0], &raw_idx, d);
    assert!(bad.is_err());
    let Ok(rows) = SparseRows::new(&offsets, &raw_idx[..*offsets.last().unwrap()], d) else {
        return;
    };
    let y: Vec<f32> = labels.iter().map(|&b| if b { 1.0 } else { -1.0 }).collect();
    let Ok(prior) = Laplace::new(scale) else {
        return;
    };
    let Ok(model) = LogisticSparse::new(rows, &y, prior) else {
        return;
    };
    let n = y.len();
    // A prefetch hint takes any index, in range or not.
    let raw: Vec<usize> = raw_batch
        .iter()
        .map(|&i| i as usize)
        .chain([usize::MAX])
        .collect();
    model.prefetch(&raw);
    let batch = common::batch(&raw_batch, n, true);
    let mut grad = vec![0.0f32; d];
    let valid = theta.len() == d && theta.iter().all(|t| t.is_finite()) && !batch.is_empty();
    let got = MiniBatch::new(&model).gradient(&theta, &batch, &mut grad);
    assert_eq!(got.is_ok(), valid);
    // The control variate's difference: any θ and indices without a panic; 0 at its centre.
    let mut diff = vec![0.0f32; d];
    model.log_lik_grad_difference(&theta, &theta, &raw, &mut diff);
    if valid && theta.iter().all(|t| t.abs() <= 100.0) {
        model.log_lik_grad_difference(&theta, &theta, &batch, &mut diff);
        assert!(
            diff.iter().all(|&v| v == 0.0),
            "difference at the centre {diff:?}"
        );
    }
    // The interleaved pass: any count and lengths (refused unless they fit), any
    // indices; each point's part the gradient and value of its own pass. Point `c` is
    // θ·(c + 1), so a part read from the wrong lane shows.
    let k = (scale.to_bits() % 10) as usize;
    let point = |c: usize| -> Vec<f32> { theta.iter().map(|&t| t * (c + 1) as f32).collect() };
    let mut thetas = vec![0.0f32; theta.len() * k];
    for c in 0..k {
        for (j, t) in point(c).into_iter().enumerate() {
            thetas[j * k + c] = t;
        }
    }
    let fits = (1..=8).contains(&k) && thetas.len() == d * k;
    let (mut gs, mut vs) = (vec![0.0f32; thetas.len()], vec![0.0f64; k]);
    let done = model.add_log_lik_grads_interleaved(&thetas, k, &raw, &mut gs, &mut vs);
    assert_eq!(done, fits);
    let mut short = vec![0.0f32; thetas.len().saturating_sub(1)];
    assert!(!model.add_log_lik_grads_interleaved(&thetas, k, &raw, &mut short, &mut vs));
    if fits && valid && theta.iter().all(|t| t.abs() <= 100.0) {
        gs.fill(0.0);
        vs.fill(0.0);
        assert!(model.add_log_lik_grads_interleaved(&thetas, k, &batch, &mut gs, &mut vs));
        for c in 0..k {
            let p = point(c);
            let mut own = vec![0.0f32; d];
            let value = model.add_log_lik_grad_and_value(&p, &batch, &mut own);
            let tol =
                1e-4 * (1.0 + batch.len() as f32) * (1.0 + p.iter().map(|t| t.abs()).sum::<f32>());
            assert!(
                (vs[c] - value).abs() <= tol as f64 * 10.0,
                "point {c}: value {} vs {value}",
                vs[c]
            );
            for j in 0..d {
                assert!(
                    (gs[j * k + c] - own[j]).abs() <= tol,
                    "point {c}: {} vs {}",
                    gs[j * k + c],
                    own[j]
                );
            }
        }
    }
    // The dense model on the same rows (duplicate indices count twice in both).
    if valid && theta.iter().all(|t| t.abs() <= 100.0) && n <= 64 {
        let mut x = vec![0.0f32; n * d];
        for i in 0..n {
            for &j in rows.row(i) {
                x[i * d + j as usize] += 1.0;
            }
        }
        let dense = LogisticDense::new(&x, &y, d, prior).unwrap();
        let mut g2 = vec![0.0f32; d];
        MiniBatch::new(&dense)
            .gradient(&theta, &batch, &mut g2)
            .unwrap();
        let s = n as f32 / batch.len() as f32;
        for j in 0..d {
            assert!(grad[j].is_finite());
            let tol = 1e-3
                * (s * batch.len() as f32 * 8.0 + 1.0 / scale)
                * (1.0 + theta.iter().map(|t| t.abs()).sum::<f32>());
            assert!(
                (grad[j] - g2[j]).abs() <= tol,
                "sparse {} vs dense {}",
                grad[j],
                g2[j]
            );
        }
    }
    // The same rows as bitmaps, which hold each feature once: the same gradient when no
    // row repeats a feature (the margins are summed in another order, and the estimate
    // adds the batch's terms to the prior's gradient one by one, each rounded at the
    // prior's size 1/scale).
    let distinct = (0..n).all(|i| {
        let r = rows.row(i);
        r.iter().enumerate().all(|(a, j)| !r[..a].contains(j))
    });
    let mut words = vec![0u16; n * BitRows::words_per_row(d)];
    if d > 0 && distinct && BitRows::fill_from_sparse(&rows, &mut words).is_ok() {
        let bits = LogisticBits::new(BitRows::new(&words, d).unwrap(), &y, prior).unwrap();
        bits.prefetch(&raw);
        let mut g3 = vec![0.0f32; d];
        let got = MiniBatch::new(&bits).gradient(&theta, &batch, &mut g3);
        assert_eq!(got.is_ok(), valid);
        if valid && theta.iter().all(|t| t.abs() <= 100.0) {
            let s = n as f32 / batch.len() as f32;
            let m = batch.len() as f32;
            let tol = 1e-4 * s * m * (1.0 + theta.iter().map(|t| t.abs()).sum::<f32>())
                + 2.0 * (m + 2.0) * f32::EPSILON / scale;
            for j in 0..d {
                assert!(
                    (grad[j] - g3[j]).abs() <= tol,
                    "index rows {} vs bitmaps {}",
                    grad[j],
                    g3[j]
                );
            }
        }
    }
});
