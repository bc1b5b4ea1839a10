//! Projections of rows by a small square matrix held in registers, and `tanh(y/2)`.

use super::*;

/// The widths `d` whose rows [`project_rows_f32`] and [`project_batch_f32`] transpose in
/// registers (the others take one lane at a time).
pub const PROJECT_IN_REGISTERS: core::ops::RangeInclusive<usize> = 8..=16;

/// Calls `f::<D>(args)` (or `f::<D, G>(args)`, written `f::<_, G>(args)`) with `D = d`
/// as a constant for `d` in [`PROJECT_IN_REGISTERS`], else evaluates the fallback.
macro_rules! in_registers {
    ($d:expr, $f:ident $(::<_, $g:tt>)? ($($arg:expr),*), else $fallback:block) => {
        match $d {
            8 => $f::<8 $(, $g)?>($($arg),*),
            9 => $f::<9 $(, $g)?>($($arg),*),
            10 => $f::<10 $(, $g)?>($($arg),*),
            11 => $f::<11 $(, $g)?>($($arg),*),
            12 => $f::<12 $(, $g)?>($($arg),*),
            13 => $f::<13 $(, $g)?>($($arg),*),
            14 => $f::<14 $(, $g)?>($($arg),*),
            15 => $f::<15 $(, $g)?>($($arg),*),
            16 => $f::<16 $(, $g)?>($($arg),*),
            _ => $fallback,
        }
    };
}
pub(crate) use in_registers;

/// [`reference::project_rows_f32`](crate::kernels::reference::project_rows_f32): `W` times
/// eight rows, channel-major, each sum the same chain of fused multiply-adds, so the
/// twins agree bit for bit.
///
/// For `d` in [`PROJECT_IN_REGISTERS`] the eight rows are turned into `d` vectors of
/// eight lanes in registers (transposes of four channels, the last four ending at
/// channel `d`) and
/// each output channel is `d` multiply-adds of a broadcast weight with them: the
/// transposed rows never go through memory, where [`columns_f32`] and then
/// [`gemm_f32`] store them and read them back. Other `d` take one lane at a time.
pub fn project_rows_f32(w: &[f32], d: usize, rows: &[&[f32]; 8], out: &mut [f32], stride: usize) {
    if !crate::kernels::reference::project_rows_fit(w.len(), d, rows, out.len(), stride) {
        return;
    }
    in_registers!(d, project_rows(w, rows, out, stride), else {
        crate::kernels::reference::project_rows_f32(w, d, rows, out, stride)
    });
}

/// [`reference::project_batch_f32`](crate::kernels::reference::project_batch_f32): `W` times
/// the rows of `x` at the offsets `at`, channel-major, bit for bit what the twin writes.
///
/// For `d` in [`PROJECT_IN_REGISTERS`] it is [`project_rows_f32`]'s computation, two
/// groups of eight rows to a sixteen-lane vector, with the width a constant and the
/// operands checked once for the whole batch instead of once a group; other `d` take
/// the twin's path.
pub fn project_batch_f32(
    w: &[f32],
    d: usize,
    x: &[f32],
    at: &[usize],
    out: &mut [f32],
    stride: usize,
) {
    if !crate::kernels::reference::project_batch_fit(w.len(), d, at.len(), out.len(), stride) {
        return;
    }
    in_registers!(d, project_batch::<_, false>(w, x, at, out, &mut [], stride), else {
        crate::kernels::reference::project_batch_f32(w, d, x, at, out, stride)
    });
}

/// [`project_batch_f32`] into `y`, and `t = tanh(y/2)` in the same layout (what
/// [`tanh_half_f32`] of `y` writes, bit for bit), when `t` is as long as `y`; nothing
/// is written otherwise, or when [`project_batch_f32`] writes nothing.
///
/// For `d` in [`PROJECT_IN_REGISTERS`] each group's sums go through `tanh` while they
/// are in registers, so `y` is never read back for a second pass. The two parts do not
/// overlap (the multiply-adds, the transposes and `tanh` share the same two vector
/// ports): the kernel costs the projection's time plus `tanh`'s, less that pass.
pub fn project_batch_tanh_f32(
    w: &[f32],
    d: usize,
    x: &[f32],
    at: &[usize],
    y: &mut [f32],
    t: &mut [f32],
    stride: usize,
) {
    if t.len() != y.len()
        || !crate::kernels::reference::project_batch_fit(w.len(), d, at.len(), y.len(), stride)
    {
        return;
    }
    in_registers!(d, project_batch::<_, true>(w, x, at, y, t, stride), else {
        crate::kernels::reference::project_batch_f32(w, d, x, at, y, stride);
        tanh_half_f32(y, t);
    });
}

