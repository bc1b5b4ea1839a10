//! Every dense and sparse kernel: the checked entry points never panic, refuse
//! mismatched lengths, and the SIMD implementation equals its scalar twin within the
//! tolerance of the numerical contract in `sgld::kernels`.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sgld::kernels::{self, reference, simd};

#[derive(Debug, Arbitrary)]
struct Input {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    idx: Vec<u32>,
    alpha: f32,
    eps: f32,
}

const U: f64 = f32::EPSILON as f64 / 2.0;

fn close(x: f32, y: f32, mag: f64, rounds: f64) -> bool {
    if !(mag < f32::MAX as f64 / 4.0) {
        return true; // overflow-prone or non-finite inputs: only "no panic" is required
    }
    if x.is_nan() || y.is_nan() {
        return x.is_nan() && y.is_nan();
    }
    (x as f64 - y as f64).abs() <= rounds * U * mag + 1e-43
}

fuzz_target!(|inp: Input| {
    let Input {
        a,
        b,
        c,
        idx,
        alpha,
        eps,
    } = inp;
    let n = a.len().min(b.len()).min(c.len());
    let (a, b, c) = (&a[..n], &b[..n], &c[..n]);

    // dot: checked API and twins.
    assert!(kernels::dot(a, &b[..n.saturating_sub(1)]).is_err() || n == 0);
    let abs: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 * *y as f64).abs())
        .sum();
    let s = kernels::dot(a, b).unwrap();
    let nu = (n + 1) as f64 * U;
    assert!(
        close(s, reference::dot(a, b), abs, 2.0 * (n as f64 + 1.0)) || nu >= 1.0,
        "dot"
    );
    assert!(
        close(
            simd::dot(a, b),
            reference::dot(a, b),
            abs,
            2.0 * (n as f64 + 1.0)
        ) || nu >= 1.0
    );

    // axpy
    let (mut ys, mut yr) = (b.to_vec(), b.to_vec());
    kernels::axpy(alpha, a, &mut ys).unwrap();
    reference::axpy(alpha, a, &mut yr);
    for i in 0..n {
        let mag = (alpha as f64 * a[i] as f64).abs() + (b[i] as f64).abs();
        assert!(close(ys[i], yr[i], mag, 4.0), "axpy {i}");
    }

    // Langevin update, plain and preconditioned (|c| as the preconditioner).
    let m: Vec<f32> = c.iter().map(|v| v.abs()).collect();
    let (mut ts, mut tr) = (a.to_vec(), a.to_vec());
    match kernels::langevin_update(&mut ts, b, c, eps) {
        Ok(()) => {
            let (h, s) = (0.5 * eps, eps.sqrt());
            reference::langevin_update(&mut tr, b, c, h, s);
            for i in 0..n {
                let mag = (a[i] as f64).abs()
                    + (h as f64 * b[i] as f64).abs()
                    + (s as f64 * c[i] as f64).abs();
                assert!(close(ts[i], tr[i], mag, 6.0), "langevin {i}");
            }
        }
        Err(_) => assert!(!(eps.is_finite() && eps > 0.0), "valid step size refused"),
    }
    let mut tp = a.to_vec();
    let r = kernels::langevin_update_precond(&mut tp, b, c, &m, eps);
    assert_eq!(
        r.is_ok(),
        eps.is_finite() && eps > 0.0 && m.iter().all(|v| v.is_finite())
    );

    // Sparse kernels: checked API refuses out-of-range indices; twins agree.
    let valid = idx.iter().all(|&j| (j as usize) < n);
    assert_eq!(kernels::sparse_dot(&idx, a).is_ok(), valid);
    let sabs: f64 = idx
        .iter()
        .filter_map(|&j| a.get(j as usize))
        .map(|v| (*v as f64).abs())
        .sum();
    let sdot_tol = 2.0 * (idx.len() as f64 + 1.0);
    assert!(
        close(
            simd::sparse_dot(&idx, a),
            reference::sparse_dot(&idx, a),
            sabs,
            sdot_tol
        ) || (idx.len() + 1) as f64 * U >= 1.0
    );
    let (mut ss, mut sr) = (a.to_vec(), a.to_vec());
    let r = kernels::sparse_axpy(alpha, &idx, &mut ss);
    assert_eq!(r.is_ok(), valid);
    simd::sparse_axpy(alpha, &idx, &mut sr);
    if valid {
        assert!(
            ss.iter()
                .zip(&sr)
                .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
        );
    }

    assert_eq!(kernels::all_finite(a), a.iter().all(|v| v.is_finite()));
});
