//! The Langevin update (eq. 4), its out-of-place proposal, the checked step in place,
//! and the preconditioned update (eq. 9): never panic, refuse bad step sizes / lengths /
//! preconditioners, work on the common prefix of inputs of unequal lengths, SIMD within
//! a few roundings of the scalar twin, and finite outputs from moderate inputs.
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
    // The checked step on the full, possibly unequal, inputs: nothing written past the
    // common prefix, the old θ in the noise buffer, the plain proposal's values in θ,
    // and a finiteness flag that matches what it wrote.
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let mut plain = e.clone();
    simd::langevin_propose(&t, &g, &mut plain, h, s);
    for step in [
        simd::langevin_step_checked,
        reference::langevin_step_checked,
    ] {
        let (mut kt, mut ke) = (t.clone(), e.clone());
        let check = step(&mut kt, &g, &mut ke, h, s);
        assert_eq!(bits(&kt[n3..]), bits(&t[n3..]));
        assert_eq!(bits(&ke[n3..]), bits(&e[n3..]));
        assert_eq!(bits(&ke[..n3]), bits(&t[..n3]));
        assert_eq!(check.finite, kt[..n3].iter().all(|v| v.is_finite()));
    }
    // The same values as the plain proposal (any NaN for a NaN: its payload depends on
    // the operand order the compiler picks).
    let values = |v: &[f32]| {
        v.iter()
            .map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() })
            .collect::<Vec<u32>>()
    };
    let mut kt = t.clone();
    simd::langevin_step_checked(&mut kt, &g, &mut e.clone(), h, s);
    assert_eq!(values(&kt[..n3]), values(&plain[..n3]));
    // The plain updates and the proposal on the full inputs: what they write on the
    // inputs cut to the common prefix, and nothing past it.
    let ma: Vec<f32> = m.iter().map(|v| v.abs()).collect();
    type Update = fn(&mut [f32], &[f32], &[f32], f32, f32);
    type Precond = fn(&mut [f32], &[f32], &[f32], &[f32], f32, f32);
    type Propose = fn(&[f32], &[f32], &mut [f32], f32, f32);
    for (update, precond, propose) in [
        (
            simd::langevin_update as Update,
            simd::langevin_update_precond as Precond,
            simd::langevin_propose as Propose,
        ),
        (
            reference::langevin_update as Update,
            reference::langevin_update_precond as Precond,
            reference::langevin_propose as Propose,
        ),
    ] {
        let (mut full, mut part) = (t.clone(), t[..n3].to_vec());
        update(&mut full, &g, &e, h, s);
        update(&mut part, &g[..n3], &e[..n3], h, s);
        assert_eq!(values(&full[..n3]), values(&part));
        assert_eq!(bits(&full[n3..]), bits(&t[n3..]));
        let (mut full, mut part) = (t.clone(), t[..n].to_vec());
        precond(&mut full, &g, &e, &ma, h, s);
        precond(&mut part, &g[..n], &e[..n], &ma[..n], h, s);
        assert_eq!(values(&full[..n]), values(&part));
        assert_eq!(bits(&full[n..]), bits(&t[n..]));
        let (mut full, mut part) = (e.clone(), e[..n3].to_vec());
        propose(&t, &g, &mut full, h, s);
        propose(&t[..n3], &g[..n3], &mut part, h, s);
        assert_eq!(values(&full[..n3]), values(&part));
        assert_eq!(bits(&full[n3..]), bits(&e[n3..]));
    }
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