/// [`project_batch_f32`] for `D` channels, `8 ≤ D ≤ 16` (operands checked), with
/// `TANH` also `tanh(y/2)` into `t` (as long as `out`, checked).
///
/// Sixteen rows at a time: two groups' transposed channels side by side in one
/// sixteen-lane vector, so each multiply-add does both groups' work (on cores with
/// 512-bit multiply-add units twice the work of an eight-lane one; elsewhere the same).
/// A last group of up to eight rows goes alone.
#[inline(always)]
pub(super) fn project_batch<const D: usize, const TANH: bool>(
    w: &[f32],
    x: &[f32],
    at: &[usize],
    out: &mut [f32],
    t: &mut [f32],
    stride: usize,
) {
    // The rows that fill a last, partial group, and any row that does not fit in `x`.
    let zero = [0.0f32; D];
    let row = |a: usize| -> &[f32; D] {
        x.get(a..)
            .and_then(|r| r.first_chunk::<D>())
            .unwrap_or(&zero)
    };
    let group = |g: &[usize]| -> [&[f32; D]; 8] {
        core::array::from_fn(|q| g.get(q).map_or(&zero, |&a| row(a)))
    };
    for (g, j) in at.chunks(16).zip((0..).step_by(16)) {
        if let Some((lo, hi)) = g.split_at_checked(8).filter(|(_, hi)| !hi.is_empty()) {
            // `at.len()` rounded up to eight is at least j + 16 here, and the caller
            // checked that it fits in the stride.
            let x = transposed16::<D>(&group(lo), &group(hi));
            let ys = slots::<D, LANES>(&mut out[j..], stride);
            let ts = TANH.then(|| slots::<D, LANES>(&mut t[j..], stride));
            let sums = channel_sums(w, &x);
            for (slot, v) in ys.into_iter().zip(sums) {
                v.store(slot);
            }
            for (slot, v) in ts.into_iter().flatten().zip(sums) {
                tanh_half_x16(v).store(slot);
            }
        } else {
            let x = transposed::<D>(&group(g));
            let ys = slots::<D, 8>(&mut out[j..], stride);
            let ts = TANH.then(|| slots::<D, 8>(&mut t[j..], stride));
            let sums = channel_sums(w, &x);
            for (slot, v) in ys.into_iter().zip(sums) {
                v.store(slot);
            }
            if let Some(mut ts) = ts {
                // Two channels to a sixteen-lane tanh: half the divisions of one each.
                for (slots, v) in ts.chunks_mut(2).zip(sums.chunks(2)) {
                    let pair = join(v[0], v.get(1).copied().unwrap_or(wide::f32x8::ZERO));
                    let th = tanh_half_x16(pair).to_array();
                    for (slot, th) in slots.iter_mut().zip(th.chunks_exact(8)) {
                        slot.copy_from_slice(th);
                    }
                }
            }
        }
    }
    // tanh(0/2) = 0: the slots past the last group are zeros in both.
    let end = at.len().next_multiple_of(8);
    for i in 0..D {
        crate::kernels::zero(&mut out[i * stride + end..(i + 1) * stride]);
        if TANH {
            crate::kernels::zero(&mut t[i * stride + end..(i + 1) * stride]);
        }
    }
}

/// [`project_rows_f32`] for `D` channels, `8 ≤ D ≤ 16` (operands checked).
#[inline(always)]
pub(super) fn project_rows<const D: usize>(
    w: &[f32],
    rows: &[&[f32]; 8],
    out: &mut [f32],
    stride: usize,
) {
    // Every row has at least `D` values (checked), so the zeros are never taken.
    let zero = [0.0f32; D];
    let rows = rows.map(|r| r.first_chunk::<D>().unwrap_or(&zero));
    let ys = slots::<D, 8>(out, stride);
    for (slot, v) in ys.into_iter().zip(channel_sums(w, &transposed::<D>(&rows))) {
        v.store(slot);
    }
}

