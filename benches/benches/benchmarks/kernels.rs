//! Every dense and sparse kernel, SIMD against its scalar twin.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use sgld::kernels::{reference, simd};

const LENGTHS: [usize; 4] = [8, 124, 1024, 16384];

fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = sgld::noise::default_rng(seed);
    let mut v = vec![0.0; n];
    sgld::noise::fill_normal(&mut rng, &mut v);
    v
}

/// The sanity check before timing: every `got` within `rel·(1 + |want|)` of `want`.
fn assert_close(got: &[f64], want: &[f64], rel: f64, what: &str) {
    assert!(
        got.iter()
            .zip(want)
            .all(|(s, r)| (s - r).abs() <= rel * (1.0 + r.abs())),
        "{what} sanity check"
    );
}

fn dot(c: &mut Criterion) {
    let mut g = c.benchmark_group("dot");
    for n in LENGTHS {
        let (a, b) = (data(n, 1), data(n, 2));
        let (s, r) = (simd::dot(&a, &b), reference::dot(&a, &b));
        assert!(
            (s - r).abs() <= 1e-3 * (1.0 + r.abs()),
            "dot sanity check: {s} vs {r}"
        );
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("simd", n), &n, |bch, _| {
            bch.iter(|| simd::dot(black_box(&a), black_box(&b)))
        });
        g.bench_with_input(BenchmarkId::new("scalar", n), &n, |bch, _| {
            bch.iter(|| reference::dot(black_box(&a), black_box(&b)))
        });
    }
    g.finish();
}

fn axpy(c: &mut Criterion) {
    let mut g = c.benchmark_group("axpy");
    for n in LENGTHS {
        let x = data(n, 3);
        let mut y = data(n, 4);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("simd", n), &n, |bch, _| {
            bch.iter(|| simd::axpy(black_box(1e-7), black_box(&x), black_box(&mut y)))
        });
        g.bench_with_input(BenchmarkId::new("scalar", n), &n, |bch, _| {
            bch.iter(|| reference::axpy(black_box(1e-7), black_box(&x), black_box(&mut y)))
        });
    }
    g.finish();
}

fn langevin(c: &mut Criterion) {
    let mut g = c.benchmark_group("langevin_update");
    for n in LENGTHS {
        let (grad, noise, m) = (data(n, 5), data(n, 6), vec![0.5f32; n]);
        let mut theta = data(n, 7);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("simd", n), &n, |bch, _| {
            bch.iter(|| simd::langevin_update(black_box(&mut theta), &grad, &noise, 1e-9, 1e-9))
        });
        g.bench_with_input(BenchmarkId::new("scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::langevin_update(black_box(&mut theta), &grad, &noise, 1e-9, 1e-9)
            })
        });
        g.bench_with_input(BenchmarkId::new("simd_precond", n), &n, |bch, _| {
            bch.iter(|| {
                simd::langevin_update_precond(black_box(&mut theta), &grad, &noise, &m, 1e-9, 1e-9)
            })
        });
        g.bench_with_input(BenchmarkId::new("scalar_precond", n), &n, |bch, _| {
            bch.iter(|| {
                reference::langevin_update_precond(
                    black_box(&mut theta),
                    &grad,
                    &noise,
                    &m,
                    1e-9,
                    1e-9,
                )
            })
        });
    }
    g.finish();
}

fn sparse(c: &mut Criterion) {
    let mut g = c.benchmark_group("sparse");
    for n in LENGTHS {
        // a9a-like rows: about 11% of the features set.
        let idx: Vec<u32> = (0..n as u32).step_by(9).collect();
        let w = data(n, 8);
        let mut y = data(n, 9);
        g.throughput(Throughput::Elements(idx.len() as u64));
        g.bench_with_input(BenchmarkId::new("dot_simd", n), &n, |bch, _| {
            bch.iter(|| simd::sparse_dot(black_box(&idx), black_box(&w)))
        });
        g.bench_with_input(BenchmarkId::new("dot_scalar", n), &n, |bch, _| {
            bch.iter(|| reference::sparse_dot(black_box(&idx), black_box(&w)))
        });
        g.bench_with_input(BenchmarkId::new("axpy_simd", n), &n, |bch, _| {
            bch.iter(|| simd::sparse_axpy(black_box(1e-7), black_box(&idx), black_box(&mut y)))
        });
        g.bench_with_input(BenchmarkId::new("axpy_scalar", n), &n, |bch, _| {
            bch.iter(|| reference::sparse_axpy(black_box(1e-7), black_box(&idx), black_box(&mut y)))
        });
    }
    g.finish();
}

