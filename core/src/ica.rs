//! Bayesian ICA with natural-gradient SGLD and corrected Langevin (§5.3).
//!
//! Model (eq. 14): `p(x, W) = |det W| Πᵢ pᵢ(wᵢᵀx) Πᵢⱼ N(Wᵢⱼ; 0, 1/λ)` with
//! `pᵢ(y) = 1/(4 cosh²(y/2))`; `λ` is the prior *precision*, as in eq. 15.
//!
//! Natural gradient (eq. 15), the data sum estimated from a mini-batch of n and scaled
//! by N/n: `D_W = (N·I − (N/n) Σ tanh(yₙ/2) yₙᵀ) W − λ W WᵀW`, with `yₙ = W xₙ`.
//!
//! SGLD (eq. 16): `W ← W + ½ε D_W + η √(WᵀW)`, `ηᵢⱼ ~ N(0, ε)`. The preconditioner is
//! `M = δ ⊗ WᵀW`: each row of `W` moves with covariance `ε WᵀW`, and the noise is drawn
//! as `η W`, which has exactly that distribution (any `R` with `RᵀR = WᵀW` does), so a
//! step needs no square root or factorisation of `WᵀW`. Corrected Langevin's density
//! takes `(WᵀW)⁻¹` and `det(WᵀW)` from a symmetric eigendecomposition.
//!
//! **Drift correction.** A position-dependent preconditioner needs the drift term
//! `Γᵢⱼ = Σₖₗ ∂M_{ij,kl}/∂W_{kl}` for the Langevin dynamics to leave the posterior invariant
//! (Girolami & Calderhead 2011; Ma, Chen & Fox 2015). For `M = δ ⊗ WᵀW` it is
//! `Γ = (D + 1) W`. Eq. 16 omits it, which biases the samples by `O(D/N)`; by default
//! [`Ica::sgld_step`] adds `½ε Γ`, and [`Ica::paper_drift`] gives eq. 16 exactly. (The
//! corrected-Langevin sampler is exact either way: its accept/reject step uses the
//! proposal density.)
//!
//! Corrected Langevin (eq. 17–19): the same proposal with the full-data gradient and a
//! constant step, accepted with the Metropolis–Hastings rule, where
//! `log q(W → W*) = −tr[(δW − ½εD)(WᵀW)⁻¹(δW − ½εD)ᵀ]/(2ε) − (D/2) log det(WᵀW) + c`.
//!
//! Matrices are `D × D`, row-major, in f64 (caller buffers); the data are f32 rows. The
//! gradient's pass over the data runs at the data's precision: `y = W x`, `tanh(y/2)`
//! and `Σ tanh(y/2) yᵀ` in f32, the last in sixteen lanes of at most eight products each
//! (chunks of 128 rows), whose totals are added in f64: each entry of the sum is within
//! about `12·2⁻²⁴` of `Σ|tanh(yᵢ/2)·yₖ|` of the sum of its rows' rounded `y`, a
//! rounding of the size `y` itself carries from f32. The prior's `λ W Wᵀ` is summed
//! with it, the columns of `W` as `d` more rows (so the bound adds `λ(n/N)·Σₘ|WᵢₘWₖₘ|`).

use rand_core::Rng;

use crate::error::{Error, check_len};
use crate::kernels::imp;
use crate::linalg::sym_eigen;
use crate::noise::fill_normal;

/// The ICA model over `N` data rows of `D` channels.
#[derive(Debug, Clone, Copy)]
pub struct Ica<'a> {
    x: &'a [f32],
    d: usize,
    lambda: f64,
    drift_correction: bool,
}

/// What a corrected-Langevin step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MalaInfo {
    /// Whether the proposal was accepted.
    pub accepted: bool,
    /// `log [p(W*) q(W*→W) / p(W) q(W→W*)]`.
    pub log_ratio: f64,
}

/// The largest dimension `D` the model takes.
const MAX_DIM: usize = 64;

/// Batch rows per chunk of the gradient's data sum.
const CHUNK_ROWS: usize = 128;

/// The rows a data sum runs over: a mini-batch's indices, or every row in order.
#[derive(Debug, Clone, Copy)]
enum Rows<'a> {
    /// Indices not known to be rows of the data: one out of range counts in the batch
    /// and adds nothing to the sum. (The public functions check their batches and pass
    /// them as `Checked`; the tests show what the sum does with such rows.)
    #[cfg_attr(not(test), allow(dead_code))]
    Batch(&'a [usize]),
    /// Indices every one of which is a row of the data (checked by the caller), so the
    /// sum need not look for the largest again.
    Checked(&'a [usize]),
    All(usize),
}

impl Rows<'_> {
    fn len(&self) -> usize {
        match *self {
            Rows::Batch(b) | Rows::Checked(b) => b.len(),
            Rows::All(n) => n,
        }
    }

    /// Whether rows `at..at + n` are all below `len`: for a batch, its largest read from
    /// the source rather than from a copy just written, which would wait on the copy's
    /// stores.
    fn below(&self, at: usize, n: usize, len: usize) -> bool {
        match *self {
            Rows::Batch(b) => b[at..at + n].iter().fold(0, |m, &r| m.max(r)) < len,
            Rows::Checked(_) => true,
            Rows::All(_) => at + n <= len,
        }
    }

    /// Rows `at..at + out.len()` times `scale` into `out` (wrapping; a vectorised pass).
    /// When the rows and `scale` are below 2³² (`narrow`), by 32 × 32 → 64-bit
    /// multiplies (one instruction for four on x86, where a 64-bit one takes three).
    fn fill_scaled(&self, at: usize, out: &mut [usize], scale: usize, narrow: bool) {
        match *self {
            Rows::Batch(b) | Rows::Checked(b) if narrow => {
                let scale = u64::from(scale as u32);
                for (o, &r) in out.iter_mut().zip(&b[at..]) {
                    *o = (u64::from(r as u32) * scale) as usize;
                }
            }
            Rows::Batch(b) | Rows::Checked(b) => {
                for (o, &r) in out.iter_mut().zip(&b[at..]) {
                    *o = r.wrapping_mul(scale);
                }
            }
            Rows::All(_) => {
                for (k, o) in out.iter_mut().enumerate() {
                    *o = (at + k).wrapping_mul(scale);
                }
            }
        }
    }
}

