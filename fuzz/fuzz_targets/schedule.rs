//! Step-size constructors: invalid parameters are refused; every schedule built gives
//! finite, positive steps; `from_range` hits its end points and never increases.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sgld::schedule::{Constant, Floor, Polynomial, Schedule};

fuzz_target!(|input: (f64, f64, f64, u64, f32, [u64; 4])| {
    let (a, b, g, steps, floor, ts) = input;
    if let Ok(p) = Polynomial::new(a, b, g) {
        for &t in &ts {
            let e = p.step_size(t);
            assert!(e.is_finite() && e > 0.0, "poly({a},{b},{g}) at {t}: {e}");
        }
        if let Ok(f) = Floor::new(p, floor) {
            assert!(ts.iter().all(|&t| f.step_size(t) >= floor));
        }
    }
    if let Ok(p) = Polynomial::from_range(a, b, g, steps) {
        {
            assert!(a >= b && a > 0.0 && b > 0.0);
            let last = steps.max(2) - 1;
            if a > b {
                let (e0, e1) = (p.step_size_f64(0), p.step_size_f64(last));
                assert!(
                    (e0 - a).abs() <= 1e-6 * a && (e1 - b).abs() <= 1e-6 * b,
                    "{e0} {e1} for {a} {b}"
                );
                let mut prev = f64::INFINITY;
                for k in 0..8 {
                    let e = p.step_size_f64(last / 7 * k);
                    assert!(e <= prev * (1.0 + 1e-12));
                    prev = e;
                }
            }
        }
    }
    assert_eq!(
        Constant::new(floor).is_ok(),
        floor.is_finite() && floor > 0.0
    );
});