/// The `D` output slots of `L` floats, `stride` apart. They are taken before the
/// multiply-adds: with a slot's bounds check after them, the compiler moved the first
/// channel's whole chain below it, to run alone at the end. (The callers checked that
/// every slot fits, so the splits cannot fail.)
#[inline(always)]
pub(super) fn slots<const D: usize, const L: usize>(
    out: &mut [f32],
    stride: usize,
) -> [&mut [f32; L]; D] {
    let mut rest = out;
    core::array::from_fn(|i| {
        let (head, tail) =
            core::mem::take(&mut rest).split_at_mut(if i + 1 < D { stride } else { L });
        rest = tail;
        head.first_chunk_mut::<L>().expect("stride ≥ L")
    })
}

/// `Σ_k w[i·D + k]·x[k]` for each output channel `i`, lane by lane, each a chain of fused multiply-adds
/// over `k` from 0 (as the twin's). All `D` chains advance together, one multiply-add
/// each per input channel: `D` independent chains keep both multiply-add pipes busy,
/// where one channel's chain at a time waits on its own latency.
#[inline(always)]
pub(super) fn channel_sums<V: Lanes<Elem = f32>, const D: usize>(w: &[f32], x: &[V; D]) -> [V; D] {
    let w = &w[..D * D];
    let mut acc = [V::ZERO; D];
    for (k, &xk) in x.iter().enumerate() {
        for (i, acc) in acc.iter_mut().enumerate() {
            *acc = V::splat(w[i * D + k]).mul_add(xk, *acc);
        }
    }
    acc
}

/// Eight rows' first `D` channels (`D ≥ 4`) as `D` vectors of eight lanes, lane `q`
/// row `q`: four channels at a time, the last four ending at channel `D`.
#[inline(always)]
pub(super) fn transposed<const D: usize>(rows: &[&[f32; D]; 8]) -> [wide::f32x8; D] {
    by_quads(|at| channels4(rows, at))
}

/// `D` channels (`D ≥ 4`) from `quad(k0)`, which gives channels `k0..k0 + 4`: four at
/// a time, the last four ending at channel `D`.
#[inline(always)]
pub(super) fn by_quads<V: Lanes, const D: usize>(quad: impl Fn(usize) -> [V; 4]) -> [V; D] {
    let mut x = [V::ZERO; D];
    let mut k0 = 0;
    while k0 < D {
        let at = k0.min(D - 4);
        for (j, v) in quad(at).into_iter().enumerate() {
            x[at + j] = v;
        }
        k0 += 4;
    }
    x
}

/// Sixteen rows' first `D` channels (`D ≥ 4`), rows `lo` then `hi`, as `D` vectors of
/// sixteen lanes, lane `q` row `q`: [`transposed`]'s four channels at a time, on
/// sixteen-lane registers where AVX-512 has them (half the shuffles of two groups of
/// eight, and no joining of their halves after).
#[inline(always)]
pub(super) fn transposed16<const D: usize>(
    lo: &[&[f32; D]; 8],
    hi: &[&[f32; D]; 8],
) -> [f32x16; D] {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    ))]
    {
        by_quads(|at| channels4x16(lo, hi, at))
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    )))]
    {
        let (a, b) = (transposed::<D>(lo), transposed::<D>(hi));
        core::array::from_fn(|k| cast([a[k], b[k]]))
    }
}