fn bitmap(c: &mut Criterion) {
    let mut g = c.benchmark_group("bitmap");
    for n in LENGTHS {
        // A batch of ten rows of a table of 256, a9a-like: about 11% of the features set.
        let stride = n.div_ceil(16);
        let mut table = vec![0u16; 256 * stride];
        for (k, word) in table.iter_mut().enumerate() {
            let row = k / stride;
            for bit in 0..16 {
                let j = 16 * (k % stride) + bit;
                if j < n && (j * 7 + row * 13) % 9 == 0 {
                    *word |= 1 << bit;
                }
            }
        }
        let rows: Vec<usize> = (0..10).map(|k| k * 25 + 3).collect();
        let set: u32 = rows
            .iter()
            .flat_map(|&i| &table[i * stride..(i + 1) * stride])
            .map(|w| w.count_ones())
            .sum();
        let w = data(n, 8);
        let mut y = data(n, 9);
        let alphas = data(10, 10);
        // Sanity check: the twins agree.
        let (mut ds, mut dr) = ([0.0f32; 10], [0.0f32; 10]);
        simd::bitmap_dots(&table, stride, &rows, &w, &mut ds);
        reference::bitmap_dots(&table, stride, &rows, &w, &mut dr);
        for (a, b) in ds.iter().zip(&dr) {
            assert!(
                (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                "bitmap_dots {a} vs {b}"
            );
        }
        let mut out = [0.0f32; 10];
        g.throughput(Throughput::Elements(set.into()));
        g.bench_with_input(BenchmarkId::new("dots_simd", n), &n, |bch, _| {
            bch.iter(|| {
                simd::bitmap_dots(black_box(&table), stride, black_box(&rows), &w, &mut out)
            })
        });
        g.bench_with_input(BenchmarkId::new("dots_scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::bitmap_dots(black_box(&table), stride, black_box(&rows), &w, &mut out)
            })
        });
        let d16 = simd::bitmap_dots16(&table, stride, &rows, &w);
        assert!(d16[..10] == ds[..] && d16[10..].iter().all(|&v| v == 0.0));
        g.bench_with_input(BenchmarkId::new("dots16_simd", n), &n, |bch, _| {
            bch.iter(|| simd::bitmap_dots16(black_box(&table), stride, black_box(&rows), &w))
        });
        g.bench_with_input(BenchmarkId::new("dots16_scalar", n), &n, |bch, _| {
            bch.iter(|| reference::bitmap_dots16(black_box(&table), stride, black_box(&rows), &w))
        });
        g.bench_with_input(BenchmarkId::new("axpys_simd", n), &n, |bch, _| {
            bch.iter(|| {
                simd::bitmap_axpys(black_box(&alphas), &table, stride, &rows, black_box(&mut y))
            })
        });
        g.bench_with_input(BenchmarkId::new("axpys_scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::bitmap_axpys(
                    black_box(&alphas),
                    &table,
                    stride,
                    &rows,
                    black_box(&mut y),
                )
            })
        });
    }
    g.finish();
}