/// `out = a · b` for `d × d` matrices (the register-blocked kernel: `d` is only known at
/// run time, and a plain loop over rows this short would not be vectorised).
fn matmul(a: &[f64], b: &[f64], out: &mut [f64], d: usize) {
    imp::gemm_f64(a, b, out, d, d, d);
}

/// `eta[i] = √ε·zᵢ` with `zᵢ` standard normals: the entries of eq. 16's `η`.
fn fill_eta<R: Rng + ?Sized>(eps: f64, rng: &mut R, eta: &mut [f64]) {
    // One fill for D ≤ 16 (a short fill is bound by latency, so fewer is faster), into
    // a buffer on cache lines of its own, so the conversion right after takes the
    // fill's values straight from its stores.
    let mut lines = crate::rng::CacheLines([0.0f32; 256]);
    let z = &mut lines.0;
    let se = libm::sqrt(eps);
    for chunk in eta.chunks_mut(z.len()) {
        let zc = &mut z[..chunk.len()];
        fill_normal(rng, zc);
        for (e, &v) in chunk.iter_mut().zip(zc.iter()) {
            *e = se * v as f64;
        }
    }
}

/// True when no value is NaN or ±∞ (an exponent field not all ones), as one OR over
/// all values (which the compiler vectorises), not a search that stops at the first.
fn all_finite_f64(xs: &[f64]) -> bool {
    !xs.iter().fold(false, |bad, &v| bad | !v.is_finite())
}

/// The columns `wₘ` of `W` as rows of the channel-major buffers (stride `sp`), from
/// their start: `y[k·sp + m] = W[k][m]` and `t[k·sp + m] = c·W[k][m]`, in f32. Row `k`
/// of `W` is channel `k` of them all, so each is one contiguous run (with `d` a
/// constant for the widths the projection keeps in registers, fixed-size moves).
fn prior_rows(w: &[f64], c: f64, d: usize, y: &mut [f32], t: &mut [f32], sp: usize) {
    crate::kernels::simd::in_registers!(d, prior_rows_n(w, c, y, t, sp), else {
        for (k, wk) in w[..d * d].chunks_exact(d).enumerate() {
            let (yk, tk) = (&mut y[k * sp..][..d], &mut t[k * sp..][..d]);
            for ((y, t), &v) in yk.iter_mut().zip(tk.iter_mut()).zip(wk) {
                *y = v as f32;
                *t = (c * v) as f32;
            }
        }
    });
}

/// [`prior_rows`] for `D × D`.
fn prior_rows_n<const D: usize>(w: &[f64], c: f64, y: &mut [f32], t: &mut [f32], sp: usize) {
    let (w, _) = w[..D * D].as_chunks::<D>();
    for (k, wk) in w.iter().enumerate() {
        *y[k * sp..].first_chunk_mut::<D>().expect("stride ≥ D") = wk.map(|v| v as f32);
        *t[k * sp..].first_chunk_mut::<D>().expect("stride ≥ D") = wk.map(|v| (c * v) as f32);
    }
}

/// `out = aᵀ` for a `d × d` matrix.
fn transpose(a: &[f64], out: &mut [f64], d: usize) {
    let (a, out) = (&a[..d * d], &mut out[..d * d]);
    for (i, row) in a.chunks_exact(d).enumerate() {
        for (o, &v) in out[i..].iter_mut().step_by(d).zip(row) {
            *o = v;
        }
    }
}

/// `log(cosh(a))` without overflow.
fn log_cosh(a: f64) -> f64 {
    let b = a.abs();
    b + libm::log1p(libm::exp(-2.0 * b)) - core::f64::consts::LN_2
}

/// `log |det A|` by LU with partial pivoting (destroys `a`); `−∞` for a singular matrix.
fn log_abs_det(a: &mut [f64], d: usize) -> f64 {
    let mut s = 0.0;
    for c in 0..d {
        let p = (c..d)
            .max_by(|&i, &j| a[i * d + c].abs().total_cmp(&a[j * d + c].abs()))
            .unwrap_or(c);
        if a[p * d + c] == 0.0 {
            return f64::NEG_INFINITY;
        }
        if p != c {
            for k in 0..d {
                a.swap(c * d + k, p * d + k);
            }
        }
        let piv = a[c * d + c];
        s += libm::log(piv.abs());
        for r in c + 1..d {
            let f = a[r * d + c] / piv;
            for k in c..d {
                a[r * d + k] -= f * a[c * d + k];
            }
        }
    }
    s
}

