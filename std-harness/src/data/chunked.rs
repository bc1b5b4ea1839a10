//! Text files at disk speed: a file read once in blocks of whole lines, each block's lines
//! parsed in parallel pieces, and the file's sha256 computed beside the parse in the same
//! pass. Memory is a few blocks and what the parse keeps, not the file.
//!
//! A regular file's blocks are memory maps of the page cache, a block each: the parse and
//! the hash read the file's pages where the kernel keeps them, and nothing copies them
//! (a copy into buffers cost as much as the hash). A pipe's are read into buffers.

use std::io::Read;
use std::path::Path;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::DataError;

/// Bytes read at a time (a line longer than this grows the block).
pub const BLOCK: usize = 16 << 20;

/// Bytes below which a block is parsed as one piece.
const MIN_PIECE: usize = 256 << 10;

/// Reads `path` in blocks of whole lines and calls `parse(block, first_line)` on each in
/// file order, `first_line` being the 1-based line number of the block's first line; the
/// last line need not end in a newline. A reader thread maps (or reads), hashes and
/// counts the lines of the next block while `parse` runs on this one. Returns the file's
/// sha256 (lowercase hex).
pub fn read_blocks<E>(
    path: &Path,
    parse: impl FnMut(&[u8], usize) -> Result<(), E>,
    io_error: impl Fn(DataError) -> E,
) -> Result<String, E> {
    let cannot = |e: std::io::Error| io_error(DataError::new(path, 0, format!("cannot read: {e}")));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if meta.is_file() && meta.len() > 0 && map_block(&file, 0, 1).is_ok() {
        mapped_blocks(file, meta.len() as usize, parse, cannot)
    } else {
        read_blocks_by_reads(file, parse, cannot)
    }
}

/// A read-only map of `len` bytes of `file` from byte `start`, its pages read in as it
/// is made.
fn map_block(file: &std::fs::File, start: usize, len: usize) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the map is read-only and dropped when its block has been parsed and
    // hashed. Rust's guarantees for the `&[u8]` it gives hold while no other process
    // truncates or rewrites the file during the read (then the bytes would change under
    // the parse, or a vanished page end the process with SIGBUS), which docs/sample.md
    // asks of every data file, as every memory-mapped reader must. Tests: the blocks and
    // hash of a mapped file are those of the same file read into buffers
    // (`tests::mapped_and_read_blocks_agree`).
    unsafe {
        memmap2::MmapOptions::new()
            .offset(start as u64)
            .len(len)
            .populate()
            .map(file)
    }
}

/// [`read_blocks`] of a regular file of `len > 0` bytes through a map of each block.
fn mapped_blocks<E>(
    file: std::fs::File,
    len: usize,
    mut parse: impl FnMut(&[u8], usize) -> Result<(), E>,
    cannot: impl Fn(std::io::Error) -> E,
) -> Result<String, E> {
    use std::sync::Arc;
    std::thread::scope(|scope| {
        // Two blocks in flight, each its map and the length of its whole lines.
        let (tx, rx) = std::sync::mpsc::sync_channel::<(Arc<memmap2::Mmap>, usize, usize)>(2);
        let reader = scope.spawn(move || -> std::io::Result<String> {
            let mut hasher = Sha256::new();
            let (mut start, mut line, mut want) = (0usize, 1usize, BLOCK);
            while start < len {
                let map = map_block(&file, start, want.min(len - start))?;
                let end = if start + map.len() == len {
                    map.len()
                } else {
                    match memchr::memrchr(b'\n', &map) {
                        Some(i) => i + 1,
                        // One line longer than the block: a larger map.
                        None => {
                            want *= 2;
                            continue;
                        }
                    }
                };
                let map = Arc::new(map);
                if tx.send((Arc::clone(&map), end, line)).is_err() {
                    // The parse stopped at an error.
                    break;
                }
                let lines = count_and_hash(&map[..end], &mut hasher);
                (start, line, want) = (start + end, line + lines, BLOCK);
            }
            Ok(super::registry::hex(&hasher.finalize()))
        });
        let mut parsed = Ok(());
        for (map, end, first) in rx.iter() {
            if let Err(e) = parse(&map[..end], first) {
                parsed = Err(e);
                break;
            }
        }
        // Dropping the receiver stops a reader still sending.
        drop(rx);
        let sha = reader.join().expect("the reader thread does not panic");
        parsed?;
        sha.map_err(cannot)
    })
}

