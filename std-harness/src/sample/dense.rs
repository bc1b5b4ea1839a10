//! Dense f64 arithmetic of the warm-up and the exact samplers' metric.

/// `Σ aᵢbᵢ` in f64 over the shorter slice, in eight interleaved sums (which the
/// compiler keeps in vector registers: a single running sum waits on each addition).
pub fn dot<A: Copy + Into<f64>, B: Copy + Into<f64>>(a: &[A], b: &[B]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(&x, &y)| x.into() * y.into())
        .sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k].into() * y[k].into();
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interleaved sums agree with one running sum, at every length's remainder.
    #[test]
    fn dot_matches_the_plain_sum() {
        for n in [0, 1, 7, 8, 9, 31, 100] {
            let a: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let b: Vec<f64> = (0..n + 3).map(|i| 1.0 + (i as f64 * 0.11).cos()).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!(
                (dot(&a, &b) - plain).abs() <= 1e-12 * (1.0 + plain.abs()),
                "{n}"
            );
        }
    }
}