impl<'a> Ica<'a> {
    /// The model on `x` (`N × d` row-major, finite, `N ≥ 1`, `1 ≤ d ≤ 64`) with prior
    /// precision `λ > 0`.
    pub fn new(x: &'a [f32], d: usize, lambda: f64) -> Result<Self, Error> {
        if d == 0 || d > MAX_DIM {
            return Err(Error::InvalidParameter {
                what: "ICA dimension must be between 1 and 64",
            });
        }
        if x.is_empty() {
            return Err(Error::Empty { what: "data set" });
        }
        crate::models::check_matrix("x", x, x.len() / d, d)?;
        crate::error::check_positive("ICA prior precision must be finite and > 0", lambda)?;
        Ok(Self {
            x,
            d,
            lambda,
            drift_correction: true,
        })
    }

    /// The same model whose SGLD step follows eq. 16 literally, without the drift
    /// correction `½ε(D + 1)W` (see the module docs).
    pub fn paper_drift(self) -> Self {
        Self {
            drift_correction: false,
            ..self
        }
    }

    /// Channels `D`.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// Data rows `N`.
    pub fn len(&self) -> usize {
        self.x.len() / self.d
    }

    /// Never true for a model built by [`Ica::new`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// f64 scratch words the functions of this module need for dimension `d`.
    pub const fn scratch_len(d: usize) -> usize {
        Self::work_len(d) + 3 * d * d + 3
    }

    /// The words every function may overwrite; [`mala_step`](Self::mala_step) keeps a
    /// cache of the current state's gradient, inverse Gram matrix and densities after them.
    const fn work_len(d: usize) -> usize {
        10 * d * d + 3 * d * CHUNK_ROWS
    }

    fn check(&self, w: &[f64], scratch: &[f64]) -> Result<(), Error> {
        self.check_lengths(w, scratch)?;
        if !all_finite_f64(w) {
            return Err(Error::NonFinite { what: "W" });
        }
        Ok(())
    }

    /// [`check`](Self::check) but for W's finiteness (which the SGLD step checks as
    /// [`drift_parts`](Self::drift_parts) reads W).
    fn check_lengths(&self, w: &[f64], scratch: &[f64]) -> Result<(), Error> {
        check_len("W", self.d * self.d, w.len())?;
        if scratch.len() < Self::scratch_len(self.d) {
            return Err(Error::LengthMismatch {
                what: "ICA scratch",
                expected: Self::scratch_len(self.d),
                found: scratch.len(),
            });
        }
        Ok(())
    }

    /// The full-data log density `log p(X, W)` up to a constant:
    /// `N log|det W| − Σₙ Σᵢ 2 log cosh(yₙᵢ/2) − (λ/2) Σ W²`.
    pub fn log_density(&self, w: &[f64], scratch: &mut [f64]) -> Result<f64, Error> {
        self.check(w, scratch)?;
        Ok(self.log_density_unchecked(w, scratch))
    }

    fn log_density_unchecked(&self, w: &[f64], scratch: &mut [f64]) -> f64 {
        let d = self.d;
        let lu = &mut scratch[..d * d];
        lu.copy_from_slice(w);
        let mut s = self.len() as f64 * log_abs_det(lu, d);
        for row in self.x.chunks_exact(d) {
            for i in 0..d {
                let y: f64 = (0..d).map(|k| w[i * d + k] * row[k] as f64).sum();
                s -= 2.0 * log_cosh(0.5 * y);
            }
        }
        s - 0.5 * self.lambda * w.iter().map(|v| v * v).sum::<f64>()
    }

    /// The natural gradient `D_W` of eq. 15 from the rows in `batch` (scaled by N/n),
    /// written into `out` (`d × d`).
    pub fn natural_gradient(
        &self,
        w: &[f64],
        batch: &[usize],
        out: &mut [f64],
        scratch: &mut [f64],
    ) -> Result<(), Error> {
        self.check(w, scratch)?;
        check_len("D_W", self.d * self.d, out.len())?;
        crate::gradient::check_batch(batch, self.len())?;
        self.natural_gradient_unchecked(w, batch, out, scratch);
        Ok(())
    }

    fn natural_gradient_unchecked(
        &self,
        w: &[f64],
        batch: &[usize],
        out: &mut [f64],
        scratch: &mut [f64],
    ) {
        self.gradient_over(w, Rows::Checked(batch), out, scratch);
    }

    /// `D_W` with the data sum over the `n` rows of `rows` scaled by `N/n`.
    fn gradient_over(&self, w: &[f64], rows: Rows<'_>, out: &mut [f64], scratch: &mut [f64]) {
        self.drift_matrix(w, rows, scratch);
        matmul(&scratch[..self.d * self.d], w, out, self.d);
    }

    /// The matrix `M = A − λ W Wᵀ` (into the first `d²` scratch words) whose product
    /// with `W` is `D_W = (A − λ W Wᵀ) W`, eq. 15, with `A = N·I − (N/n) Σ tanh(y/2) yᵀ`
    /// over the `n` rows of `rows` (a row out of range counts in `n` but is skipped).
    fn drift_matrix(&self, w: &[f64], rows: Rows<'_>, scratch: &mut [f64]) {
        let fused = crate::kernels::simd::PROJECT_IN_REGISTERS.contains(&self.d);
        self.drift_matrix_by(w, rows, scratch, fused);
    }

    /// [`drift_matrix`](Self::drift_matrix) from [`drift_parts`](Self::drift_parts).
    fn drift_matrix_by(&self, w: &[f64], rows: Rows<'_>, scratch: &mut [f64], fused: bool) {
        let d = self.d;
        let scale = self.drift_parts(w, rows, scratch, fused);
        let a = &mut scratch[..d * d];
        for aij in a.iter_mut() {
            *aij *= -scale;
        }
        let nn = self.len() as f64;
        for i in 0..d {
            a[i * d + i] += nn;
        }
    }

