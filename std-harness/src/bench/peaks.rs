//! The machine's measured peaks: normals, sparse gathers, FMAs and `tanh` per ns.

use std::hint::black_box;
use std::time::Instant;

use rand_core::{Rng, SeedableRng};
use sgld::kernels::simd;
use sgld::noise::{DefaultRng, fill_normal};

use super::Peaks;
use super::workloads::SEED;

/// Times `f` (which does `units` units) `repeats` times; the best ns per unit.
fn best_ns_per_unit(repeats: usize, units: f64, mut f: impl FnMut()) -> f64 {
    f();
    (0..repeats)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_nanos() as f64 / units
        })
        .fold(f64::INFINITY, f64::min)
}

/// Measures the machine's peaks (about a second). The FMA kernels run first, so the
/// core is at its working clock when the noise and gathers are timed.
pub fn measure_peaks() -> Peaks {
    let fma32 = 1.0
        / best_ns_per_unit(20, FMA_ITERS as f64 * 8.0 * 16.0, || {
            black_box(fma_kernel_f32(black_box(1.0)));
        });
    let fma64 = 1.0
        / best_ns_per_unit(20, FMA_ITERS as f64 * 8.0 * 8.0, || {
            black_box(fma_kernel_f64(black_box(1.0)));
        });
    let mut rng = DefaultRng::seed_from_u64(SEED);
    let mut buf = vec![0.0f32; 4096];
    let normals = 1.0
        / best_ns_per_unit(50, 64.0 * 4096.0, || {
            for _ in 0..64 {
                fill_normal(&mut rng, &mut buf);
                black_box(&mut buf);
            }
        });
    let w = buf[..124].to_vec();
    let idx: Vec<u32> = (0..4096).map(|_| (rng.next_u64() % 124) as u32).collect();
    let gathers = 1.0
        / best_ns_per_unit(50, 64.0 * 4096.0, || {
            for _ in 0..64 {
                black_box(simd::sparse_dot(black_box(&idx), black_box(&w)));
            }
        });
    let y: Vec<f32> = buf.iter().map(|z| 4.0 * z).collect();
    let mut t = vec![0.0f32; y.len()];
    let tanh = 1.0
        / best_ns_per_unit(50, 64.0 * 4096.0, || {
            for _ in 0..64 {
                simd::tanh_half_f32(black_box(&y), black_box(&mut t));
            }
        });
    Peaks {
        normals_per_ns: normals,
        gathers_per_ns: gathers,
        fmas_f32_per_ns: fma32,
        fmas_f64_per_ns: fma64,
        tanh_per_ns: tanh,
    }
}

const FMA_ITERS: usize = 100_000;

/// Eight independent chains of 16-lane f32 FMAs (enough to cover the FMA latency on
/// two pipes).
fn fma_kernel_f32(seed: f32) -> f32 {
    use wide::f32x16;
    let a = f32x16::splat(0.999_999);
    let b = f32x16::splat(1e-7);
    let mut acc = [f32x16::splat(seed); 8];
    for _ in 0..FMA_ITERS {
        for v in acc.iter_mut() {
            *v = v.mul_add(a, b);
        }
    }
    acc.iter().fold(f32x16::ZERO, |s, v| s + *v).reduce_add()
}

/// Eight independent chains of 8-lane f64 FMAs.
fn fma_kernel_f64(seed: f64) -> f64 {
    use wide::f64x8;
    let a = f64x8::splat(0.999_999);
    let b = f64x8::splat(1e-7);
    let mut acc = [f64x8::splat(seed); 8];
    for _ in 0..FMA_ITERS {
        for v in acc.iter_mut() {
            *v = v.mul_add(a, b);
        }
    }
    acc.iter().fold(f64x8::ZERO, |s, v| s + *v).reduce_add()
}