/// Channels `k0..k0 + 4` of sixteen rows, one vector each (lane `q` row `q`): register
/// `q` holds rows `q`, `q + 4`, `q + 8` and `q + 12` in its four quarters, so the
/// transpose is [`channels4`]'s in-quarter 4 × 4 one, eight shuffles for all sixteen
/// rows.
#[cfg(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx512f"
))]
#[inline(always)]
pub(super) fn channels4x16<const D: usize>(
    lo: &[&[f32; D]; 8],
    hi: &[&[f32; D]; 8],
    k0: usize,
) -> [f32x16; 4] {
    use safe_arch::{cast_m256_to_m512, insert_m256_to_m512, m512, shuffle_m512};
    let r: [m512; 4] = core::array::from_fn(|q| {
        insert_m256_to_m512::<1>(
            cast_m256_to_m512(two_quads(lo[q], lo[q + 4], k0)),
            two_quads(hi[q], hi[q + 4], k0),
        )
    });
    // Pairs of channels from two registers, then single channels from two pairs.
    let (t0, t1) = (
        shuffle_m512::<0b01_00_01_00>(r[0], r[1]),
        shuffle_m512::<0b11_10_11_10>(r[0], r[1]),
    );
    let (t2, t3) = (
        shuffle_m512::<0b01_00_01_00>(r[2], r[3]),
        shuffle_m512::<0b11_10_11_10>(r[2], r[3]),
    );
    [
        shuffle_m512::<0b10_00_10_00>(t0, t2),
        shuffle_m512::<0b11_01_11_01>(t0, t2),
        shuffle_m512::<0b10_00_10_00>(t1, t3),
        shuffle_m512::<0b11_01_11_01>(t1, t3),
    ]
    .map(cast)
}

/// Channels `k0..k0 + 4` of eight rows, one vector each (lane `q` row `q`).
///
/// Each register is loaded as two rows' four channels, row `q` in its low half and row
/// `q + 4` in its high half (a load and an insert from memory, which x86 runs off the
/// shuffle port), so the transpose is the in-half 4 × 4 one: eight shuffles for four
/// channels, where an 8 × 8 transpose in registers takes twenty-four for eight.
#[inline(always)]
pub(super) fn channels4<const D: usize>(rows: &[&[f32; D]; 8], k0: usize) -> [wide::f32x8; 4] {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx"
    ))]
    {
        use safe_arch::{m256, shuffle_m256, unpack_hi_m256, unpack_lo_m256};
        let r: [m256; 4] = core::array::from_fn(|q| two_quads(rows[q], rows[q + 4], k0));
        let (a0, a1) = (unpack_lo_m256(r[0], r[1]), unpack_hi_m256(r[0], r[1]));
        let (a2, a3) = (unpack_lo_m256(r[2], r[3]), unpack_hi_m256(r[2], r[3]));
        [
            shuffle_m256::<0b01_00_01_00>(a0, a2),
            shuffle_m256::<0b11_10_11_10>(a0, a2),
            shuffle_m256::<0b01_00_01_00>(a1, a3),
            shuffle_m256::<0b11_10_11_10>(a1, a3),
        ]
        .map(cast)
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx"
    )))]
    {
        let r: [[f32; 4]; 8] = core::array::from_fn(|q| quad(rows[q], k0));
        core::array::from_fn(|j| wide::f32x8::new(core::array::from_fn(|q| r[q][j])))
    }
}

/// Channels `k0..k0 + 4` of `row`.
#[inline(always)]
pub(super) fn quad<const D: usize>(row: &[f32; D], k0: usize) -> [f32; 4] {
    let mut a = [0.0f32; 4];
    a.copy_from_slice(&row[k0..k0 + 4]);
    a
}

/// Channels `k0..k0 + 4` of row `lo` in the low half and of row `hi` in the high half:
/// a 128-bit load and an insert from memory.
#[cfg(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx"
))]
#[inline(always)]
pub(super) fn two_quads<const D: usize>(
    lo: &[f32; D],
    hi: &[f32; D],
    k0: usize,
) -> safe_arch::m256 {
    use safe_arch::{load_unaligned_m128, set_m128_m256};
    set_m128_m256(
        load_unaligned_m128(&quad(hi, k0)),
        load_unaligned_m128(&quad(lo, k0)),
    )
}