    /// The sum of [`drift_matrix`](Self::drift_matrix) that `−N/n` scales:
    /// `Σ tanh(y/2) yᵀ + (λn/N) W Wᵀ` over the rows of `rows`, into the first `d²`
    /// scratch words; returns the scale `N/n`.
    ///
    /// `y = W·x` is computed by
    /// [`project_batch_tanh_f32`](crate::kernels::simd::project_batch_tanh_f32) straight
    /// from the rows (`fused`, for the widths it keeps in registers) or by the rows
    /// turned into columns and one product: the same numbers either way with the SIMD
    /// kernels (the same chains of fused multiply-adds). The prior's `W Wᵀ = Σₘ wₘ wₘᵀ`
    /// over the columns `wₘ` of `W` is the same kind of sum: the columns join the last
    /// chunk as `d` more rows, with `tanh(y/2)` replaced by `(λn/N) wₘ` and `y` by `wₘ`
    /// (or form a chunk of their own when it is full), so its products share the data
    /// sum's vectors.
    ///
    /// NaN, with nothing else done, when `W` is not finite.
    fn drift_parts(&self, w: &[f64], rows: Rows<'_>, scratch: &mut [f64], fused: bool) -> f64 {
        let count = rows.len();
        let d = self.d;
        let (a, rest) = scratch.split_at_mut(d * d);
        let (sums, rest) = rest.split_at_mut(d * d);
        // The data path runs in f32 (the data's precision), its totals in f64: W as f32,
        // and the rows of a chunk of `s` rows transposed (channel-major, stride `sp`: the
        // chunk's rows and the prior's, rounded up to eight), so every pass below runs
        // along the rows and covers the whole chunk in one call: xt[k·sp + j] = x_{n_j,k},
        // yt = W·xt, tt = tanh(yt/2).
        // The batch rows' offsets in words of their own (a local array would be zeroed
        // on every call).
        let (starts, rest) = rest.split_at_mut(CHUNK_ROWS);
        let starts = wide::bytemuck::cast_slice_mut::<f64, usize>(starts);
        let f = wide::bytemuck::cast_slice_mut::<f64, f32>(rest);
        let (w32, f) = f.split_at_mut(d * d);
        let (xt, f) = f.split_at_mut(d * CHUNK_ROWS);
        let yt = &mut f[..d * CHUNK_ROWS];
        // W's finiteness, checked as it is read (one OR over all values): a W that is
        // not finite gets no further and makes the result NaN.
        let mut bad = false;
        for (o, &v) in w32.iter_mut().zip(w) {
            *o = v as f32;
            bad |= !v.is_finite();
        }
        if bad {
            return f64::NAN;
        }
        // The prior's rows: y = wₘ (as f32) and in tanh's place c·wₘ, with c = λn/N so
        // that −(N/n)·c·W Wᵀ = −λ W Wᵀ.
        let c = self.lambda * count.max(1) as f64 / self.len() as f64;
        // Every row's offset below 2³²: offsets in range take 32-bit multiplies.
        let narrow = u32::try_from(self.x.len()).is_ok();
        // Σ into `a`: the first chunk writes it, later ones add to it.
        let mut summed = false;
        let mut at = 0;
        loop {
            let s = (count - at).min(CHUNK_ROWS);
            let prior = at + s == count && s + d <= CHUNK_ROWS;
            let extra = if prior { d } else { 0 };
            // The channel-major buffers' stride: whole groups of eight rows, as
            // `project_batch_tanh_f32` writes y a group at a time.
            let sp = (s + extra).next_multiple_of(8);
            let (xc, yt) = (&mut xt[..d * sp], &mut yt[..d * sp]);
            // m rows of the s planned: a row past the end of the data is skipped.
            let len = self.len();
            let found = if rows.below(at, s, len) {
                // Every row in range (a checked batch, the whole data set): the offsets
                // in one pass the compiler vectorises, in 32-bit multiplies when the
                // data's offsets fit in 32 bits.
                rows.fill_scaled(at, &mut starts[..s], d, narrow);
                s
            } else {
                rows.fill_scaled(at, &mut starts[..s], 1, false);
                let mut found = 0;
                for j in 0..s {
                    let n = starts[j];
                    starts[found] = n.wrapping_mul(d);
                    found += usize::from(n < len);
                }
                found
            };
            at += s;
            if found == 0 && !prior {
                continue;
            }
            // tanh(y/2) goes into the transposed rows' buffer, free once y is computed
            // (a chunk of the prior's rows alone has no data rows).
            if found > 0 && fused {
                // y = W·x sixteen rows at a time, straight from the rows (transposed in
                // registers), and tanh(y/2) of each group while its sums are in
                // registers; the slots past the last row are zero (y = 0, tanh 0: they
                // add nothing).
                imp::project_batch_tanh_f32(w32, d, self.x, &starts[..found], yt, xc, sp);
            } else if found > 0 {
                // The rows as columns, eight at a time (a transpose in registers), the
                // last few one element at a time, then y = W·x as one product.
                let mut m = 0;
                let mut groups = starts[..found].chunks_exact(8);
                for g in &mut groups {
                    let eight: [&[f32]; 8] = core::array::from_fn(|q| &self.x[g[q]..g[q] + d]);
                    imp::columns_f32(&eight, &mut xc[m..], sp);
                    m += 8;
                }
                for &at in groups.remainder() {
                    for (k, &v) in self.x[at..at + d].iter().enumerate() {
                        xc[k * sp + m] = v;
                    }
                    m += 1;
                }
                for k in 0..d {
                    // Skipped rows leave zeros (y = 0, tanh 0: they add nothing).
                    xc[k * sp + m..(k + 1) * sp].fill(0.0);
                }
                imp::gemm_f32(w32, xc, yt, d, d, sp);
                imp::tanh_half_f32(yt, xc);
            }
            let tt = xc;
            if prior {
                prior_rows(w, c, d, &mut yt[found..], &mut tt[found..], sp);
            }
            // Σ tanh(y/2) yᵀ over the chunk: TT·YTᵀ (d × d) in sixteen f32 lanes of at
            // most eight products each, their totals summed in f64. Over the whole
            // stride, whose slots past the rows are zeros (they add nothing, and the
            // last vector needs no mask), but for the prior's rows alone, which are
            // all that was written.
            let n = if found == 0 { extra } else { sp };
            if summed {
                imp::dots_rows_f32_lanes(tt, yt, sp, n, sums, d);
                for (aij, v) in a.iter_mut().zip(sums.iter()) {
                    *aij += v;
                }
            } else {
                imp::dots_rows_f32_lanes(tt, yt, sp, n, a, d);
                summed = true;
            }
            if prior {
                break;
            }
        }
        self.len() as f64 / count.max(1) as f64
    }

