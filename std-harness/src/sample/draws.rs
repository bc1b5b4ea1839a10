//! A chain's kept draws, rows of `d` f32: in memory, or streamed to the chain's `.npy`
//! file as they are produced, so that a run's memory does not grow with its length.
//!
//! A file-backed store keeps at most [`BUFFER_BYTES`] of rows in memory and appends them
//! to the file when full; its readers ([`Draws::rows`]) read the file back in chunks.
//! [`Draws::finish`] writes the rest and the `.npy` header with the final shape (the
//! header has a fixed length, so it is rewritten in place).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Rows held in memory before they go to the file (4 MiB).
pub const BUFFER_BYTES: usize = 4 << 20;

/// Bytes of a `.npy` header here: always 128, whatever the shape.
pub const NPY_HEADER: usize = 128;

/// A version 1.0 `.npy` header for a C-order `(rows, cols)` array of little-endian f32,
/// [`NPY_HEADER`] bytes long (the data start on a 64-byte boundary).
pub fn npy_header(rows: usize, cols: usize) -> [u8; NPY_HEADER] {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    let mut h = [b' '; NPY_HEADER];
    h[..8].copy_from_slice(b"\x93NUMPY\x01\x00");
    h[8..10].copy_from_slice(&((NPY_HEADER - 10) as u16).to_le_bytes());
    // Two usize of at most 20 digits each keep the dictionary under 117 bytes.
    h[10..10 + dict.len()].copy_from_slice(dict.as_bytes());
    h[NPY_HEADER - 1] = b'\n';
    h
}

/// The rows' file.
#[derive(Debug)]
struct Spill {
    path: PathBuf,
    file: File,
    /// Rows in the file.
    rows: usize,
}

/// The kept draws of one chain.
#[derive(Debug)]
pub struct Draws {
    d: usize,
    /// Rows not (yet) in the file.
    buf: Vec<f32>,
    spill: Option<Spill>,
}

impl Draws {
    /// An empty store of rows of `d` values, in memory.
    pub fn in_memory(d: usize) -> Self {
        Self {
            d,
            buf: Vec::new(),
            spill: None,
        }
    }

    /// An empty store of rows of `d` values streamed to the `.npy` file `path`.
    pub fn to_file(d: usize, path: &Path) -> Result<Self, String> {
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        file.write_all(&npy_header(0, d))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(Self {
            d,
            buf: Vec::new(),
            spill: Some(Spill {
                path: path.to_path_buf(),
                file,
                rows: 0,
            }),
        })
    }

    /// The file the rows stream to, if any.
    pub fn path(&self) -> Option<&Path> {
        self.spill.as_ref().map(|s| s.path.as_path())
    }