fn propose_and_check(c: &mut Criterion) {
    let mut g = c.benchmark_group("propose_and_check");
    for n in LENGTHS {
        let (theta, grad) = (data(n, 13), data(n, 14));
        let mut noise = data(n, 15);
        assert!(simd::all_finite(&noise) && reference::all_finite(&noise));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("propose_simd", n), &n, |bch, _| {
            bch.iter(|| simd::langevin_propose(&theta, &grad, black_box(&mut noise), 1e-9, 0.0))
        });
        g.bench_with_input(BenchmarkId::new("propose_scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::langevin_propose(&theta, &grad, black_box(&mut noise), 1e-9, 0.0)
            })
        });
        let (mut ts, mut tr) = (theta.clone(), theta.clone());
        let (mut bs, mut br) = (noise.clone(), noise.clone());
        let cs = simd::langevin_step_checked(&mut ts, &grad, &mut bs, 1e-9, 0.0);
        let cr = reference::langevin_step_checked(&mut tr, &grad, &mut br, 1e-9, 0.0);
        assert!(
            cs.finite
                && cr.finite
                && (cs.noise_sq - cr.noise_sq).abs() <= 1e-4 * cr.noise_sq
                && (cs.grad_sq - cr.grad_sq).abs() <= 1e-4 * cr.grad_sq
                && bs == theta,
            "step_checked sanity check"
        );
        // θ moves by 1e-9·g a step and the noise buffer takes the old θ: both stay
        // finite and of the same size however many times the step runs.
        g.bench_with_input(BenchmarkId::new("step_checked_simd", n), &n, |bch, _| {
            bch.iter(|| simd::langevin_step_checked(black_box(&mut ts), &grad, &mut bs, 1e-9, 0.0))
        });
        g.bench_with_input(BenchmarkId::new("step_checked_scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::langevin_step_checked(black_box(&mut tr), &grad, &mut br, 1e-9, 0.0)
            })
        });
        g.bench_with_input(BenchmarkId::new("all_finite_simd", n), &n, |bch, _| {
            bch.iter(|| simd::all_finite(black_box(&theta)))
        });
        g.bench_with_input(BenchmarkId::new("all_finite_scalar", n), &n, |bch, _| {
            bch.iter(|| reference::all_finite(black_box(&theta)))
        });
    }
    g.finish();
}

fn sigmoid(c: &mut Criterion) {
    let mut g = c.benchmark_group("sigmoid");
    for n in LENGTHS {
        let z: Vec<f32> = data(n, 10).iter().map(|v| 4.0 * v).collect();
        let (mut s, mut r) = (vec![0.0f32; n], vec![0.0f32; n]);
        simd::sigmoid(&z, &mut s);
        reference::sigmoid(&z, &mut r);
        assert!(
            s.iter().zip(&r).all(|(a, b)| (a - b).abs() <= 1e-6),
            "sigmoid sanity check"
        );
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("simd", n), &n, |bch, _| {
            bch.iter(|| simd::sigmoid(black_box(&z), black_box(&mut s)))
        });
        g.bench_with_input(BenchmarkId::new("scalar", n), &n, |bch, _| {
            bch.iter(|| reference::sigmoid(black_box(&z), black_box(&mut r)))
        });
    }
    g.finish();
}

fn f64_kernels(c: &mut Criterion) {
    let mut g = c.benchmark_group("f64");
    for n in LENGTHS {
        let a: Vec<f64> = data(n, 11).iter().map(|&v| v as f64).collect();
        let b: Vec<f64> = data(n, 12).iter().map(|&v| 4.0 * v as f64).collect();
        let mut out = vec![0.0f64; n];
        let (s, r) = (simd::dot_f64(&a, &b), reference::dot_f64(&a, &b));
        assert!(
            (s - r).abs() <= 1e-9 * (1.0 + r.abs()),
            "dot_f64 sanity check"
        );
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("dot_simd", n), &n, |bch, _| {
            bch.iter(|| simd::dot_f64(black_box(&a), black_box(&b)))
        });
        g.bench_with_input(BenchmarkId::new("dot_scalar", n), &n, |bch, _| {
            bch.iter(|| reference::dot_f64(black_box(&a), black_box(&b)))
        });
        g.bench_with_input(BenchmarkId::new("axpy_simd", n), &n, |bch, _| {
            bch.iter(|| simd::axpy_f64(black_box(1e-9), black_box(&a), black_box(&mut out)))
        });
        g.bench_with_input(BenchmarkId::new("axpy_scalar", n), &n, |bch, _| {
            bch.iter(|| reference::axpy_f64(black_box(1e-9), black_box(&a), black_box(&mut out)))
        });
        g.bench_with_input(BenchmarkId::new("tanh_half_simd", n), &n, |bch, _| {
            bch.iter(|| simd::tanh_half(black_box(&b), black_box(&mut out)))
        });
        g.bench_with_input(BenchmarkId::new("tanh_half_scalar", n), &n, |bch, _| {
            bch.iter(|| reference::tanh_half(black_box(&b), black_box(&mut out)))
        });
    }
    g.finish();
}