    /// From the eigendecomposition of `WᵀW`: `√(WᵀW)` into `root` and `(WᵀW)⁻¹` into
    /// `inv` (each when given), and `log det(WᵀW)` returned (uses the first `3d²`
    /// scratch words).
    fn gram_eigen(
        &self,
        w: &[f64],
        mut root: Option<&mut [f64]>,
        mut inv: Option<&mut [f64]>,
        scratch: &mut [f64],
    ) -> f64 {
        let d = self.d;
        let (c, rest) = scratch.split_at_mut(d * d);
        let (u, rest) = rest.split_at_mut(d * d);
        let wt = &mut rest[..d * d];
        transpose(w, wt, d);
        matmul(wt, w, c, d);
        // Cannot fail: lengths are d² and W (hence WᵀW) is finite.
        let _ = sym_eigen(c, d, Some(u));
        let mut logdet = 0.0;
        for k in 0..d {
            logdet += libm::log(c[k * d + k]);
        }
        // The eigenvalues (negative rounding clamped to 0) and their square roots.
        let (mut lam, mut sq) = ([0.0f64; MAX_DIM], [0.0f64; MAX_DIM]);
        for k in 0..d {
            lam[k] = c[k * d + k].max(0.0);
            sq[k] = libm::sqrt(lam[k]);
        }
        for i in 0..d {
            for j in 0..d {
                let (ui, uj) = (&u[i * d..(i + 1) * d], &u[j * d..(j + 1) * d]);
                if let Some(root) = root.as_deref_mut() {
                    root[i * d + j] = (0..d)
                        .map(|k| ui[k] * sq[k] * uj[k])
                        .fold(0.0, |s, v| s + v);
                }
                if let Some(inv) = inv.as_deref_mut() {
                    inv[i * d + j] = (0..d)
                        .map(|k| ui[k] * uj[k] / lam[k])
                        .fold(0.0, |s, v| s + v);
                }
            }
        }
        logdet
    }

    /// Draws noise whose rows are independent `N(0, ε WᵀW)` into `out`: `η W` with
    /// `ηᵢⱼ ~ N(0, ε)`. This is the distribution of eq. 16's `η √(WᵀW)`: a row `ηᵢR` has
    /// covariance `ε RᵀR` for any `R` with `RᵀR = WᵀW`, and `W` itself is one, so no
    /// factorisation of `WᵀW` is needed (and none can fail for a singular `W`).
    fn noise<R: Rng + ?Sized>(
        &self,
        w: &[f64],
        eps: f64,
        rng: &mut R,
        out: &mut [f64],
        scratch: &mut [f64],
    ) {
        let d = self.d;
        let eta = &mut scratch[..d * d];
        fill_eta(eps, rng, eta);
        matmul(eta, w, out, d);
    }

    /// One SGLD step of eq. 16 on a mini-batch: `W ← W + ½ε (D_W + Γ) + η √(WᵀW)`, with
    /// the drift correction `Γ = (D + 1)W` unless the model was built with
    /// [`paper_drift`](Self::paper_drift).
    /// A step whose result is not finite is refused (W kept) and reported `Ok(false)`.
    pub fn sgld_step<R: Rng + ?Sized>(
        &self,
        w: &mut [f64],
        batch: &[usize],
        eps: f64,
        rng: &mut R,
        scratch: &mut [f64],
    ) -> Result<bool, Error> {
        crate::error::check_step_size(eps)?;
        self.check_lengths(w, scratch)?;
        crate::gradient::check_batch(batch, self.len())?;
        let d = self.d;
        let (b, rest) = scratch.split_at_mut(d * d);
        let (tmp, rest) = rest.split_at_mut(d * d);
        // W + ½ε (D_W + Γ) + η W = W + B W with B = ½ε (M + γI) + η, D_W = M W and
        // Γ = γW: one d × d product instead of two. W's finiteness is checked as the
        // drift reads it, before any noise is drawn.
        let fused = crate::kernels::simd::PROJECT_IN_REGISTERS.contains(&d);
        let scale = self.drift_parts(w, Rows::Checked(batch), rest, fused);
        if scale.is_nan() {
            return Err(Error::NonFinite { what: "W" });
        }
        fill_eta(eps, rng, b);
        let gamma = if self.drift_correction {
            (d + 1) as f64
        } else {
            0.0
        };
        // B += ½ε·(−(N/n))·S with S the data sum and the prior's term, in one pass, then
        // ½ε (N + γ) on the diagonal: ½ε M as drift_matrix would write it.
        let h = 0.5 * eps;
        let hs = -h * scale;
        for (bij, &sv) in b.iter_mut().zip(&rest[..d * d]) {
            *bij += hs * sv;
        }
        // With I added as well, the new W is one product, (I + B) W, which replaces W
        // only when all of it is finite.
        let diag = 1.0 + h * (self.len() as f64 + gamma);
        for i in 0..d {
            b[i * d + i] += diag;
        }
        Ok(imp::mul_left_checked_f64(b, w, tmp, d, d))
    }

