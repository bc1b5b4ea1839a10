//! The online learner for firmware written in C: `libsgld_c.a` and
//! `include/sgld_learner.h`.
//!
//! The firmware owns the learner's memory: an `sgld_learner` (a `static`, in `.bss`, or
//! any storage aligned to 8 bytes that stays where it is) that [`sgld_learner_init`]
//! fills. [`sgld_learner_push`] then takes one example at a time — its active feature
//! indices and its label — and makes one SGLD step; [`sgld_learner_means`] and
//! [`sgld_learner_margin`] read the step-size-weighted posterior mean (eq. 11). The
//! learner is the one of `sgld-embedded-learner`: [`D`] parameters, Laplace(1) prior, a
//! window of 256 examples, batches of 10.
//!
//! Every function returns a status: [`SGLD_OK`] (0), [`SGLD_SKIPPED`] (1, a step left
//! θ as it was) or a negative error code, and a refused call changes nothing.
//! [`sgld_status_message`] names each. A panic, which the core never raises (its fuzz
//! targets check it), calls `sgld_panic`, a function the firmware provides.

#![cfg_attr(not(test), no_std)]

use core::ffi::{CStr, c_char};
use core::mem::{MaybeUninit, align_of, size_of};
use core::slice;

use sgld::Error;
use sgld::online::Example;
use sgld_embedded_learner::{Buffers, D, Device, Ex};

/// Parameters (`SGLD_LEARNER_DIM`): the features and the bias.
pub const DIM: usize = D;
/// Active feature indices an example may have (`SGLD_LEARNER_MAX_ACTIVE`).
pub const MAX_ACTIVE: usize = 16;
/// Bytes of an `sgld_learner` (`SGLD_LEARNER_BYTES`, one value for 32-bit and one for
/// 64-bit targets; `run.sh` checks the header against these): the f32 learner's size,
/// which the fixed-point learner of a core without an FPU does not exceed.
pub const LEARNER_BYTES: usize = if cfg!(target_pointer_width = "32") {
    9808
} else {
    9912
};
/// The alignment an `sgld_learner` must have.
pub const LEARNER_ALIGN: usize = 8;

/// Success.
pub const SGLD_OK: i32 = 0;
/// The step was skipped: its gradient or its proposal was not finite, θ is unchanged.
pub const SGLD_SKIPPED: i32 = 1;
/// A null pointer where one is required.
pub const SGLD_ERR_NULL: i32 = -1;
/// The learner's storage is not aligned to [`LEARNER_ALIGN`] bytes.
pub const SGLD_ERR_ALIGNMENT: i32 = -2;
/// The learner was not initialised by [`sgld_learner_init`].
pub const SGLD_ERR_NOT_INITIALISED: i32 = -3;
/// A buffer of the wrong length: more than [`MAX_ACTIVE`] indices, or a means buffer
/// that is not [`DIM`] long.
pub const SGLD_ERR_LENGTH: i32 = -4;
/// A feature index at or past [`DIM`].
pub const SGLD_ERR_INDEX: i32 = -5;
/// A label other than −1 or +1, or another parameter outside its domain.
pub const SGLD_ERR_INVALID: i32 = -6;
/// A NaN or infinite value.
pub const SGLD_ERR_NON_FINITE: i32 = -7;

/// `"SGLD"`: written last by [`sgld_learner_init`], so that a zeroed (or never
/// initialised) learner is recognised.
const MAGIC: u32 = 0x5347_4c44;

/// What an `sgld_learner` holds: the buffers and the device that borrows them.
#[repr(C)]
struct Storage {
    magic: u32,
    buffers: Buffers,
    /// Borrows `buffers` for as long as the storage is in use (hence `'static`).
    device: MaybeUninit<Device<'static>>,
}

const _: () = assert!(size_of::<Storage>() <= LEARNER_BYTES);
const _: () = assert!(align_of::<Storage>() <= LEARNER_ALIGN);

/// The header's `sgld_learner`: storage for one learner, opaque to its owner.
#[repr(C, align(8))]
pub struct SgldLearner {
    _opaque: [MaybeUninit<u8>; LEARNER_BYTES],
}

impl SgldLearner {
    /// Storage that no learner has been initialised in (as a zeroed C `static`).
    pub const fn zeroed() -> Self {
        Self {
            _opaque: [MaybeUninit::new(0); LEARNER_BYTES],
        }
    }
}

const _: () = assert!(align_of::<SgldLearner>() == LEARNER_ALIGN);

/// The status code of a core error.
fn status(e: &Error) -> i32 {
    match e {
        Error::LengthMismatch { .. } => SGLD_ERR_LENGTH,
        Error::IndexOutOfRange { .. } => SGLD_ERR_INDEX,
        Error::NonFinite { .. } | Error::InvalidStepSize { .. } => SGLD_ERR_NON_FINITE,
        _ => SGLD_ERR_INVALID,
    }
}

