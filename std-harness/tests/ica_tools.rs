//! FastICA with whitening recovers a known mixing; the Amari distance is 0 exactly for a
//! scaled permutation and grows with the error; instability and kurtosis by hand.

use sgld::noise::{default_rng, fill_normal};
use sgld_harness::ica_tools::*;

#[test]
fn fastica_recovers_a_known_mixing() {
    let (n, d) = (5000usize, 4usize);
    let mut g = vec![0.0f32; n * d + d * d];
    fill_normal(&mut default_rng(3), &mut g);
    // Sources: uniform (sub-Gaussian), Laplace-like (cubed normal), two more heavy-tailed.
    let s: Vec<f64> = (0..n * d)
        .map(|k| {
            let v = g[k] as f64;
            match k % d {
                0 => (v * 0.7).tanh() * 1.7,
                1 => v.powi(3) / 3.9,
                _ => v.signum() * v.abs().powf(1.8),
            }
        })
        .collect();
    let a: Vec<f64> = (0..d * d)
        .map(|k| if k / d == k % d { 1.0 } else { 0.0 } + 0.6 * g[n * d + k] as f64)
        .collect();
    let mut x = vec![0.0; n * d];
    for i in 0..n {
        for r in 0..d {
            x[i * d + r] = (0..d).map(|c| a[r * d + c] * s[i * d + c]).sum();
        }
    }
    let wh = whiten(&x, d);
    let (_, cov) = mean_cov(&wh.z, d);
    for i in 0..d {
        for j in 0..d {
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((cov[i * d + j] - want).abs() < 1e-9, "whitened covariance");
        }
    }
    let eye: Vec<f64> = (0..d * d)
        .map(|k| if k / d == k % d { 1.0 } else { 0.0 })
        .collect();
    let (w, iters) = fastica(&wh.z, d, &eye, 1000, 1e-10);
    let unmix = matmul(&w, &wh.v, d);
    let dist = amari_distance(&unmix, &a, d);
    eprintln!("FastICA: {iters} iterations, Amari distance {dist:.4}");
    assert!(dist < 0.05, "Amari distance {dist}");
    assert!(
        amari_distance(&eye, &a, d) > 0.1,
        "the identity does not unmix"
    );
}

#[test]
fn amari_distance_instability_and_kurtosis_by_hand() {
    let d = 3;
    // A scaled permutation: distance 0.
    let p = [0.0, 2.0, 0.0, 0.0, 0.0, -0.5, 3.0, 0.0, 0.0];
    let eye = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
    assert_eq!(amari_distance(&p, &eye, d), 0.0);
    // All-equal magnitudes: the maximum, 1.
    let ones = [1.0; 9];
    assert!((amari_distance(&ones, &eye, d) - 1.0).abs() < 1e-12);
    // One off-diagonal 0.5 in row 0: row term 0.5, column term 0.5 → (0.5 + 0.5)/(2·3·2).
    let m = [1.0, 0.5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
    assert!((amari_distance(&m, &eye, d) - 1.0 / 12.0).abs() < 1e-12);
    // Instability: Iᵢ = Σⱼ var(Wᵢⱼ) var(xⱼ).
    let var_w = [1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5];
    assert_eq!(
        instability(&var_w, &[1.0, 10.0, 2.0], d),
        vec![21.0, 0.0, 6.5]
    );
    // Kurtosis of ±1 is 1; of a two-point spike series larger.
    assert!((kurtosis(&[1.0, -1.0, 1.0, -1.0]) - 1.0).abs() < 1e-12);
    let spike: Vec<f64> = (0..100).map(|i| if i == 0 { 10.0 } else { 0.0 }).collect();
    assert!(kurtosis(&spike) > 50.0);
}