    /// `log q(from → to)` of the proposal of eq. 17 up to constants shared by both
    /// directions, given `D_W(from)` and `(WᵀW)⁻¹` and `log det(WᵀW)` at `from`.
    fn log_q(
        &self,
        from: &[f64],
        to: &[f64],
        dw: &[f64],
        inv: &[f64],
        logdet: f64,
        eps: f64,
    ) -> f64 {
        let d = self.d;
        let mut quad = 0.0;
        for i in 0..d {
            for j in 0..d {
                let rj = to[i * d + j] - from[i * d + j] - 0.5 * eps * dw[i * d + j];
                for k in 0..d {
                    let rk = to[i * d + k] - from[i * d + k] - 0.5 * eps * dw[i * d + k];
                    quad += rj * inv[j * d + k] * rk;
                }
            }
        }
        -quad / (2.0 * eps) - 0.5 * d as f64 * logdet
    }

    /// One corrected-Langevin (MALA) step with the full-data gradient and step `eps`
    /// (eq. 17–19). `proposal` (`d × d`) receives the proposed `W*`. Consecutive calls
    /// with the same `scratch` reuse the current state's gradient and density (kept at
    /// the end of `scratch`), so a step costs one full-data pass instead of two.
    pub fn mala_step<R: Rng + ?Sized>(
        &self,
        w: &mut [f64],
        eps: f64,
        rng: &mut R,
        proposal: &mut [f64],
        scratch: &mut [f64],
    ) -> Result<MalaInfo, Error> {
        crate::error::check_step_size(eps)?;
        self.check(w, scratch)?;
        check_len("proposal", self.d * self.d, proposal.len())?;
        let d = self.d;
        let dd = d * d;
        let (work, cache) = scratch.split_at_mut(Self::work_len(d));
        let (cw, cache) = cache.split_at_mut(dd);
        let (cdw, cache) = cache.split_at_mut(dd);
        let (cinv, cache) = cache.split_at_mut(dd);
        let meta = &mut cache[..3];
        let (dw, rest) = work.split_at_mut(dd);
        let (dws, rest) = rest.split_at_mut(dd);
        let (inv, rest) = rest.split_at_mut(dd);
        let (invs, rest) = rest.split_at_mut(dd);
        // The current state's quantities: from the cache when it holds this W (the
        // previous step's result), else computed.
        let hit = meta[2] == 1.0 && cw == w;
        let (logdet, lp) = if hit {
            dw.copy_from_slice(cdw);
            inv.copy_from_slice(cinv);
            (meta[0], meta[1])
        } else {
            self.full_gradient(w, dw, rest);
            let logdet = self.gram_eigen(w, None, Some(inv), rest);
            (logdet, self.log_density_unchecked(w, rest))
        };
        self.noise(w, eps, rng, proposal, rest);
        for ((p, v), g) in proposal.iter_mut().zip(w.iter()).zip(dw.iter()) {
            *p += v + 0.5 * eps * g;
        }
        let store = |cw: &mut [f64],
                     cdw: &mut [f64],
                     cinv: &mut [f64],
                     meta: &mut [f64],
                     w: &[f64],
                     g: &[f64],
                     i: &[f64],
                     ld: f64,
                     lp: f64| {
            cw.copy_from_slice(w);
            cdw.copy_from_slice(g);
            cinv.copy_from_slice(i);
            meta.copy_from_slice(&[ld, lp, 1.0]);
        };
        if !proposal.iter().all(|v| v.is_finite()) {
            store(cw, cdw, cinv, meta, w, dw, inv, logdet, lp);
            return Ok(MalaInfo {
                accepted: false,
                log_ratio: f64::NEG_INFINITY,
            });
        }
        self.full_gradient(proposal, dws, rest);
        let logdet_s = self.gram_eigen(proposal, None, Some(invs), rest);
        let lps = self.log_density_unchecked(proposal, rest);
        let log_ratio = lps - lp + self.log_q(proposal, w, dws, invs, logdet_s, eps)
            - self.log_q(w, proposal, dw, inv, logdet, eps);
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let accepted = log_ratio.is_finite() && libm::log(u.max(f64::MIN_POSITIVE)) < log_ratio;
        if accepted {
            w.copy_from_slice(proposal);
            store(cw, cdw, cinv, meta, proposal, dws, invs, logdet_s, lps);
        } else {
            store(cw, cdw, cinv, meta, w, dw, inv, logdet, lp);
        }
        Ok(MalaInfo {
            accepted,
            log_ratio,
        })
    }

