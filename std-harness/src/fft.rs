//! The discrete Fourier transforms the autocovariances need (sizes are powers of two):
//! rustfft's planned transforms with the `fft` feature (the command's build), an
//! iterative radix-2 transform of its own without it (the lean library). The two agree
//! to rounding; a test compares them.

use num_complex::Complex;

/// Transforms `buf` in place, unnormalised: `X_k = Σ_j x_j e^{∓2πi jk/m}`, `−` forward
/// and `+` inverse. `buf.len()` must be a power of two (or 0); any other length is left
/// as it is.
pub fn transform(buf: &mut [Complex<f64>], inverse: bool) {
    if !buf.len().is_power_of_two() {
        return;
    }
    #[cfg(feature = "fft")]
    planned::transform(buf, inverse);
    #[cfg(not(feature = "fft"))]
    radix2(buf, inverse);
}

/// Cooley–Tukey, decimation in time: the bit-reversal permutation, then log₂ m passes
/// of butterflies whose twiddles come from one table of `m/2` roots of unity, each
/// computed directly (no error accumulated by repeated multiplication).
#[cfg(any(test, not(feature = "fft")))]
fn radix2(buf: &mut [Complex<f64>], inverse: bool) {
    let m = buf.len();
    if m < 2 {
        return;
    }
    let bits = m.trailing_zeros();
    for i in 0..m {
        let j = i.reverse_bits() >> (usize::BITS - bits);
        if i < j {
            buf.swap(i, j);
        }
    }
    let sign = if inverse { 1.0 } else { -1.0 };
    let turn = sign * 2.0 * std::f64::consts::PI / m as f64;
    let roots: Vec<Complex<f64>> = (0..m / 2)
        .map(|k| Complex::from_polar(1.0, turn * k as f64))
        .collect();
    let mut half = 1;
    while half < m {
        let stride = m / (2 * half);
        for block in buf.chunks_exact_mut(2 * half) {
            let (lo, hi) = block.split_at_mut(half);
            for (k, (a, b)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                let t = roots[k * stride] * *b;
                *b = *a - t;
                *a += t;
            }
        }
        half *= 2;
    }
}

#[cfg(feature = "fft")]
mod planned {
    use std::cell::RefCell;

    use num_complex::Complex;
    use rustfft::FftPlanner;

    thread_local! {
        /// A planner per thread: it caches its plans by size, so each is made once.
        static PLANNER: RefCell<FftPlanner<f64>> = RefCell::new(FftPlanner::new());
        /// One scratch buffer a thread, not one allocation a transform.
        static SCRATCH: RefCell<Vec<Complex<f64>>> = const { RefCell::new(Vec::new()) };
    }

    pub fn transform(buf: &mut [Complex<f64>], inverse: bool) {
        let fft = PLANNER.with(|p| {
            let mut p = p.borrow_mut();
            if inverse {
                p.plan_fft_inverse(buf.len())
            } else {
                p.plan_fft_forward(buf.len())
            }
        });
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            let len = fft.get_inplace_scratch_len();
            if s.len() < len {
                s.resize(len, Complex::new(0.0, 0.0));
            }
            fft.process_with_scratch(buf, &mut s[..len]);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, `O(m²)`.
    fn dft(x: &[Complex<f64>], inverse: bool) -> Vec<Complex<f64>> {
        let m = x.len();
        let sign = if inverse { 1.0 } else { -1.0 };
        (0..m)
            .map(|k| {
                x.iter()
                    .enumerate()
                    .map(|(j, v)| {
                        let a = sign * 2.0 * std::f64::consts::PI * ((j * k) % m) as f64;
                        v * Complex::from_polar(1.0, a / m as f64)
                    })
                    .sum()
            })
            .collect()
    }

    fn series(m: usize) -> Vec<Complex<f64>> {
        (0..m)
            .map(|j| {
                let t = j as f64;
                Complex::new((0.37 * t).sin() + 0.01 * t, (1.3 * t).cos() - 0.5)
            })
            .collect()
    }

    #[test]
    fn radix2_is_the_definition() {
        for m in [1, 2, 4, 8, 16, 64, 256] {
            for inverse in [false, true] {
                let x = series(m);
                let mut y = x.clone();
                radix2(&mut y, inverse);
                let scale = x.iter().map(|v| v.norm()).sum::<f64>();
                for (a, b) in y.iter().zip(dft(&x, inverse)) {
                    assert!((a - b).norm() <= 1e-13 * scale, "m = {m}: {a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn transform_is_radix2_and_inverts() {
        let m = 1 << 12;
        let x = series(m);
        let mut planned = x.clone();
        transform(&mut planned, false);
        let mut own = x.clone();
        radix2(&mut own, false);
        let scale = planned.iter().map(|v| v.norm()).fold(0.0, f64::max);
        for (a, b) in planned.iter().zip(&own) {
            assert!((a - b).norm() <= 1e-12 * scale);
        }
        transform(&mut planned, true);
        for (a, b) in planned.iter().zip(&x) {
            assert!((a / m as f64 - b).norm() <= 1e-12);
        }
    }

    #[test]
    fn other_lengths_are_left_alone() {
        let x = series(6);
        let mut y = x.clone();
        transform(&mut y, false);
        assert_eq!(x, y);
    }
}