/// `out[i] ← tanh(y[i]/2)` in f64, eight at a time: `sign(y)·(1 − t)/(1 + t)` with
/// `t = e^{−|y|}`, within `4·f64::EPSILON` of the exact value in absolute terms;
/// `±∞ → ±1`, NaN stays NaN.
///
/// `e^{−|y|}` is specialised to its range: `|y|` is capped at 40 (beyond it
/// `tanh(|y|/2)` rounds to 1), so `e^x` for `x ∈ [−40, 0]` needs no overflow, underflow
/// or special-value paths. `x = (16m + j)·ln2/16 + r` with `16m + j` rounded by the
/// `1.5·2⁵²` shifter; `e^x = 2^m · 2^{j/16} · e^r`, with `2^{j/16}` from a sixteen-entry
/// table (one two-register permute), `e^r` by its Taylor polynomial of degree 6 on
/// `|r| ≤ ln2/32` (relative truncation below `4.5·10⁻¹⁶`, about 2 ulp of `t`, which
/// moves `tanh` by at most 1 ulp), and `2^m` added to the exponent bits. Ten multiplies
/// per vector where a polynomial on the whole `|r| ≤ ln2/2` needs seventeen.
pub fn tanh_half(y: &[f64], out: &mut [f64]) {
    let (y, out) = common2(y, out);
    let mut yc = y.chunks_exact(8);
    let mut oc = out.chunks_exact_mut(8);
    for (ys, os) in (&mut yc).zip(&mut oc) {
        os.copy_from_slice(&tanh_half_x8(load_f64(ys)).to_array());
    }
    let (yr, or) = (yc.remainder(), oc.into_remainder());
    if !yr.is_empty() {
        let mut a = [0.0f64; 8];
        crate::kernels::copy(&mut a, yr);
        crate::kernels::copy(or, &tanh_half_x8(wide::f64x8::from(a)).to_array());
    }
}

/// `2^{j/16}` for `j = 0, …, 15`, correctly rounded, as two vectors for a permute.
pub(super) const EXP2_SIXTEENTHS: [[f64; 8]; 2] = [
    [
        1.0,
        1.044_273_782_427_413_8,
        1.090_507_732_665_257_7,
        1.138_788_634_756_691_6,
        1.189_207_115_002_721,
        1.241_857_812_073_484,
        1.296_839_554_651_009_6,
        1.354_255_546_936_892_7,
    ],
    [
        core::f64::consts::SQRT_2,
        1.476_826_145_939_499_3,
        1.542_210_825_407_940_7,
        1.610_490_331_949_254_3,
        1.681_792_830_507_429,
        1.756_252_160_373_299_5,
        1.834_008_086_409_342_4,
        1.915_206_561_397_147_4,
    ],
];

#[inline(always)]
pub(super) fn tanh_half_x8(v: wide::f64x8) -> wide::f64x8 {
    use wide::{ShuffleExt, f64x8, u64x8};
    const SHIFTER: f64 = 6_755_399_441_055_744.0; // 1.5·2⁵²
    // ln2/16 in two parts; the high part has 17 significant bits, so k times it is
    // exact for |k| ≤ 16·40/ln2.
    const LN2_16_HI: f64 = 0.693_145_751_953_125 / 16.0;
    const LN2_16_LO: f64 = 1.428_606_820_309_417_2e-6 / 16.0;
    let c = f64x8::splat;
    let x = -v.abs().fast_min(c(40.0));
    // s = k + 1.5·2⁵² exactly, k = round(16x/ln2); its low bits hold 2⁵¹ + k.
    let s = x.mul_add(c(16.0 * core::f64::consts::LOG2_E), c(SHIFTER));
    let k = s - c(SHIFTER);
    let r = k.mul_neg_add(c(LN2_16_HI), x);
    let r = k.mul_neg_add(c(LN2_16_LO), r);
    let mut p = c(1.0 / 720.0);
    for d in [120.0, 24.0, 6.0, 2.0, 1.0, 1.0] {
        p = p.mul_add(r, c(1.0 / d));
    }
    // j = k mod 16 is the low four bits (2⁵¹ is a multiple of 16); m = ⌊k/16⌋ is the
    // rest, shifted into the exponent field (the 2⁴⁷ left of it falls off the top).
    let bits: u64x8 = cast(s);
    let table: [f64x8; 2] = [
        f64x8::new(EXP2_SIXTEENTHS[0]),
        f64x8::new(EXP2_SIXTEENTHS[1]),
    ];
    let scaled = p * table.shuffle_wrapping(bits & u64x8::splat(15));
    // e^x ≥ e^{−40} is a normal number: adding m to the exponent is exact.
    let t: f64x8 = cast(cast::<f64x8, u64x8>(scaled) + ((bits >> 4u32) << 52u32));
    let mag = (c(1.0) - t) / (c(1.0) + t);
    let signed = mag | (v & c(-0.0));
    v.is_nan().select(v, signed)
}