    /// The sampling threshold of eq. 10 for ICA, with the scores of eq. 20:
    /// `sₙ = (∇log p(W)/N + ∇log p(xₙ|W)) (WᵀW)^½` over the rows in `batch` (`n ≥ 2`),
    /// `α = ε N²/(4n) λ_max(cov sₙ)`. `scores` holds `n·d²` f32 and `tscratch`
    /// [`threshold_scratch_len`](crate::estimate::threshold_scratch_len)`(n, d²)` words.
    #[allow(clippy::too_many_arguments)]
    pub fn threshold(
        &self,
        w: &[f64],
        batch: &[usize],
        eps: f64,
        scores: &mut [f32],
        scratch: &mut [f64],
        tscratch: &mut [f64],
    ) -> Result<crate::estimate::Threshold, Error> {
        self.check(w, scratch)?;
        crate::gradient::check_batch(batch, self.len())?;
        let d = self.d;
        let dd = d * d;
        check_len("scores", batch.len() * dd, scores.len())?;
        let (r, rest) = scratch.split_at_mut(dd);
        let (inv, rest) = rest.split_at_mut(dd);
        let (wit, rest) = rest.split_at_mut(dd);
        let (g, rest) = rest.split_at_mut(dd);
        self.gram_eigen(w, Some(r), Some(inv), rest);
        // W⁻ᵀ = W (WᵀW)⁻¹
        matmul(w, inv, wit, d);
        let nn = self.len() as f64;
        for (row_out, &n) in scores.chunks_exact_mut(dd).zip(batch) {
            let x = &self.x[n * d..(n + 1) * d];
            // ∇ log p(xₙ|W) + ∇ log p(W)/N = W⁻ᵀ − tanh(y/2) xᵀ − (λ/N) W
            for i in 0..d {
                let y: f64 = (0..d).map(|k| w[i * d + k] * x[k] as f64).sum();
                let t = libm::tanh(0.5 * y);
                for j in 0..d {
                    g[i * d + j] =
                        wit[i * d + j] - t * x[j] as f64 - self.lambda / nn * w[i * d + j];
                }
            }
            for i in 0..d {
                for j in 0..d {
                    row_out[i * d + j] =
                        (0..d).map(|k| g[i * d + k] * r[k * d + j]).sum::<f64>() as f32;
                }
            }
        }
        crate::estimate::sampling_threshold(
            scores,
            batch.len(),
            dd,
            eps,
            self.len(),
            None,
            tscratch,
        )
    }