/// The storage behind `learner`, once it is known to be non-null and aligned.
fn storage(learner: *const SgldLearner) -> Result<*mut Storage, i32> {
    let s = learner.cast::<Storage>().cast_mut();
    if s.is_null() {
        Err(SGLD_ERR_NULL)
    } else if !s.is_aligned() {
        Err(SGLD_ERR_ALIGNMENT)
    } else {
        Ok(s)
    }
}

/// The storage of an initialised learner.
///
/// # Safety
/// `learner` is null or valid for reads of [`LEARNER_BYTES`] bytes.
unsafe fn initialised(learner: *const SgldLearner) -> Result<*mut Storage, i32> {
    let s = storage(learner)?;
    // SAFETY: `s` is non-null, aligned and valid for reads (the caller's contract); the
    // magic word is a plain `u32` every bit pattern of which is valid.
    if unsafe { (&raw const (*s).magic).read() } == MAGIC {
        Ok(s)
    } else {
        Err(SGLD_ERR_NOT_INITIALISED)
    }
}

/// The initialised device in `learner`, to step.
///
/// # Safety
/// `learner` is null or valid for reads and writes of [`LEARNER_BYTES`] bytes, and no
/// other reference to it is live.
unsafe fn device_mut<'a>(learner: *mut SgldLearner) -> Result<&'a mut Device<'static>, i32> {
    // SAFETY: the caller's contract covers this function's.
    let s = unsafe { initialised(learner) }?;
    // SAFETY: the magic word is written only after `sgld_learner_init` wrote the device,
    // so it is initialised; the reference covers the `device` field alone, never the
    // buffers it borrows, and the caller holds no other reference.
    Ok(unsafe { (*s).device.assume_init_mut() })
}

/// The initialised device in `learner`, to read.
///
/// # Safety
/// `learner` is null or valid for reads of [`LEARNER_BYTES`] bytes, and nothing writes
/// it while the reference lives.
unsafe fn device<'a>(learner: *const SgldLearner) -> Result<&'a Device<'static>, i32> {
    // SAFETY: the caller's contract covers this function's.
    let s = unsafe { initialised(learner) }?;
    // SAFETY: initialised, as in `device_mut`; shared, and nothing writes it meanwhile.
    Ok(unsafe { (*s).device.assume_init_ref() })
}

/// The `count` indices at `indices` as an example with `label`, not yet checked against
/// the learner's dimension (the learner checks every example it is given).
///
/// # Safety
/// `indices` is null or valid for reads of `count` bytes.
unsafe fn example(indices: *const u8, count: usize, label: f32) -> Result<Ex, i32> {
    if count > MAX_ACTIVE {
        return Err(SGLD_ERR_LENGTH);
    }
    let idx: &[u8] = if count == 0 {
        &[]
    } else if indices.is_null() {
        return Err(SGLD_ERR_NULL);
    } else {
        // SAFETY: non-null and valid for `count ≤ 16` bytes (the caller's contract);
        // `u8` has no alignment or validity requirement.
        unsafe { slice::from_raw_parts(indices, count) }
    };
    Ex::narrow(idx, label).map_err(|e| status(&e))
}

/// Starts a learner in `learner` from θ = 0 with generator seed `seed`, replacing
/// whatever it held: [`SGLD_OK`] or an error.
///
/// # Safety
/// `learner` is null or points to an `sgld_learner` (valid for reads and writes of
/// [`LEARNER_BYTES`] bytes) that stays at its address and is touched only through these
/// functions, one call at a time, while the learner is in use.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgld_learner_init(learner: *mut SgldLearner, seed: u64) -> i32 {
    let s = match storage(learner) {
        Ok(s) => s,
        Err(code) => return code,
    };
    // SAFETY: `s` is non-null, aligned and valid for writes of a `Storage` (the caller's
    // contract, and `Storage` is `LEARNER_BYTES` long). The magic word is cleared first,
    // so a learner whose initialisation fails reads as not initialised. The buffers are
    // written in place; the device then borrows them mutably for as long as the storage
    // is in use, which the caller's contract makes at least as long as the device, and
    // nothing else reads or writes the buffers from here on.
    unsafe {
        (&raw mut (*s).magic).write(0);
        let buffers = &raw mut (*s).buffers;
        buffers.write(Buffers::new());
        match Device::new(&mut *buffers, seed) {
            Ok(d) => {
                (&raw mut (*s).device).write(MaybeUninit::new(d));
                (&raw mut (*s).magic).write(MAGIC);
                SGLD_OK
            }
            Err(e) => status(&e),
        }
    }
}