/// `out[i] ← tanh(y[i]/2)` in f32, sixteen at a time, by [`tanh_half`]'s method: within
/// `4·f32::EPSILON` of the exact value in absolute terms; `±∞ → ±1`, NaN stays NaN.
///
/// The f32 version of `e^r` on `|r| ≤ ln2/32` is its Taylor polynomial of degree 3
/// (relative truncation below `10⁻⁸`, a tenth of an ulp), and the sixteen-entry table of
/// `2^{j/16}` is one vector, so the lookup is a one-register permute. It takes the
/// signed argument: `t = e^{−y}` for `y` clamped to `[−40, 40]` (up to `e^{40} < 2^{58}`,
/// a normal f32) and `(1 − t)/(1 + t)` has `y`'s sign already, two operations fewer
/// than taking `|y|` and copying the sign back.
pub fn tanh_half_f32(y: &[f32], out: &mut [f32]) {
    let (y, out) = common2(y, out);
    let mut yc = y.chunks_exact(LANES);
    let mut oc = out.chunks_exact_mut(LANES);
    for (ys, os) in (&mut yc).zip(&mut oc) {
        store(tanh_half_x16(load(ys)), os);
    }
    let (yr, or) = (yc.remainder(), oc.into_remainder());
    if !yr.is_empty() {
        crate::kernels::copy(or, &tanh_half_x16(f32x16::from(padded16(yr))).to_array());
    }
}

#[inline(always)]
pub(super) fn tanh_half_x16(v: f32x16) -> f32x16 {
    use wide::u32x16;
    const SHIFTER: f32 = 12_582_912.0; // 1.5·2²³
    let c = f32x16::splat;
    // e^x for x = −a: a = y clamped to [−40, 40]. x86's max and min return their
    // second operand when either is NaN, so a NaN comes through the clamp, and every
    // step after carries it to the result.
    let a = c(40.0).fast_min(c(-40.0).fast_max(v));
    // s = k + 1.5·2²³ exactly, k = round(−16a/ln2); its low bits hold 2²² + k.
    let s = a.mul_add(c(-16.0 * core::f32::consts::LOG2_E), c(SHIFTER));
    let k = s - c(SHIFTER);
    // ρ = −r = a + k·ln2/16, and e^r = 1 − ρ + ρ²/2 − ρ³/6. One multiply-add with
    // ln2/16 rounded to f32 (no second, low part): its error, |k| times half an ulp
    // of ln2/16, moves e^r by at most 2·10⁻⁶ relatively, where |k| is largest, and
    // tanh by under 0.3 ulp, as tanh is flat there.
    let rho = k.mul_add(c(core::f32::consts::LN_2 / 16.0), a);
    let p = rho
        .mul_add(c(-1.0 / 6.0), c(0.5))
        .mul_add(rho, c(-1.0))
        .mul_add(rho, c(1.0));
    // j = k mod 16 is the low four bits, all the permute reads (it wraps). The bits
    // are 0x4B40_0000 + k, so shifted left by 19 they are k·2¹⁹ = m·2²³ + j·2¹⁹
    // (mod 2³², the rest falls off the top) with m = ⌊k/16⌋: m in the exponent field,
    // and j·2¹⁹ that the table's entries have taken off already.
    let bits: u32x16 = cast(s);
    let table = f32x16::new(core::array::from_fn(|j| {
        f32::from_bits((EXP2_SIXTEENTHS[j / 8][j % 8] as f32).to_bits() - ((j as u32) << 19))
    }));
    // 2^{j/16}·2^m ∈ [2^{−58}, 2^{59}] is a normal f32: adding m (of either sign) to
    // the table entry's exponent is exact, and so is scaling by 2^m after the product
    // with p (a normal result), which this is the same number as. Taken before the
    // product, a NaN's p makes the result NaN whatever bits the addition left.
    let pow: f32x16 = cast(cast::<f32x16, u32x16>(table.shuffle_wrapping(bits)) + (bits << 19u32));
    // t = p·2^{j/16}·2^m, and 1 ∓ t each rounded once (fused).
    let th = (-p).mul_add(pow, c(1.0)) / p.mul_add(pow, c(1.0));
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    let th = v.is_nan().select(v, th);
    th
}