    /// Values per row.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// Rows stored.
    pub fn len(&self) -> usize {
        self.spill.as_ref().map_or(0, |s| s.rows) + self.buf.len() / self.d.max(1)
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a row (`d` values).
    pub fn push(&mut self, row: &[f32]) -> Result<(), String> {
        self.buf.extend_from_slice(row);
        if self.spill.is_some() && self.buf.len() * 4 >= BUFFER_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Moves the buffered rows to the file.
    fn flush(&mut self) -> Result<(), String> {
        let Some(s) = &mut self.spill else {
            return Ok(());
        };
        // Little-endian bytes through a small fixed buffer (no allocation a flush).
        let mut bytes = [0u8; 1 << 16];
        for part in self.buf.chunks(bytes.len() / 4) {
            for (b, v) in bytes.chunks_exact_mut(4).zip(part) {
                b.copy_from_slice(&v.to_le_bytes());
            }
            s.file
                .write_all(&bytes[..4 * part.len()])
                .map_err(|e| format!("cannot write {}: {e}", s.path.display()))?;
        }
        s.rows += self.buf.len() / self.d.max(1);
        self.buf.clear();
        Ok(())
    }

    /// Drops every row.
    pub fn clear(&mut self) -> Result<(), String> {
        self.buf.clear();
        if let Some(s) = &mut self.spill {
            let io = |e: std::io::Error| format!("cannot write {}: {e}", s.path.display());
            s.file.set_len(NPY_HEADER as u64).map_err(io)?;
            s.file
                .seek(SeekFrom::Start(NPY_HEADER as u64))
                .map_err(io)?;
            s.rows = 0;
        }
        Ok(())
    }

    /// Writes the buffered rows and the header with the final shape: the file is then a
    /// complete `.npy` of every row.
    pub fn finish(&mut self) -> Result<(), String> {
        self.flush()?;
        let d = self.d;
        if let Some(s) = &mut self.spill {
            let io = |e: std::io::Error| format!("cannot write {}: {e}", s.path.display());
            s.file.seek(SeekFrom::Start(0)).map_err(io)?;
            s.file.write_all(&npy_header(s.rows, d)).map_err(io)?;
            s.file.seek(SeekFrom::End(0)).map_err(io)?;
            s.file.flush().map_err(io)?;
        }
        Ok(())
    }

    /// Calls `f(k, row)` for rows `k` of `range` in order (clipped to the rows stored),
    /// reading the file in chunks; stops at `f`'s first error.
    pub fn rows(
        &self,
        range: Range<usize>,
        mut f: impl FnMut(usize, &[f32]) -> Result<(), String>,
    ) -> Result<(), String> {
        let d = self.d.max(1);
        let end = range.end.min(self.len());
        let mut vals = Vec::new();
        let k = self.file_chunks(range.start, end, |first, bytes| {
            vals.clear();
            vals.extend(
                bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
            for (i, row) in vals.chunks_exact(d).enumerate() {
                f(first + i, row)?;
            }
            Ok(())
        })?;
        let first = self.spill.as_ref().map_or(0, |s| s.rows);
        for k in k..end {
            let at = (k - first) * d;
            f(k, &self.buf[at..at + d])?;
        }
        Ok(())
    }

    /// Hands `f(first row, bytes)` the file's rows from `start` to `end` (those of them
    /// in the file) in chunks of whole rows; returns the row after the last one read.
    fn file_chunks(
        &self,
        start: usize,
        end: usize,
        mut f: impl FnMut(usize, &[u8]) -> Result<(), String>,
    ) -> Result<usize, String> {
        let Some(s) = &self.spill else {
            return Ok(start);
        };
        let file_end = s.rows.min(end);
        if start >= file_end {
            return Ok(start);
        }
        let d = self.d.max(1);
        let io = |e: std::io::Error| format!("cannot read {}: {e}", s.path.display());
        let mut file = File::open(&s.path).map_err(io)?;
        file.seek(SeekFrom::Start((NPY_HEADER + start * d * 4) as u64))
            .map_err(io)?;
        let chunk_rows = (BUFFER_BYTES / (4 * d)).max(1);
        let mut bytes = vec![0u8; chunk_rows * d * 4];
        let mut k = start;
        while k < file_end {
            let n = chunk_rows.min(file_end - k);
            file.read_exact(&mut bytes[..n * d * 4]).map_err(io)?;
            f(k, &bytes[..n * d * 4])?;
            k += n;
        }
        Ok(k)
    }

    /// Columns `js` of rows `range`, column by column (`js.len()` runs of the rows).
    pub fn columns(&self, js: Range<usize>, range: Range<usize>) -> Result<Vec<f32>, String> {
        let n = range.end.min(self.len()).saturating_sub(range.start);
        let mut cols = vec![0.0f32; js.len() * n];
        self.columns_into(js, range, &mut cols, n)?;
        Ok(cols)
    }

    /// Writes column `js.start + jj` of row `range.start + i` to `out[jj·stride + i]`,
    /// decoding only those columns of the file's rows.
    pub fn columns_into(
        &self,
        js: Range<usize>,
        range: Range<usize>,
        out: &mut [f32],
        stride: usize,
    ) -> Result<(), String> {
        let d = self.d.max(1);
        let start = range.start;
        let end = range.end.min(self.len());
        let k = self.file_chunks(start, end, |first, bytes| {
            for (i, row) in bytes.chunks_exact(d * 4).enumerate() {
                let part = &row[js.start * 4..js.end * 4];
                for (jj, b) in part.chunks_exact(4).enumerate() {
                    out[jj * stride + first + i - start] =
                        f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
            Ok(())
        })?;
        self.rows(k..end, |k, row| {
            for (jj, &v) in row[js.clone()].iter().enumerate() {
                out[jj * stride + k - start] = v;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(k: usize, d: usize) -> Vec<f32> {
        (0..d).map(|j| (k * 1000 + j) as f32).collect()
    }

    /// In memory or through the file (with flushes: rows of 300 KiB, so a flush every
    /// 14 rows), the same rows come back, a part of them, the columns; `clear` starts
    /// over; `finish` leaves a complete `.npy`.
    #[test]
    fn rows_come_back_from_memory_and_from_the_file() {
        let d = 75_000;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.npy");
        for mut store in [Draws::in_memory(d), Draws::to_file(d, &path).unwrap()] {
            for k in 0..3 {
                store.push(&row(k, d)).unwrap();
            }
            store.clear().unwrap();
            for k in 0..40 {
                store.push(&row(k, d)).unwrap();
            }
            assert_eq!(store.len(), 40);
            let mut seen = vec![];
            store
                .rows(5..33, |k, r| {
                    assert_eq!(r, &row(k, d)[..]);
                    seen.push(k);
                    Ok(())
                })
                .unwrap();
            assert_eq!(seen, (5..33).collect::<Vec<_>>());
            let cols = store.columns(7..9, 10..41).unwrap();
            assert_eq!(cols.len(), 2 * 30);
            assert_eq!(
                (cols[0], cols[29], cols[30]),
                (10_007.0, 39_007.0, 10_008.0)
            );
            store.finish().unwrap();
            assert_eq!(store.len(), 40);
            store
                .rows(38..40, |k, r| {
                    assert_eq!(r, &row(k, d)[..]);
                    Ok(())
                })
                .unwrap();
        }
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), NPY_HEADER + 40 * d * 4);
        assert_eq!(&bytes[..NPY_HEADER], &npy_header(40, d));
        let at = NPY_HEADER + (39 * d + 2) * 4;
        assert_eq!(
            f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()),
            39_002.0
        );
    }

    #[test]
    fn npy_headers_are_128_bytes_for_any_shape() {
        for (r, c) in [(0, 1), (4000, 124), (usize::MAX, usize::MAX)] {
            let h = npy_header(r, c);
            assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
            assert_eq!(u16::from_le_bytes([h[8], h[9]]) as usize, NPY_HEADER - 10);
            assert_eq!(h[NPY_HEADER - 1], b'\n');
            let text = std::str::from_utf8(&h[10..]).unwrap();
            assert!(text.starts_with(&format!(
                "{{'descr': '<f4', 'fortran_order': False, 'shape': ({r}, {c}), }}"
            )));
        }
    }
}
