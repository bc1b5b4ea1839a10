//! Batch indices from a line of random bytes (Lemire's multiply-shift).

#[cfg(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx512f"
))]
use wide::bytemuck::cast;

/// [`reference::line_indices_u32`](crate::kernels::reference::line_indices_u32), bit for bit:
/// with AVX-512 the sixteen products are two 32 × 32 → 64-bit multiplies of eight
/// lanes (the even halves, then the odd ones shifted down), their low halves checked
/// with two compares, and the indices interleaved back into order by two permutes.
pub fn line_indices_u32(line: &[u8; 64], n: u32, out: &mut [usize; 16]) -> bool {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f",
        target_pointer_width = "64"
    ))]
    {
        use safe_arch::{
            cmp_op_mask_u32, m512i, mul_u32_wide_m512i, permute2_i32_m512i, set_splat_i32_m512i,
            set_splat_i64_m512i, shr_all_u64_m512i,
        };
        const LT: i32 = 1; // _MM_CMPINT_LT
        let (h, n64) = (
            cast::<[u8; 64], m512i>(*line),
            set_splat_i64_m512i(i64::from(n)),
        );
        let even = mul_u32_wide_m512i(h, n64);
        let odd = mul_u32_wide_m512i(shr_all_u64_m512i(h, 32), n64);
        // The products' low halves are their even 32-bit lanes.
        let nn = set_splat_i32_m512i(n as i32);
        let low = cmp_op_mask_u32::<LT>(even, nn) | cmp_op_mask_u32::<LT>(odd, nn);
        if low & 0x5555 != 0 {
            return false;
        }
        let (even, odd) = (shr_all_u64_m512i(even, 32), shr_all_u64_m512i(odd, 32));
        // Index 2k from even's lane k, 2k + 1 from odd's (32-bit lanes 16 on).
        let pick = |k0: i32| -> m512i {
            cast::<[i32; 16], m512i>(core::array::from_fn(|j| {
                let (k, word) = (k0 + j as i32 / 4, j as i32 % 2);
                2 * k + word + if j % 4 >= 2 { 16 } else { 0 }
            }))
        };
        let lo = permute2_i32_m512i(even, pick(0), odd);
        let hi = permute2_i32_m512i(even, pick(4), odd);
        *out = cast::<[m512i; 2], [usize; 16]>([lo, hi]);
        true
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f",
        target_pointer_width = "64"
    )))]
    {
        crate::kernels::reference::line_indices_u32(line, n, out)
    }
}
