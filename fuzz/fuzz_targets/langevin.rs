//! The Langevin update (eq. 4), its out-of-place proposal (plain and checked), and the
//! preconditioned update (eq. 9): never panic, refuse bad step sizes / lengths /
//! preconditioners, SIMD within a few roundings of the scalar twin, and finite outputs
//! from moderate inputs.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sgld::kernels::{self, reference, simd};

fuzz_target!(|input: (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>, f32)| {
    let (t, g, e, m, eps) = input;
    let n3 = t.len().min(g.len()).min(e.len());
    let n = n3.min(m.len());
    let ok_eps = eps.is_finite() && eps > 0.0;
    let (h, s) = (0.5 * eps, eps.abs().sqrt());
    let mut tt = t.clone();
    let r = kernels::langevin_update(&mut tt, &g, &e, eps);
    assert_eq!(
        r.is_ok(),
        ok_eps && t.len() == g.len() && t.len() == e.len()
    );
    // The checked proposal on the full, possibly unequal, inputs: nothing written past
    // the common prefix, and a finiteness flag that matches what it wrote.
    let (mut ka, mut kb) = (e.clone(), e.clone());
    let (_, fin_a) = simd::langevin_propose_checked(&t, &g, &mut ka, h, s);
    let (_, fin_b) = reference::langevin_propose_checked(&t, &g, &mut kb, h, s);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    assert_eq!(bits(&ka[n3..]), bits(&e[n3..]));
    assert_eq!(bits(&kb[n3..]), bits(&e[n3..]));
    assert_eq!(fin_a, ka[..n3].iter().all(|v| v.is_finite()));
    assert_eq!(fin_b, kb[..n3].iter().all(|v| v.is_finite()));
    let (t, g, e) = (&t[..n], &g[..n], &e[..n]);
    let m: Vec<f32> = m[..n].iter().map(|v| v.abs()).collect();
    let (mut a, mut b) = (t.to_vec(), t.to_vec());
    simd::langevin_update(&mut a, g, e, h, s);
    reference::langevin_update(&mut b, g, e, h, s);
    let (mut pa, mut pb) = (e.to_vec(), e.to_vec());
    simd::langevin_propose(t, g, &mut pa, h, s);
    reference::langevin_propose(t, g, &mut pb, h, s);
    let (mut ca, mut cb) = (t.to_vec(), t.to_vec());
    simd::langevin_update_precond(&mut ca, g, e, &m, h, s);
    reference::langevin_update_precond(&mut cb, g, e, &m, h, s);
    for i in 0..n {
        let mag =
            (t[i] as f64).abs() + (h as f64 * g[i] as f64).abs() + (s as f64 * e[i] as f64).abs();
        assert!(
            common::close(a[i], b[i], mag, 6.0),
            "update {i}: {} vs {}",
            a[i],
            b[i]
        );
        assert!(
            common::close(pa[i], pb[i], mag, 6.0),
            "propose {i}: {} vs {}",
            pa[i],
            pb[i]
        );
        let magc = (t[i] as f64).abs()
            + (h as f64 * m[i] as f64 * g[i] as f64).abs()
            + (s as f64 * (m[i] as f64).sqrt() * e[i] as f64).abs();
        assert!(
            common::close(ca[i], cb[i], magc, 10.0),
            "precond {i}: {} vs {}",
            ca[i],
            cb[i]
        );
    }
    // Moderate inputs and a valid step give finite outputs.
    if ok_eps && eps <= 1.0 {
        let (mt, mg, me) = (
            common::moderate(t, 1e6),
            common::moderate(g, 1e6),
            common::moderate(e, 10.0),
        );
        let mut out = mt.clone();
        kernels::langevin_update(&mut out, &mg, &me, eps).unwrap();
        assert!(out.iter().all(|v| v.is_finite()));
    }
    let mut cc = t.to_vec();
    let rp = kernels::langevin_update_precond(&mut cc, g, e, &m, eps);
    assert_eq!(rp.is_ok(), ok_eps && m.iter().all(|v| v.is_finite()));
});
