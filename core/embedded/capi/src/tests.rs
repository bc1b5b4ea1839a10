//! The C functions called from Rust: refusals, and the same posterior mean as the
//! learner driven directly.

use super::*;
use sgld_embedded_learner::{HELD_OUT, STREAM, Stream};

fn learner() -> Box<SgldLearner> {
    Box::new(SgldLearner::zeroed())
}

/// Pushes an example's indices and label through the C function.
fn push(l: &mut SgldLearner, ex: &Ex) -> i32 {
    let idx: Vec<u8> = ex.indices().to_vec();
    // SAFETY: `l` is a live, exclusively borrowed learner; `idx` holds `idx.len()` bytes.
    unsafe { sgld_learner_push(l, idx.as_ptr(), idx.len(), ex.label()) }
}

fn means(l: &SgldLearner) -> Vec<f32> {
    let mut out = vec![0.0f32; DIM];
    // SAFETY: `out` holds DIM floats.
    assert_eq!(
        unsafe { sgld_learner_means(l, out.as_mut_ptr(), DIM) },
        SGLD_OK
    );
    out
}

#[test]
fn an_uninitialised_or_null_learner_is_refused() {
    let mut l = learner();
    let idx = [1u8, 123];
    let mut out = [0.0f32; DIM];
    // SAFETY: every pointer is null, or valid for what the call reads or writes.
    unsafe {
        assert_eq!(
            sgld_learner_push(&mut *l, idx.as_ptr(), 2, 1.0),
            SGLD_ERR_NOT_INITIALISED
        );
        assert_eq!(
            sgld_learner_means(&*l, out.as_mut_ptr(), DIM),
            SGLD_ERR_NOT_INITIALISED
        );
        assert_eq!(sgld_learner_init(core::ptr::null_mut(), 1), SGLD_ERR_NULL);
        assert_eq!(
            sgld_learner_push(core::ptr::null_mut(), idx.as_ptr(), 2, 1.0),
            SGLD_ERR_NULL
        );
    }
}

#[test]
fn misaligned_storage_is_refused() {
    // One learner's bytes and 8 more, 8-aligned; the learner placed 4 bytes in.
    let mut words = vec![0u64; LEARNER_BYTES / 8 + 2];
    // SAFETY: 4 bytes into an allocation of LEARNER_BYTES + 16 bytes.
    let misaligned = unsafe { words.as_mut_ptr().cast::<u8>().add(4) }.cast::<SgldLearner>();
    // SAFETY: refused before anything is read or written.
    assert_eq!(
        unsafe { sgld_learner_init(misaligned, 1) },
        SGLD_ERR_ALIGNMENT
    );
}

#[test]
fn bad_examples_are_refused_and_change_nothing() {
    let mut a = learner();
    let mut b = learner();
    // SAFETY: both are live and exclusively borrowed.
    unsafe {
        assert_eq!(sgld_learner_init(&mut *a, 5), SGLD_OK);
        assert_eq!(sgld_learner_init(&mut *b, 5), SGLD_OK);
    }
    let mut stream = Stream::training();
    let too_many: Vec<u8> = (0..17).collect();
    let mut refused = 0;
    for t in 0..STREAM {
        let ex = stream.next_example().unwrap();
        assert_eq!(push(&mut a, &ex), SGLD_OK);
        assert_eq!(push(&mut b, &ex), SGLD_OK);
        if t % 997 == 0 {
            // SAFETY: every pointer is null, or valid for `count` bytes.
            let codes = unsafe {
                [
                    sgld_learner_push(&mut *b, [3u8, 124].as_ptr(), 2, 1.0),
                    sgld_learner_push(&mut *b, [3u8, 123].as_ptr(), 2, 0.5),
                    sgld_learner_push(&mut *b, [3u8, 123].as_ptr(), 2, f32::NAN),
                    sgld_learner_push(&mut *b, too_many.as_ptr(), 17, 1.0),
                    sgld_learner_push(&mut *b, core::ptr::null(), 3, 1.0),
                ]
            };
            assert_eq!(
                codes,
                [
                    SGLD_ERR_INDEX,
                    SGLD_ERR_INVALID,
                    SGLD_ERR_INVALID,
                    SGLD_ERR_LENGTH,
                    SGLD_ERR_NULL
                ]
            );
            refused += 1;
        }
    }
    assert!(refused > 20);
    let (ma, mb) = (means(&a), means(&b));
    assert!(ma.iter().all(|m| m.is_finite()));
    assert_eq!(
        ma.iter().map(|m| m.to_bits()).collect::<Vec<_>>(),
        mb.iter().map(|m| m.to_bits()).collect::<Vec<_>>()
    );
    let mut short = [0.0f32; DIM - 1];
    // SAFETY: `short` holds DIM − 1 floats; the call is refused before writing.
    let code = unsafe { sgld_learner_means(&*a, short.as_mut_ptr(), DIM - 1) };
    assert_eq!(code, SGLD_ERR_LENGTH);
}