/// The ICA chunk passes: ten rows (D = 10) of each length multiplied by a 10 × 10
/// matrix (`y = W·x`), dotted with one vector, and with each other (`Σ tanh(y/2)·yᵀ`);
/// throughput counts the rows' elements.
fn row_kernels(c: &mut Criterion) {
    const ROWS: usize = 10;
    let mut g = c.benchmark_group("rows_f64");
    for n in LENGTHS {
        let m: Vec<f64> = data(ROWS * n, 13).iter().map(|&v| v as f64).collect();
        let a: Vec<f64> = data(n, 14).iter().map(|&v| v as f64).collect();
        let (mut d, mut dr) = ([0.0f64; ROWS], [0.0f64; ROWS]);
        simd::dots_f64(&a, &m, n, &mut d);
        reference::dots_f64(&a, &m, n, &mut dr);
        assert_close(&d, &dr, 1e-9, "dots_f64");
        g.throughput(Throughput::Elements((ROWS * n) as u64));
        // y = W·x: W (10 × 10) times the ten rows.
        let w10: Vec<f64> = data(ROWS * ROWS, 16).iter().map(|&v| v as f64).collect();
        let (mut gs, mut gr) = (vec![0.0f64; ROWS * n], vec![0.0f64; ROWS * n]);
        simd::gemm_f64(&w10, &m, &mut gs, ROWS, ROWS, n);
        reference::gemm_f64(&w10, &m, &mut gr, ROWS, ROWS, n);
        assert_close(&gs, &gr, 1e-9, "gemm_f64");
        g.bench_with_input(BenchmarkId::new("gemm_simd", n), &n, |bch, _| {
            bch.iter(|| {
                simd::gemm_f64(
                    black_box(&w10),
                    black_box(&m),
                    black_box(&mut gs),
                    ROWS,
                    ROWS,
                    n,
                )
            })
        });
        g.bench_with_input(BenchmarkId::new("gemm_scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::gemm_f64(
                    black_box(&w10),
                    black_box(&m),
                    black_box(&mut gs),
                    ROWS,
                    ROWS,
                    n,
                )
            })
        });
        // b ← P·b, checked and in place (the ICA step's last product), with P a cyclic
        // permutation so that repeated products only move the values around.
        let perm: Vec<f64> = (0..ROWS * ROWS)
            .map(|k| f64::from(u8::from((k / ROWS + 1) % ROWS == k % ROWS)))
            .collect();
        let (mut bs, mut br, mut tmp) = (m.clone(), m.clone(), vec![0.0f64; ROWS * n]);
        assert!(simd::mul_left_checked_f64(
            &perm, &mut bs, &mut tmp, ROWS, n
        ));
        assert!(reference::mul_left_checked_f64(
            &perm, &mut br, &mut tmp, ROWS, n
        ));
        assert_close(&bs, &br, 0.0, "mul_left_checked_f64");
        g.bench_with_input(
            BenchmarkId::new("mul_left_checked_simd", n),
            &n,
            |bch, _| {
                bch.iter(|| {
                    simd::mul_left_checked_f64(
                        black_box(&perm),
                        black_box(&mut bs),
                        black_box(&mut tmp),
                        ROWS,
                        n,
                    )
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("mul_left_checked_scalar", n),
            &n,
            |bch, _| {
                bch.iter(|| {
                    reference::mul_left_checked_f64(
                        black_box(&perm),
                        black_box(&mut br),
                        black_box(&mut tmp),
                        ROWS,
                        n,
                    )
                })
            },
        );
        g.bench_with_input(BenchmarkId::new("dots_simd", n), &n, |bch, _| {
            bch.iter(|| simd::dots_f64(black_box(&a), black_box(&m), n, black_box(&mut d)))
        });
        g.bench_with_input(BenchmarkId::new("dots_scalar", n), &n, |bch, _| {
            bch.iter(|| reference::dots_f64(black_box(&a), black_box(&m), n, black_box(&mut d)))
        });
        // Σ tanh(y/2)·yᵀ whole: the ten rows against themselves (A·Aᵀ, 10 × 10).
        let (mut p, mut pr) = ([0.0f64; ROWS * ROWS], [0.0f64; ROWS * ROWS]);
        simd::dots_rows_f64(&m, &m, n, n, &mut p, ROWS);
        reference::dots_rows_f64(&m, &m, n, n, &mut pr, ROWS);
        assert_close(&p, &pr, 1e-9, "dots_rows_f64");
        g.bench_with_input(BenchmarkId::new("dots_rows_simd", n), &n, |bch, _| {
            bch.iter(|| {
                simd::dots_rows_f64(black_box(&m), black_box(&m), n, n, black_box(&mut p), ROWS)
            })
        });
        g.bench_with_input(BenchmarkId::new("dots_rows_scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::dots_rows_f64(
                    black_box(&m),
                    black_box(&m),
                    n,
                    n,
                    black_box(&mut p),
                    ROWS,
                )
            })
        });
    }
    g.finish();
}