    /// `D_W` over every row: one pass over the data.
    fn full_gradient(&self, w: &[f64], out: &mut [f64], scratch: &mut [f64]) {
        self.gradient_over(w, Rows::All(self.len()), out, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_moves_every_entry_at_every_width() {
        for d in 1..=20 {
            let a: [f64; 400] = core::array::from_fn(|i| i as f64);
            let mut out = [f64::NAN; 400];
            transpose(&a, &mut out, d);
            for i in 0..d {
                for k in 0..d {
                    assert_eq!(out[k * d + i], a[i * d + k], "d = {d}, ({i}, {k})");
                }
            }
            assert!(
                out[d * d..].iter().all(|v| v.is_nan()),
                "d = {d}: wrote past d²"
            );
        }
    }

    /// A row past the end of the data is skipped: it counts in `n` but adds nothing,
    /// like an all-zero row (y = 0, tanh 0), in either chunk of a batch of two chunks.
    #[test]
    fn rows_out_of_range_are_skipped() {
        let d = 3;
        let mut x: [f32; 3 * 50] = core::array::from_fn(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0);
        x[3 * 49..].fill(0.0);
        let ica = Ica::new(&x, d, 0.5).unwrap();
        let w: [f64; 9] = [1.0, 0.2, -0.1, 0.3, 0.9, 0.05, -0.2, 0.1, 1.1];
        let mut batch: [usize; 200] = core::array::from_fn(|j| j * 7 % 49);
        let mut scratch = [0.0; Ica::scratch_len(3)];
        // The rows after a skipped one move to other lanes of the f32 sums, so the two
        // agree within twice the lanes' rounding: (k + 4)·2⁻²⁴ of (N/n)·Σ|tanh(y/2)·y|
        // + λ·Σₘ|W·W| (the prior's products share the lanes) for each entry, with k = 8
        // products a lane (chunks of 128 rows).
        let scale = 50.0 / batch.len() as f64;
        let mut abs: [f64; 9] = core::array::from_fn(|e| {
            let (i, k) = (e / 3, e % 3);
            (0..3)
                .map(|m| 0.5 * (w[i * 3 + m] * w[k * 3 + m]).abs())
                .sum()
        });
        for &j in &batch[..] {
            let y: [f64; 3] = core::array::from_fn(|i| {
                (0..3).map(|k| w[i * 3 + k] * f64::from(x[j * 3 + k])).sum()
            });
            for (e, a) in abs.iter_mut().enumerate() {
                *a += scale * (libm::tanh(y[e / 3] / 2.0) * y[e % 3]).abs();
            }
        }
        let u = f64::from(f32::EPSILON) / 2.0;
        for bad in [5, 150] {
            batch[bad] = 49;
            ica.drift_matrix(&w, Rows::Batch(&batch), &mut scratch);
            let zero_row: [f64; 9] = scratch[..9].try_into().unwrap();
            batch[bad] = 50 + bad;
            ica.drift_matrix(&w, Rows::Batch(&batch), &mut scratch);
            for ((s, z), a) in scratch[..9].iter().zip(&zero_row).zip(&abs) {
                let tol = 2.0 * 12.0 * u * a + 1e-12 * z.abs().max(1.0);
                assert!((s - z).abs() <= tol, "{s} vs {z} (tolerance {tol})");
            }
        }
    }

    /// Data rows of a fixed pattern (any width takes a prefix of them).
    fn pattern_rows<const L: usize>() -> [f32; L] {
        core::array::from_fn(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0)
    }

    /// Entry `i` of a `d × d` matrix near the identity.
    fn near_identity(i: usize, d: usize) -> f64 {
        f64::from(u8::from(i.is_multiple_of(d + 1))) + ((i * 13 % 7) as f64 - 3.0) / 40.0
    }

    #[test]
    fn prior_rows_join_the_last_chunk_or_make_their_own() {
        // d = 10: 118 rows leave room for the prior's ten in their chunk, 119 and 128
        // do not (a chunk of their own), 256 is two full chunks, 300 ends in a short
        // one. Against M = N·I − (N/n) Σ tanh(y/2) yᵀ − λ W Wᵀ in f64, within the f32
        // path's rounding: y's (a relative 10⁻⁶ for ten channels) and the lanes'.
        const N: usize = 300;
        const D: usize = 10;
        let xs: [f32; N * D] = pattern_rows();
        let lambda = 0.7;
        let ica = Ica::new(&xs, D, lambda).unwrap();
        let w: [f64; D * D] = core::array::from_fn(|i| near_identity(i, D));
        let mut scratch = [0.0; Ica::scratch_len(D)];
        for n in [118, 119, 128, 256, 300] {
            let batch: [usize; N] = core::array::from_fn(|j| j * 7 % N);
            let batch = &batch[..n];
            for fused in [true, false] {
                ica.drift_matrix_by(&w, Rows::Batch(batch), &mut scratch, fused);
                let (mut want, mut abs) = ([0.0f64; D * D], [0.0f64; D * D]);
                let scale = N as f64 / n as f64;
                for &j in batch {
                    let y: [f64; D] = core::array::from_fn(|i| {
                        (0..D)
                            .map(|k| w[i * D + k] * f64::from(xs[j * D + k]))
                            .sum()
                    });
                    for (e, (m, a)) in want.iter_mut().zip(abs.iter_mut()).enumerate() {
                        let p = libm::tanh(y[e / D] / 2.0) * y[e % D];
                        *m -= scale * p;
                        *a += scale * p.abs();
                    }
                }
                for (e, (m, a)) in want.iter_mut().zip(abs.iter_mut()).enumerate() {
                    let (i, k) = (e / D, e % D);
                    let wwt: f64 = (0..D).map(|m| w[i * D + m] * w[k * D + m]).sum();
                    *m += if i == k { N as f64 } else { 0.0 } - lambda * wwt;
                    *a += lambda * wwt.abs();
                }
                for (e, (got, (m, a))) in scratch.iter().zip(want.iter().zip(&abs)).enumerate() {
                    assert!(
                        (got - m).abs() <= 1e-5 * a,
                        "n {n}, fused {fused}, entry {e}: {got} vs {m} (scale {a})"
                    );
                }
            }
        }
    }

    #[test]
    fn y_by_rows_in_registers_gives_the_same_numbers_as_by_columns() {
        // Every width the fused path takes, batches of whole and partial groups of
        // eight, more than one chunk, and rows out of range (skipped): bit for bit.
        const N: usize = 300;
        const MAX: usize = 16;
        let xs: [f32; N * MAX] = pattern_rows();
        let mut fused = [0.0; Ica::scratch_len(MAX)];
        let mut columns = [0.0; Ica::scratch_len(MAX)];
        for d in 8..=MAX {
            let ica = Ica::new(&xs[..N * d], d, 0.5).unwrap();
            let mut wm = [0.0f64; MAX * MAX];
            for (i, v) in wm[..d * d].iter_mut().enumerate() {
                *v = near_identity(i, d);
            }
            let w = &wm[..d * d];
            for size in [1, 7, 8, 37, 100, 130, 300] {
                let mut bm = [0usize; N];
                for (j, b) in bm.iter_mut().enumerate() {
                    *b = j * 7 % N;
                }
                let batch = &mut bm[..size];
                for bad in [false, true] {
                    if bad {
                        batch[size / 2] = N + 3;
                    }
                    ica.drift_matrix_by(w, Rows::Batch(batch), &mut fused, true);
                    ica.drift_matrix_by(w, Rows::Batch(batch), &mut columns, false);
                    same(&fused[..d * d], &columns[..d * d], d, size);
                }
            }
            ica.drift_matrix_by(w, Rows::All(N), &mut fused, true);
            ica.drift_matrix_by(w, Rows::All(N), &mut columns, false);
            same(&fused[..d * d], &columns[..d * d], d, N);
        }
        // Bit for bit with the SIMD kernels. The scalar twins' product rounds each
        // product and sum separately where the projection fuses them: there y differs in
        // its last bits (a relative 10⁻⁶ at most for ten channels), and the sums by far
        // less than 10⁻⁵ of the largest.
        fn same(fused: &[f64], columns: &[f64], d: usize, rows: usize) {
            if cfg!(sgld_force_scalar) {
                let top = columns.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                for (a, b) in fused.iter().zip(columns) {
                    assert!(
                        (a - b).abs() <= 1e-5 * top,
                        "d {d}, {rows} rows: {a} vs {b}"
                    );
                }
            } else {
                for (a, b) in fused.iter().zip(columns) {
                    assert_eq!(a.to_bits(), b.to_bits(), "d {d}, {rows} rows: {a} vs {b}");
                }
            }
        }
    }
}