/// The newlines in `bytes`, hashing them on the way: both in pieces that stay in cache,
/// so that a block is read from memory once, not once for each.
fn count_and_hash(bytes: &[u8], hasher: &mut Sha256) -> usize {
    const PIECE: usize = 64 << 10;
    bytes
        .chunks(PIECE)
        .map(|piece| {
            hasher.update(piece);
            memchr::memchr_iter(b'\n', piece).count()
        })
        .sum()
}

/// [`read_blocks`] by reads into buffers (a pipe, an empty file).
fn read_blocks_by_reads<E>(
    file: std::fs::File,
    mut parse: impl FnMut(&[u8], usize) -> Result<(), E>,
    cannot: impl Fn(std::io::Error) -> E,
) -> Result<String, E> {
    std::thread::scope(|scope| {
        // Two blocks in flight; parsed blocks' buffers go back to the reader.
        let (tx, rx) = std::sync::mpsc::sync_channel::<(Vec<u8>, usize)>(2);
        let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let reader = scope.spawn(move || read_ahead(file, &tx, &back_rx));
        let mut parsed = Ok(());
        for (block, first) in rx.iter() {
            if let Err(e) = parse(&block, first) {
                parsed = Err(e);
                break;
            }
            let _ = back_tx.send(block);
        }
        // Dropping the receiver stops a reader still sending.
        drop(rx);
        let sha = reader.join().expect("the reader thread does not panic");
        parsed?;
        sha.map_err(cannot)
    })
}

/// The reader of [`read_blocks`]: sends blocks of whole lines with their first line's
/// number; the file's sha256 when it has sent the last.
fn read_ahead(
    mut file: std::fs::File,
    tx: &std::sync::mpsc::SyncSender<(Vec<u8>, usize)>,
    back: &std::sync::mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut carry: Vec<u8> = Vec::new();
    let mut line = 1usize;
    loop {
        let mut buf = back.try_recv().unwrap_or_default();
        buf.clear();
        buf.append(&mut carry);
        let carried = buf.len();
        let want = BLOCK.max(carried);
        let got = (&mut file).take(want as u64).read_to_end(&mut buf)?;
        hasher.update(&buf[carried..]);
        let eof = got < want;
        let end = if eof {
            buf.len()
        } else {
            match memchr::memrchr(b'\n', &buf) {
                Some(i) => i + 1,
                // One line longer than the block: read on.
                None => {
                    carry = buf;
                    continue;
                }
            }
        };
        carry.extend_from_slice(&buf[end..]);
        buf.truncate(end);
        let lines = memchr::memchr_iter(b'\n', &buf).count();
        if tx.send((buf, line)).is_err() {
            // The parse stopped at an error.
            break;
        }
        line += lines;
        if eof {
            break;
        }
    }
    Ok(super::registry::hex(&hasher.finalize()))
}