#[test]
fn the_c_learner_is_the_rust_learner() {
    // Driven directly.
    let mut buffers = Box::new(Buffers::new());
    let mut device = Device::new(&mut buffers, 2011).unwrap();
    let mut stream = Stream::training();
    for _ in 0..STREAM {
        device.learn(stream.next_example().unwrap()).unwrap();
    }
    let mut direct = vec![0.0f32; DIM];
    device.means_into(&mut direct).unwrap();
    let direct_correct = device.correct(&mut Stream::held_out(), HELD_OUT).unwrap();

    // Through the C functions, into storage that held another learner first.
    let mut l = learner();
    // SAFETY: `l` is live and exclusively borrowed.
    assert_eq!(unsafe { sgld_learner_init(&mut *l, 77) }, SGLD_OK);
    let mut other = Stream::held_out();
    for _ in 0..100 {
        assert_eq!(push(&mut l, &other.next_example().unwrap()), SGLD_OK);
    }
    // SAFETY: as above.
    assert_eq!(unsafe { sgld_learner_init(&mut *l, 2011) }, SGLD_OK);
    let mut stream = Stream::training();
    for _ in 0..STREAM {
        assert_eq!(push(&mut l, &stream.next_example().unwrap()), SGLD_OK);
    }
    let through_c = means(&l);
    assert_eq!(
        direct.iter().map(|m| m.to_bits()).collect::<Vec<_>>(),
        through_c.iter().map(|m| m.to_bits()).collect::<Vec<_>>()
    );

    let mut held_out = Stream::held_out();
    let mut correct = 0;
    for _ in 0..HELD_OUT {
        let ex = held_out.next_example().unwrap();
        let idx: Vec<u8> = ex.indices().to_vec();
        let mut margin = f32::NAN;
        // SAFETY: `idx` holds its length in bytes; `margin` is one writable float.
        let code = unsafe { sgld_learner_margin(&*l, idx.as_ptr(), idx.len(), &mut margin) };
        assert_eq!(code, SGLD_OK);
        correct += u32::from((margin > 0.0) == (ex.label() > 0.0));
    }
    assert_eq!(correct, direct_correct);
    assert!(correct as f64 / HELD_OUT as f64 >= 0.89, "{correct}");
}

#[test]
fn every_status_has_its_own_message() {
    let codes = [
        SGLD_OK,
        SGLD_SKIPPED,
        SGLD_ERR_NULL,
        SGLD_ERR_ALIGNMENT,
        SGLD_ERR_NOT_INITIALISED,
        SGLD_ERR_LENGTH,
        SGLD_ERR_INDEX,
        SGLD_ERR_INVALID,
        SGLD_ERR_NON_FINITE,
        42,
    ];
    // SAFETY: each pointer is a static NUL-terminated string.
    let messages: Vec<&CStr> = codes
        .iter()
        .map(|&c| unsafe { CStr::from_ptr(sgld_status_message(c)) })
        .collect();
    for (i, m) in messages.iter().enumerate() {
        assert!(!m.is_empty());
        assert!(messages[..i].iter().all(|other| other != m), "{m:?}");
    }
    assert_eq!(messages[9], c"unknown status");
}