/// The ICA chunk passes as the model runs them, in f32 with f64 sums: ten rows (D = 10)
/// of each length turned channel-major (eight at a time), multiplied by a 10 × 10
/// matrix (`y = W·x`; or eight rows, or all of them in a scattered order, times the
/// matrix straight into channel-major `y`), `tanh(y/2)`, and `Σ tanh(y/2)·yᵀ`;
/// throughput counts the rows' elements.
fn row_kernels_f32(c: &mut Criterion) {
    const ROWS: usize = 10;
    let mut g = c.benchmark_group("rows_f32");
    for n in LENGTHS {
        let m = data(ROWS * n, 13);
        let w10 = data(ROWS * ROWS, 16);
        let (mut y, mut yr) = (vec![0.0f32; ROWS * n], vec![0.0f32; ROWS * n]);
        simd::gemm_f32(&w10, &m, &mut y, ROWS, ROWS, n);
        reference::gemm_f32(&w10, &m, &mut yr, ROWS, ROWS, n);
        assert!(
            y.iter()
                .zip(&yr)
                .all(|(s, r)| (s - r).abs() <= 1e-4 * (1.0 + r.abs())),
            "gemm_f32 sanity check"
        );
        let (mut t, mut tr) = (vec![0.0f32; ROWS * n], vec![0.0f32; ROWS * n]);
        simd::tanh_half_f32(&y, &mut t);
        reference::tanh_half_f32(&y, &mut tr);
        assert!(
            t.iter()
                .zip(&tr)
                .all(|(s, r)| (s - r).abs() <= 4.0 * f32::EPSILON),
            "tanh_half_f32 sanity check"
        );
        let (mut p, mut pr) = ([0.0f64; ROWS * ROWS], [0.0f64; ROWS * ROWS]);
        simd::dots_rows_f32(&t, &y, n, n, &mut p, ROWS);
        reference::dots_rows_f32(&t, &y, n, n, &mut pr, ROWS);
        assert_close(&p, &pr, 1e-9, "dots_rows_f32");
        let mut pl = [0.0f64; ROWS * ROWS];
        simd::dots_rows_f32_lanes(&t, &y, n, n, &mut pl, ROWS);
        assert_close(&pl, &pr, 1e-5, "dots_rows_f32_lanes");
        g.throughput(Throughput::Elements((ROWS * n) as u64));
        // The rows turned channel-major: the first eight rows as columns, `stride` n.
        let rows: [&[f32]; 8] = std::array::from_fn(|q| &m[q * ROWS..(q + 1) * ROWS]);
        let mut xt = vec![0.0f32; ROWS * n.max(8)];
        g.bench_with_input(BenchmarkId::new("columns_simd", n), &n, |bch, _| {
            bch.iter(|| simd::columns_f32(black_box(&rows), black_box(&mut xt), n.max(8)))
        });
        g.bench_with_input(BenchmarkId::new("columns_scalar", n), &n, |bch, _| {
            bch.iter(|| reference::columns_f32(black_box(&rows), black_box(&mut xt), n.max(8)))
        });
        // The same eight rows times W, channel-major, without the transposed copy.
        let (mut ps, mut pr) = (vec![0.0f32; ROWS * n.max(8)], vec![0.0f32; ROWS * n.max(8)]);
        simd::project_rows_f32(&w10, ROWS, &rows, &mut ps, n.max(8));
        reference::project_rows_f32(&w10, ROWS, &rows, &mut pr, n.max(8));
        assert!(
            ps.iter().zip(&pr).all(|(s, r)| s.to_bits() == r.to_bits())
                && ps[..8].iter().any(|&v| v != 0.0),
            "project_rows_f32 sanity check"
        );
        g.bench_with_input(BenchmarkId::new("project_rows_simd", n), &n, |bch, _| {
            bch.iter(|| {
                simd::project_rows_f32(
                    black_box(&w10),
                    ROWS,
                    black_box(&rows),
                    black_box(&mut ps),
                    n.max(8),
                )
            })
        });
        g.bench_with_input(BenchmarkId::new("project_rows_scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::project_rows_f32(
                    black_box(&w10),
                    ROWS,
                    black_box(&rows),
                    black_box(&mut ps),
                    n.max(8),
                )
            })
        });
        // All n rows times W, straight from the rows in a scattered order (as a batch
        // reads them), channel-major with a stride of whole groups of eight.
        let at: Vec<usize> = (0..n).map(|j| (j * 7919 % n) * ROWS).collect();
        let sb = n.next_multiple_of(8);
        let (mut bs, mut br) = (vec![0.0f32; ROWS * sb], vec![0.0f32; ROWS * sb]);
        simd::project_batch_f32(&w10, ROWS, &m, &at, &mut bs, sb);
        reference::project_batch_f32(&w10, ROWS, &m, &at, &mut br, sb);
        assert!(
            bs.iter().zip(&br).all(|(s, r)| s.to_bits() == r.to_bits())
                && bs[..n].iter().any(|&v| v != 0.0),
            "project_batch_f32 sanity check"
        );
        g.bench_with_input(BenchmarkId::new("project_batch_simd", n), &n, |bch, _| {
            bch.iter(|| {
                simd::project_batch_f32(
                    black_box(&w10),
                    ROWS,
                    black_box(&m),
                    black_box(&at),
                    black_box(&mut bs),
                    sb,
                )
            })
        });
        g.bench_with_input(BenchmarkId::new("project_batch_scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::project_batch_f32(
                    black_box(&w10),
                    ROWS,
                    black_box(&m),
                    black_box(&at),
                    black_box(&mut bs),
                    sb,
                )
            })
        });
        // The same with tanh(y/2) of every sum, against the two passes it fuses.
        let mut bt = vec![0.0f32; ROWS * sb];
        let (mut ys, mut ts) = (vec![0.0f32; ROWS * sb], vec![0.0f32; ROWS * sb]);
        simd::project_batch_tanh_f32(&w10, ROWS, &m, &at, &mut ys, &mut bt, sb);
        simd::tanh_half_f32(&bs, &mut ts);
        assert!(
            ys == bs && bt.iter().zip(&ts).all(|(a, b)| a.to_bits() == b.to_bits()),
            "project_batch_tanh_f32 sanity check"
        );
        g.bench_with_input(
            BenchmarkId::new("project_batch_tanh_simd", n),
            &n,
            |bch, _| {
                bch.iter(|| {
                    simd::project_batch_tanh_f32(
                        black_box(&w10),
                        ROWS,
                        black_box(&m),
                        black_box(&at),
                        black_box(&mut ys),
                        black_box(&mut bt),
                        sb,
                    )
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("project_batch_then_tanh_simd", n),
            &n,
            |bch, _| {
                bch.iter(|| {
                    simd::project_batch_f32(
                        black_box(&w10),
                        ROWS,
                        black_box(&m),
                        black_box(&at),
                        black_box(&mut ys),
                        sb,
                    );
                    simd::tanh_half_f32(black_box(&ys), black_box(&mut bt));
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("project_batch_tanh_scalar", n),
            &n,
            |bch, _| {
                bch.iter(|| {
                    reference::project_batch_tanh_f32(
                        black_box(&w10),
                        ROWS,
                        black_box(&m),
                        black_box(&at),
                        black_box(&mut ys),
                        black_box(&mut bt),
                        sb,
                    )
                })
            },
        );
        g.bench_with_input(BenchmarkId::new("gemm_simd", n), &n, |bch, _| {
            bch.iter(|| {
                simd::gemm_f32(
                    black_box(&w10),
                    black_box(&m),
                    black_box(&mut y),
                    ROWS,
                    ROWS,
                    n,
                )
            })
        });
        g.bench_with_input(BenchmarkId::new("gemm_scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::gemm_f32(
                    black_box(&w10),
                    black_box(&m),
                    black_box(&mut y),
                    ROWS,
                    ROWS,
                    n,
                )
            })
        });
        g.bench_with_input(BenchmarkId::new("tanh_half_simd", n), &n, |bch, _| {
            bch.iter(|| simd::tanh_half_f32(black_box(&y), black_box(&mut t)))
        });
        g.bench_with_input(BenchmarkId::new("tanh_half_scalar", n), &n, |bch, _| {
            bch.iter(|| reference::tanh_half_f32(black_box(&y), black_box(&mut t)))
        });
        g.bench_with_input(BenchmarkId::new("dots_rows_simd", n), &n, |bch, _| {
            bch.iter(|| {
                simd::dots_rows_f32(black_box(&t), black_box(&y), n, n, black_box(&mut p), ROWS)
            })
        });
        g.bench_with_input(BenchmarkId::new("dots_rows_scalar", n), &n, |bch, _| {
            bch.iter(|| {
                reference::dots_rows_f32(
                    black_box(&t),
                    black_box(&y),
                    n,
                    n,
                    black_box(&mut p),
                    ROWS,
                )
            })
        });
        g.bench_with_input(BenchmarkId::new("dots_rows_lanes_simd", n), &n, |bch, _| {
            bch.iter(|| {
                simd::dots_rows_f32_lanes(
                    black_box(&t),
                    black_box(&y),
                    n,
                    n,
                    black_box(&mut p),
                    ROWS,
                )
            })
        });
        g.bench_with_input(
            BenchmarkId::new("dots_rows_lanes_scalar", n),
            &n,
            |bch, _| {
                bch.iter(|| {
                    reference::dots_rows_f32_lanes(
                        black_box(&t),
                        black_box(&y),
                        n,
                        n,
                        black_box(&mut p),
                        ROWS,
                    )
                })
            },
        );
    }
    g.finish();
}

/// Eight f32 rows of each length written as eight f64 columns (the ICA mini-batch turned
/// channel-major); throughput counts the elements.
fn columns(c: &mut Criterion) {
    let mut g = c.benchmark_group("columns_f64");
    for n in LENGTHS {
        let x = data(8 * n, 17);
        let rows: [&[f32]; 8] = std::array::from_fn(|q| &x[q * n..(q + 1) * n]);
        let (mut s, mut r) = (vec![0.0f64; 8 * n], vec![0.0f64; 8 * n]);
        simd::columns_f64(&rows, &mut s, 8);
        reference::columns_f64(&rows, &mut r, 8);
        assert!(
            s == r && s[8 + 3] == x[3 * n + 1] as f64,
            "columns_f64 sanity check"
        );
        g.throughput(Throughput::Elements((8 * n) as u64));
        g.bench_with_input(BenchmarkId::new("simd", n), &n, |bch, _| {
            bch.iter(|| simd::columns_f64(black_box(&rows), black_box(&mut s), 8))
        });
        g.bench_with_input(BenchmarkId::new("scalar", n), &n, |bch, _| {
            bch.iter(|| reference::columns_f64(black_box(&rows), black_box(&mut s), 8))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    row_kernels,
    row_kernels_f32,
    columns,
    dot,
    axpy,
    langevin,
    propose_and_check,
    sparse,
    bitmap,
    sigmoid,
    f64_kernels
);