/// Reads until `buf` is full or the file ends; the bytes read.
pub(crate) fn fill(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Splits `block` (whole lines) into pieces of whole lines, one or more per thread, and
/// runs `f(piece, first_line)` on them in parallel; the results in order, or the error of
/// the earliest piece that failed.
pub fn par_pieces<T: Send, E: Send>(
    block: &[u8],
    first_line: usize,
    f: impl Fn(&[u8], usize) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E> {
    let want = (rayon::current_num_threads() * 2).clamp(1, block.len() / MIN_PIECE + 1);
    let mut pieces = Vec::with_capacity(want);
    let mut start = 0;
    for k in 1..want {
        let at = (block.len() * k / want).max(start);
        let end = match memchr::memchr(b'\n', &block[at..]) {
            Some(i) => at + i + 1,
            None => block.len(),
        };
        if end > start {
            pieces.push(&block[start..end]);
            start = end;
        }
    }
    if start < block.len() {
        pieces.push(&block[start..]);
    }
    let newlines: Vec<usize> = pieces
        .par_iter()
        .map(|p| memchr::memchr_iter(b'\n', p).count())
        .collect();
    let firsts: Vec<usize> = newlines
        .iter()
        .scan(first_line, |l, n| {
            let this = *l;
            *l += n;
            Some(this)
        })
        .collect();
    // Every piece's result, then the first error in file order (collecting into a
    // `Result` would keep whichever error came first in time).
    let results: Vec<Result<T, E>> = pieces
        .par_iter()
        .zip(firsts)
        .map(|(p, l)| f(p, l))
        .collect();
    results.into_iter().collect()
}

/// The lines of `piece` numbered from `first_line`, without their line ending (`\n` or
/// `\r\n`). Each line's end is found by `memchr` (a vector scan), not a byte at a time.
pub fn numbered_lines(piece: &[u8], first_line: usize) -> impl Iterator<Item = (usize, &[u8])> {
    let mut rest = Some(piece.strip_suffix(b"\n").unwrap_or(piece));
    let mut line = first_line;
    std::iter::from_fn(move || {
        let text = rest?;
        let (this, next) = match memchr::memchr(b'\n', text) {
            Some(i) => (&text[..i], Some(&text[i + 1..])),
            None => (text, None),
        };
        rest = next;
        line += 1;
        Some((line - 1, this.strip_suffix(b"\r").unwrap_or(this)))
    })
}

/// A finite f32 from ASCII text, surrounding whitespace allowed.
pub fn finite_f32(text: &[u8]) -> Option<f32> {
    fast_float2::parse::<f32, _>(text.trim_ascii())
        .ok()
        .filter(|v| v.is_finite())
}

/// The first cell of `row` (up to a comma or the end) as a finite f32, surrounding
/// whitespace allowed, and what follows its comma; `None` when the cell is not a finite
/// number. One pass: the number is parsed where it starts and must end the cell.
#[inline(always)]
pub fn next_f32(row: &[u8]) -> Option<(f32, &[u8])> {
    let row = row.trim_ascii_start();
    let (v, used) = match short_decimal(row) {
        Some(parsed) => parsed,
        None => fast_float2::parse_partial::<f32, _>(row).ok()?,
    };
    let rest = row[used..].trim_ascii_start();
    let rest = match rest.split_first() {
        None => rest,
        Some((b',', after)) => after,
        Some(_) => return None,
    };
    v.is_finite().then_some((v, rest))
}

/// Powers of ten, each exact in f32 too (`5⁷ < 2²⁴`).
const POW10: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// Clinger's fast path for what numeric exports mostly write: `[±]digits[.digits]`
/// with at most seven significant digits (`m < 2²⁴`) and at most seven on either side
/// of the point. Then `m` and `10ᵏ` are exact in f32 and one division rounds correctly,
/// as the full parser would; anything else (`None`) goes to it. The value and the bytes
/// used.
#[inline(always)]
fn short_decimal(s: &[u8]) -> Option<(f32, usize)> {
    // Without a branch: signs come in no order a predictor could learn.
    let first = s.first().copied().unwrap_or_default();
    let neg = first == b'-';
    let mut i = (neg | (first == b'+')) as usize;
    let (mut m, mut digits) = digit_run(s, i)?;
    i += digits;
    let mut scale = 0;
    if s.get(i) == Some(&b'.') {
        let (frac, k) = digit_run(s, i + 1)?;
        i += 1 + k;
        m = m * POW10[k] + frac;
        (digits, scale) = (digits + k, k);
    }
    if digits == 0 || m >= 1 << 24 || matches!(s.get(i), Some(b'e' | b'E' | b'_' | b'.')) {
        return None;
    }
    let v = m as f32 / POW10[scale] as f32;
    Some((f32::from_bits(v.to_bits() | (neg as u32) << 31), i))
}

/// The run of ASCII digits at `s[i..]` as a number and its length, when shorter than 8
/// (`None` otherwise). Eight bytes at once where the slice has them: a byte is a digit
/// when its high nibble is 3 both as it is and with 6 added; a carry or borrow between
/// bytes starts only at a non-digit and runs towards later bytes, past the run.
#[inline(always)]
fn digit_run(s: &[u8], i: usize) -> Option<(u64, usize)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let Some(word) = s.get(i..i + 8) else {
        let tail = s.get(i..).unwrap_or_default();
        let k = tail.iter().take_while(|c| c.is_ascii_digit()).count();
        let m = tail[..k].iter().fold(0, |m, &c| m * 10 + (c - b'0') as u64);
        return Some((m, k));
    };
    let w = u64::from_le_bytes(word.try_into().ok()?);
    let high = |x: u64| (x & (0xF0 * ONES)) ^ (0x30 * ONES);
    let not_digit = high(w) | high(w.wrapping_add(6 * ONES));
    if not_digit == 0 {
        return None;
    }
    let k = (not_digit.trailing_zeros() / 8) as usize;
    if k == 0 {
        return Some((0, 0));
    }
    // The run's digit values in the top k bytes, zeros (leading digits 0) below.
    let d = w.wrapping_sub(0x30 * ONES) << (64 - 8 * k);
    Some((eight_digits(d), k))
}

/// Eight digit values (0–9, the first in the lowest byte) as one number: pairs, then
/// fours, then the eight, by multiplications that keep each partial sum in its lane.
fn eight_digits(d: u64) -> u64 {
    let pairs = d.wrapping_mul(10).wrapping_add(d >> 8);
    let lo = (pairs & 0x0000_00FF_0000_00FF).wrapping_mul(100 + (1_000_000 << 32));
    let hi = ((pairs >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32));
    lo.wrapping_add(hi) >> 32
}

/// The sha256 (lowercase hex) of a file, read in blocks.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let got = fill(&mut file, &mut buf)?;
        hasher.update(&buf[..got]);
        if got < buf.len() {
            return Ok(super::registry::hex(&hasher.finalize()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocks and hash of `text` in a file, mapped; checked against the same file
    /// read into buffers: both cover the text in blocks of whole lines, numbered on.
    fn blocks_of(text: &[u8]) -> (Vec<(usize, Vec<u8>)>, String) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        std::fs::write(&p, text).unwrap();
        let blocks = |mapped: bool| {
            let mut seen = Vec::new();
            let take = |b: &[u8], l| {
                seen.push((l, b.to_vec()));
                Ok::<(), std::io::Error>(())
            };
            let file = std::fs::File::open(&p).unwrap();
            let sha = if mapped {
                mapped_blocks(file, text.len(), take, |e| e)
            } else {
                read_blocks_by_reads(file, take, |e| e)
            };
            let (mut next, mut all) = (1, Vec::new());
            for (k, (l, b)) in seen.iter().enumerate() {
                assert_eq!(*l, next);
                assert!(k + 1 == seen.len() || b.ends_with(b"\n"));
                next += b.iter().filter(|&&c| c == b'\n').count();
                all.extend_from_slice(b);
            }
            assert_eq!(all, text);
            (seen, sha.unwrap())
        };
        let (seen, sha) = blocks(!text.is_empty());
        assert_eq!(sha, sha256_file(&p).unwrap());
        assert_eq!(blocks(false).1, sha);
        let through = read_blocks(&p, |_, _| Ok(()), |e| e).unwrap();
        assert_eq!(through, sha);
        (seen, sha)
    }

    #[test]
    fn mapped_and_read_blocks_agree() {
        let text: Vec<u8> = (0..400_000)
            .flat_map(|i| format!("{i},{}\n", i * 7).into_bytes())
            .collect();
        let (seen, _) = blocks_of(&text);
        assert_eq!(seen.iter().map(|(_, b)| b.len()).sum::<usize>(), text.len());
        // No final newline, a one-byte file, an empty one.
        blocks_of(&text[..text.len() - 1]);
        assert_eq!(blocks_of(b"7").0, vec![(1, b"7".to_vec())]);
        blocks_of(b"");
        // A parse that stops at an error stops the reader.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        std::fs::write(&p, text.repeat(40)).unwrap();
        let mut calls = 0;
        let got = read_blocks(
            &p,
            |_, _| {
                calls += 1;
                Err::<(), _>(DataError::new(&p, 1, "stop"))
            },
            |e| e,
        );
        assert_eq!(
            got.unwrap_err().to_string(),
            format!("{}:1: stop", p.display())
        );
        assert_eq!(calls, 1);
    }

    #[test]
    fn blocks_are_whole_lines_and_the_hash_is_the_files() {
        let (seen, sha) = blocks_of(b"a,b\n1,2\n3,4");
        assert_eq!(seen, vec![(1, b"a,b\n1,2\n3,4".to_vec())]);
        assert_eq!(
            sha,
            super::super::registry::hex(&Sha256::digest(b"a,b\n1,2\n3,4"))
        );
        // Larger than a block: every block but the last ends in a newline, and the lines
        // are numbered on.
        let line = b"0.125,-3.5,7\n";
        let text: Vec<u8> = line.repeat(BLOCK / line.len() * 2 + 7);
        let (seen, _) = blocks_of(&text);
        assert!(seen.len() >= 2);
        let mut next = 1;
        for (l, b) in &seen {
            assert_eq!(*l, next);
            assert!(b.ends_with(b"\n"));
            next += b.iter().filter(|&&c| c == b'\n').count();
        }
        assert_eq!(seen.iter().map(|(_, b)| b.len()).sum::<usize>(), text.len());
    }

    #[test]
    fn a_line_longer_than_a_block_is_kept_whole() {
        let mut text = vec![b'7'; BLOCK + 10];
        text.extend_from_slice(b"\n1\n");
        let (seen, _) = blocks_of(&text);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].1.len(), text.len());
    }

    #[test]
    fn pieces_cover_the_block_with_their_line_numbers() {
        let text: Vec<u8> = (0..100_000)
            .flat_map(|i| format!("{i}\r\n").into_bytes())
            .collect();
        let got = par_pieces(&text, 1, |p, l| {
            Ok::<_, ()>(numbered_lines(p, l).map(|(l, s)| (l, s.to_vec())).collect())
        })
        .unwrap();
        let all: Vec<(usize, Vec<u8>)> = got.into_iter().flat_map(|v: Vec<_>| v).collect();
        assert_eq!(all.len(), 100_000);
        for (k, (l, s)) in all.iter().enumerate() {
            assert_eq!(*l, k + 1);
            assert_eq!(s, k.to_string().as_bytes());
        }
        // The earliest failing piece's error wins, even when a later piece fails first.
        let err = par_pieces(&text, 1, |p, l| {
            match numbered_lines(p, l).find(|(_, s)| s == b"30000" || s == b"90000") {
                Some((l, _)) => {
                    if l < 90_000 {
                        std::thread::sleep(std::time::Duration::from_millis(200));
                    }
                    Err(l)
                }
                None => Ok(()),
            }
        });
        assert_eq!(err, Err(30_001));
    }

    /// A deterministic stream of random words: the crate's generator.
    fn words(seed: u64) -> impl FnMut() -> u64 {
        let mut rng = sgld::noise::default_rng(seed);
        move || rand_core::Rng::next_u64(&mut rng)
    }

    #[test]
    fn the_fast_path_rounds_as_std_does() {
        let mut next = words(0x2545_f491_4f6c_dd1d);
        for _ in 0..200_000 {
            let r = next();
            let digits = 1 + (r % 7) as usize;
            let m = (r >> 8) % 10u64.pow(digits as u32);
            let point = ((r >> 40) % 12) as usize;
            let text = format!("{m:0digits$}");
            let text = if point < text.len() {
                format!(
                    "{}{}.{}",
                    if r & 1 == 1 { "-" } else { "" },
                    &text[..text.len() - point],
                    &text[text.len() - point..]
                )
            } else {
                text
            };
            let std: f32 = text.parse().unwrap();
            assert_eq!(
                next_f32(text.as_bytes()).map(|(v, _)| v),
                Some(std),
                "{text}"
            );
        }
        // Long or exponent forms go to the full parser, with the same result.
        for text in ["123456789", "1.2345678e3", "0.000000000001", "-.5", "7."] {
            let std: f32 = text.parse().unwrap();
            assert_eq!(
                next_f32(text.as_bytes()).map(|(v, _)| v),
                Some(std),
                "{text}"
            );
        }
    }

    /// The eight-at-a-time digit runs against a byte-at-a-time reading of the same
    /// grammar, on random text around and after the number (the word read runs past the
    /// cell, and past the slice's end on the short path).
    #[test]
    fn digit_runs_read_as_one_byte_at_a_time() {
        fn bytewise(s: &[u8]) -> Option<(f32, usize)> {
            let (neg, mut i) = match s.first() {
                Some(b'-') => (true, 1),
                Some(b'+') => (false, 1),
                _ => (false, 0),
            };
            let (mut m, mut run, mut digits, mut scale, mut point) = (0u64, 0, 0, 0, false);
            while let Some(&c) = s.get(i) {
                match c {
                    b'0'..=b'9' => {
                        m = m * 10 + (c - b'0') as u64;
                        (run, digits, scale) = (run + 1, digits + 1, scale + point as usize);
                        if run == 8 {
                            return None;
                        }
                    }
                    b'.' if !point => (point, run) = (true, 0),
                    b'e' | b'E' | b'_' | b'.' => return None,
                    _ => break,
                }
                i += 1;
            }
            if digits == 0 || m >= 1 << 24 {
                return None;
            }
            let v = m as f32 / POW10[scale] as f32;
            Some((if neg { -v } else { v }, i))
        }
        let alphabet = b"0123456789012345678901234567890123456789..--+e ,x/:\xff\xfa";
        let mut next = words(0x9e37_79b9_7f4a_7c15);
        let mut fast = 0;
        for _ in 0..300_000 {
            let r = next();
            let len = (r % 14) as usize;
            let text: Vec<u8> = (0..len)
                .map(|k| alphabet[((r >> (4 + 4 * k)) as usize ^ (k * 7)) % alphabet.len()])
                .collect();
            let want = bytewise(&text);
            assert_eq!(
                short_decimal(&text),
                want,
                "{:?}",
                String::from_utf8_lossy(&text)
            );
            fast += want.is_some() as usize;
        }
        assert!(
            fast > 10_000,
            "{fast} of the random texts took the fast path"
        );
        // Runs of every length at every offset of a longer slice, and at its end.
        for k in 0..=9 {
            let digits = &"987654321"[..k];
            for text in [
                format!("{digits},1"),
                digits.to_string(),
                format!("0.{digits}x"),
            ] {
                let text = text.as_bytes();
                assert_eq!(short_decimal(text), bytewise(text), "{k}");
            }
        }
    }

    /// Lines found by `memchr` are those of splitting at every `\n` (one final `\n`
    /// ending the last line, a `\r` before a `\n` dropped), on random texts of
    /// newlines, carriage returns, commas and letters, empty ones and long ones.
    #[test]
    fn lines_split_as_at_every_newline() {
        let split = |text: &[u8], first: usize| -> Vec<(usize, Vec<u8>)> {
            let text = text.strip_suffix(b"\n").unwrap_or(text);
            text.split(|&b| b == b'\n')
                .enumerate()
                .map(|(k, l)| (first + k, l.strip_suffix(b"\r").unwrap_or(l).to_vec()))
                .collect()
        };
        let alphabet = b"\n\r,ab";
        let mut next = words(0x5851_f42d_4c95_7f2d);
        for _ in 0..20_000 {
            let r = next();
            let len = (r % 40) as usize;
            let text: Vec<u8> = (0..len)
                .map(|k| alphabet[(r.rotate_left(3 * k as u32) as usize ^ k) % alphabet.len()])
                .collect();
            let got: Vec<(usize, Vec<u8>)> = numbered_lines(&text, 7)
                .map(|(l, s)| (l, s.to_vec()))
                .collect();
            assert_eq!(got, split(&text, 7), "{:?}", String::from_utf8_lossy(&text));
        }
        let long = [b"x".repeat(1000), b"\r\n".to_vec(), b"y".repeat(70)].concat();
        assert_eq!(numbered_lines(&long, 1).count(), 2);
    }

    #[test]
    fn numbers_parse_as_std_does() {
        for s in ["1", "-2.5", "+3", " 4e-3 ", ".5", "5.", "1E5", "0x1"] {
            let std = s.trim().parse::<f32>().ok().filter(|v| v.is_finite());
            assert_eq!(finite_f32(s.as_bytes()), std, "{s}");
        }
        for s in ["", "inf", "NaN", "1e99", "foo", "1,2"] {
            assert_eq!(finite_f32(s.as_bytes()), None, "{s}");
        }
        // Cells of a row, one at a time.
        let (v, rest) = next_f32(b" 1.5 ,-2,3e1").unwrap();
        assert_eq!((v, rest), (1.5, &b"-2,3e1"[..]));
        let (v, rest) = next_f32(rest).unwrap();
        assert_eq!((v, rest), (-2.0, &b"3e1"[..]));
        assert_eq!(next_f32(rest), Some((30.0, &b""[..])));
        // A negative zero keeps its sign, as std reads it.
        let zero = next_f32(b"-0.0,1").unwrap().0;
        assert_eq!(zero.to_bits(), (-0.0f32).to_bits());
        for bad in [&b"1x,2"[..], b"1 2,3", b",1", b"", b"nan,1", b"1e,2"] {
            assert_eq!(next_f32(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