/// One arriving example — `count` active feature indices (each below
/// `SGLD_LEARNER_DIM`; the bias's among them) and `label` (−1 or +1) — and one SGLD
/// step: [`SGLD_OK`], [`SGLD_SKIPPED`] or an error (the example refused, nothing
/// changed).
///
/// # Safety
/// `learner` as for [`sgld_learner_init`]; `indices` is null or valid for reads of
/// `count` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgld_learner_push(
    learner: *mut SgldLearner,
    indices: *const u8,
    count: usize,
    label: f32,
) -> i32 {
    // SAFETY: the caller's contract, as this function's.
    let device = match unsafe { device_mut(learner) } {
        Ok(d) => d,
        Err(code) => return code,
    };
    // SAFETY: the caller's contract, as this function's.
    let step = match unsafe { example(indices, count, label) } {
        Ok(ex) => device.learn(ex).map_err(|e| status(&e)),
        Err(code) => Err(code),
    };
    match step {
        Ok(info) if info.non_finite => SGLD_SKIPPED,
        Ok(_) => SGLD_OK,
        Err(code) => code,
    }
}

/// Writes the posterior mean of every parameter into `out` (`len` must be
/// `SGLD_LEARNER_DIM`): [`SGLD_OK`] or an error. The means are NaN until the estimate's
/// first example (half-way through the learner's schedule).
///
/// # Safety
/// `learner` as for [`sgld_learner_init`]; `out` is null or valid for writes of `len`
/// floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgld_learner_means(
    learner: *const SgldLearner,
    out: *mut f32,
    len: usize,
) -> i32 {
    // SAFETY: the caller's contract, as this function's.
    let device = match unsafe { device(learner) } {
        Ok(d) => d,
        Err(code) => return code,
    };
    if len != D {
        return SGLD_ERR_LENGTH;
    }
    if out.is_null() {
        return SGLD_ERR_NULL;
    }
    if !out.is_aligned() {
        return SGLD_ERR_ALIGNMENT;
    }
    for j in 0..D {
        // SAFETY: `j < len = D` floats, which the caller made writable; aligned above.
        unsafe { out.add(j).write(device.mean(j)) };
    }
    SGLD_OK
}

/// The posterior mean's margin `Σⱼ θ̄ⱼ` over an example's `count` active indices into
/// `*margin` (its probability of +1 is `1 / (1 + exp(−margin))`): [`SGLD_OK`] or an
/// error.
///
/// # Safety
/// `learner` as for [`sgld_learner_init`]; `indices` is null or valid for reads of
/// `count` bytes; `margin` is null or valid for a write of one float.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgld_learner_margin(
    learner: *const SgldLearner,
    indices: *const u8,
    count: usize,
    margin: *mut f32,
) -> i32 {
    // SAFETY: the caller's contract, as this function's.
    let device = match unsafe { device(learner) } {
        Ok(d) => d,
        Err(code) => return code,
    };
    // SAFETY: the caller's contract, as this function's.
    let ex = match unsafe { example(indices, count, 1.0) } {
        Ok(ex) => ex,
        Err(code) => return code,
    };
    if let Err(e) = ex.check(D) {
        return status(&e);
    }
    if margin.is_null() {
        return SGLD_ERR_NULL;
    }
    if !margin.is_aligned() {
        return SGLD_ERR_ALIGNMENT;
    }
    let mut mean = [0.0f32; D];
    if let Err(e) = device.means_into(&mut mean) {
        return status(&e);
    }
    // SAFETY: non-null, aligned and writable (the caller's contract).
    unsafe { margin.write(ex.margin(&mean)) };
    SGLD_OK
}

/// A one-line description of a status code (a static, NUL-terminated string).
#[unsafe(no_mangle)]
pub extern "C" fn sgld_status_message(status: i32) -> *const c_char {
    let message: &'static CStr = match status {
        SGLD_OK => c"success",
        SGLD_SKIPPED => c"step skipped: its gradient or proposal was not finite",
        SGLD_ERR_NULL => c"a required pointer is null",
        SGLD_ERR_ALIGNMENT => c"a pointer is not aligned (sgld_learner: 8 bytes)",
        SGLD_ERR_NOT_INITIALISED => c"the learner was not initialised",
        SGLD_ERR_LENGTH => c"a buffer has the wrong length",
        SGLD_ERR_INDEX => c"a feature index is not below SGLD_LEARNER_DIM",
        SGLD_ERR_INVALID => c"an invalid value (a label must be -1 or +1)",
        SGLD_ERR_NON_FINITE => c"a NaN or infinite value",
        _ => c"unknown status",
    };
    message.as_ptr()
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe extern "C" {
        /// The firmware's panic hook: reports, resets or halts, and never returns.
        fn sgld_panic() -> !;
    }
    // SAFETY: the firmware defines `sgld_panic` (the header declares it) as a function
    // of no arguments that does not return; it has no other precondition.
    unsafe { sgld_panic() }
}

#[cfg(test)]
mod tests;
