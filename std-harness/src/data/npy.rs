//! NumPy `.npy` arrays (format versions 1–3): a 2-D design, its response one of its
//! columns (`--target INDEX`, default the last) or a 1-D labels file of its own. Values
//! of any real dtype NumPy writes (`f4`, `f8`, integers, `bool`, little- or big-endian)
//! become f32. A little-endian f32 design in C order whose response, if it holds one, is
//! its first or last column is read in place from a memory map ([`MappedDesign`]);
//! others are read once, a block of rows at a time straight into the design. Either way
//! the file is hashed in the same pass.

use std::io::{Read, Seek, Write};
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::{Checksum, DataError, Dataset, Features, MappedDesign};

/// Rows read at a time.
const BLOCK_BYTES: usize = 8 << 20;

/// An element type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Dtype {
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
}

impl Dtype {
    fn size(self) -> usize {
        match self {
            Dtype::I8 | Dtype::U8 | Dtype::Bool => 1,
            Dtype::I16 | Dtype::U16 => 2,
            Dtype::F32 | Dtype::I32 | Dtype::U32 => 4,
            Dtype::F64 | Dtype::I64 | Dtype::U64 => 8,
        }
    }

    /// The value of one element's bytes.
    fn value(self, b: &[u8], big: bool) -> f64 {
        macro_rules! num {
            ($t:ty, $n:literal) => {{
                let a: [u8; $n] = b.try_into().expect("sized by the dtype");
                (if big {
                    <$t>::from_be_bytes(a)
                } else {
                    <$t>::from_le_bytes(a)
                }) as f64
            }};
        }
        match self {
            Dtype::F32 => num!(f32, 4),
            Dtype::F64 => num!(f64, 8),
            Dtype::I8 => b[0] as i8 as f64,
            Dtype::U8 => b[0] as f64,
            Dtype::Bool => (b[0] != 0) as u8 as f64,
            Dtype::I16 => num!(i16, 2),
            Dtype::U16 => num!(u16, 2),
            Dtype::I32 => num!(i32, 4),
            Dtype::U32 => num!(u32, 4),
            Dtype::I64 => num!(i64, 8),
            Dtype::U64 => num!(u64, 8),
        }
    }
}

/// An array's header: element type and byte order, its shape, and whether it is stored
/// column by column (Fortran order, as `np.save(df.to_numpy())` writes a data frame).
#[derive(Debug)]
struct Header {
    dtype: Dtype,
    big: bool,
    shape: Vec<usize>,
    fortran: bool,
}

/// An array opened by [`open`]: its file just past the header, the header, and the
/// hash of the bytes read so far.
struct Opened {
    file: std::fs::File,
    h: Header,
    hasher: Sha256,
}

/// Reads the header (magic, version, dictionary) from `file`.
fn header(path: &Path, file: &mut impl Read, hasher: &mut Sha256) -> Result<Header, DataError> {
    let bad = |what: String| DataError::new(path, 0, what);
    let mut head = [0u8; 10];
    file.read_exact(&mut head)
        .map_err(|_| bad("not a .npy file (shorter than its header)".into()))?;
    if &head[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file (no \\x93NUMPY magic)".into()));
    }
    hasher.update(head);
    let len = match head[6] {
        1 => u16::from_le_bytes([head[8], head[9]]) as usize,
        2 | 3 => {
            let mut more = [0u8; 2];
            file.read_exact(&mut more)
                .map_err(|_| bad("truncated header".into()))?;
            hasher.update(more);
            u32::from_le_bytes([head[8], head[9], more[0], more[1]]) as usize
        }
        v => return Err(bad(format!(".npy format version {v} is not known"))),
    };
    if len > 1 << 20 {
        return Err(bad(format!("a header of {len} bytes is not a .npy header")));
    }
    let mut dict = vec![0u8; len];
    file.read_exact(&mut dict)
        .map_err(|_| bad("truncated header".into()))?;
    hasher.update(&dict);
    let dict = String::from_utf8_lossy(&dict);
    let field = |key: &str| -> Option<String> {
        let at = dict.find(&format!("'{key}'"))? + key.len() + 2;
        let rest = dict[at..].trim_start().strip_prefix(':')?.trim_start();
        let end = if rest.starts_with('(') {
            rest.find(')')? + 1
        } else {
            rest.find([',', '}'])?
        };
        Some(rest[..end].trim().to_string())
    };
    let descr = field("descr").ok_or_else(|| bad("header without 'descr'".into()))?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let (order, code) = descr.split_at_checked(1).unwrap_or((descr, ""));
    let big = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => return Err(bad(format!("dtype {descr:?} is not a number type"))),
    };
    let dtype = match code {
        "f4" => Dtype::F32,
        "f8" => Dtype::F64,
        "i1" => Dtype::I8,
        "i2" => Dtype::I16,
        "i4" => Dtype::I32,
        "i8" => Dtype::I64,
        "u1" => Dtype::U8,
        "u2" => Dtype::U16,
        "u4" => Dtype::U32,
        "u8" => Dtype::U64,
        "b1" => Dtype::Bool,
        _ => {
            return Err(bad(format!(
                "dtype {descr:?} is not read: save the array as float32 or float64"
            )));
        }
    };
    let fortran = match field("fortran_order").as_deref() {
        Some("False") => false,
        Some("True") => true,
        other => {
            return Err(bad(format!(
                "fortran_order {other:?} is neither True nor False"
            )));
        }
    };
    let shape = field("shape").ok_or_else(|| bad("header without 'shape'".into()))?;
    let shape: Vec<usize> = shape
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| bad(format!("shape entry {s:?}"))))
        .collect::<Result<_, _>>()?;
    Ok(Header {
        dtype,
        big,
        shape,
        fortran,
    })
}

/// Opens `path` and reads its header; checks the file's size against the shape before
/// anything is allocated for the data.
fn open(path: &Path) -> Result<Opened, DataError> {
    let io = |e: std::io::Error| DataError::new(path, 0, format!("cannot read: {e}"));
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    let h = header(path, &mut file, &mut hasher)?;
    let left = file.metadata().map_err(io)?.len() - file.stream_position().map_err(io)?;
    let expected = h
        .shape
        .iter()
        .try_fold(h.dtype.size() as u64, |a, &b| a.checked_mul(b as u64));
    match expected {
        Some(e) if e == left => Ok(Opened { file, h, hasher }),
        Some(e) if e > left => Err(DataError::new(
            path,
            0,
            format!(
                "truncated: {left} bytes of data where the shape {:?} needs {e}",
                h.shape
            ),
        )),
        Some(e) => Err(DataError::new(
            path,
            0,
            format!(
                "{} bytes after the data that the shape {:?} describes",
                left - e,
                h.shape
            ),
        )),
        None => Err(DataError::new(
            path,
            0,
            format!("the shape {:?} overflows", h.shape),
        )),
    }
}

/// Reads `rows` rows of `cols` values after the header and calls `take(first_row,
/// values)` on each block of whole rows (about `block_bytes` of the file), in order, as
/// f32 (row-major); checks that the file holds exactly that many bytes. Blocks are read
/// into f32 words: little-endian f32 (the common dtype) on a little-endian machine is
/// taken as read, without a copy, and a thread beside hashes each block while this one
/// reads and takes the next. Returns the file's sha256 (lowercase hex).
fn read_rows(
    path: &Path,
    a: Opened,
    (rows, cols): (usize, usize),
    block_bytes: usize,
    mut take: impl FnMut(usize, &[f32]) -> Result<(), DataError>,
) -> Result<String, DataError> {
    let io = |e: std::io::Error| DataError::new(path, 0, format!("cannot read: {e}"));
    let Opened {
        mut file,
        h,
        mut hasher,
    } = a;
    let size = h.dtype.size();
    let row_bytes = cols.max(1) * size;
    let expected = rows
        .checked_mul(row_bytes)
        .ok_or_else(|| DataError::new(path, 0, "the shape overflows"))?;
    let per_block = (block_bytes / row_bytes).max(1);
    let native = h.dtype == Dtype::F32 && h.big == cfg!(target_endian = "big");
    let mut values = Vec::new();
    std::thread::scope(|scope| {
        // Two blocks in flight; hashed blocks come back for reuse.
        let (tx, rx) = std::sync::mpsc::sync_channel::<(Arc<Vec<f32>>, usize)>(2);
        let (back_tx, back_rx) = std::sync::mpsc::channel::<Arc<Vec<f32>>>();
        let hashing = scope.spawn(move || {
            for (block, n) in rx.iter() {
                hasher.update(&bytemuck::cast_slice::<f32, u8>(&block)[..n]);
                let _ = back_tx.send(block);
            }
            hasher
        });
        let mut done = 0usize;
        while done < rows {
            let k = per_block.min(rows - done);
            let n = k * row_bytes;
            let mut buf = back_rx
                .try_recv()
                .ok()
                .and_then(|b| Arc::try_unwrap(b).ok())
                .unwrap_or_default();
            buf.resize(n.div_ceil(4), 0.0);
            let bytes = &mut bytemuck::cast_slice_mut::<f32, u8>(&mut buf)[..n];
            let got = super::chunked::fill(&mut file, bytes).map_err(io)?;
            if got < n {
                return Err(DataError::new(
                    path,
                    0,
                    format!(
                        "truncated: {} bytes of data where the shape {:?} needs {expected}",
                        done * row_bytes + got,
                        h.shape
                    ),
                ));
            }
            let block = Arc::new(buf);
            // The hasher only stops when this sender is dropped.
            let _ = tx.send((Arc::clone(&block), n));
            if native {
                take(done, &block[..k * cols])?;
            } else {
                values.clear();
                values.extend(
                    bytemuck::cast_slice::<f32, u8>(&block)[..n]
                        .chunks_exact(size)
                        .map(|b| h.dtype.value(b, h.big) as f32),
                );
                take(done, &values)?;
            }
            done += k;
        }
        let mut rest = Vec::new();
        file.read_to_end(&mut rest).map_err(io)?;
        if !rest.is_empty() {
            return Err(DataError::new(
                path,
                0,
                format!(
                    "{} bytes after the data that the shape {:?} describes",
                    rest.len(),
                    h.shape
                ),
            ));
        }
        drop(tx);
        let hasher = hashing.join().expect("hashing does not panic");
        Ok(super::registry::hex(&hasher.finalize()))
    })
}

/// A finite value, or why not (a row's and a column's 0-based index).
fn finite(path: &Path, v: f32, row: usize, col: usize) -> Result<f32, DataError> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(DataError::new(
            path,
            0,
            format!("row {row}, column {col}: {v} is not a finite f32"),
        ))
    }
}

/// Which values are the response.
#[derive(Debug, Clone, Copy)]
pub enum Response<'a> {
    /// This column of the design (0-based; the last when `None`).
    Column(Option<usize>),
    /// A 1-D labels file of as many entries as the design has rows.
    File(&'a Path),
}

/// Reads a 2-D `.npy` design and its response. Feature names are the columns' 0-based
/// indices. Returns the data set and the design file's sha256.
pub fn read_hashed(path: &Path, response: Response<'_>) -> Result<(Dataset, String), DataError> {
    read(path, response).map(|(data, sha)| (data, sha.wait()))
}

/// [`read_hashed`], the hash of a memory-mapped design still being computed on a thread
/// of its own when this returns.
pub fn read(path: &Path, response: Response<'_>) -> Result<(Dataset, Checksum), DataError> {
    let a = open(path)?;
    let (rows, cols) = match a.h.shape[..] {
        [r, c] => (r, c),
        _ => {
            return Err(DataError::new(
                path,
                0,
                format!(
                    "shape {:?}: a design is a 2-D array (rows, columns)",
                    a.h.shape
                ),
            ));
        }
    };
    if rows == 0 {
        return Err(DataError::new(path, 0, "no data rows"));
    }
    let t = match response {
        Response::Column(None) if cols >= 2 => Some(cols - 1),
        Response::Column(Some(t)) if t < cols && cols >= 2 => Some(t),
        Response::Column(Some(t)) if t >= cols => {
            return Err(DataError::new(
                path,
                0,
                format!("--target {t}: the array has columns 0 to {}", cols - 1),
            ));
        }
        Response::Column(_) => {
            return Err(DataError::new(
                path,
                0,
                "a target column and at least one feature column are needed",
            ));
        }
        Response::File(_) => None,
    };
    let d = cols - t.is_some() as usize;
    if d == 0 {
        return Err(DataError::new(path, 0, "no feature columns"));
    }
    let names = (0..cols)
        .filter(|&j| Some(j) != t)
        .map(|j| j.to_string())
        .collect();
    // Little-endian f32 in C order, the response (if any) first or last: read in place.
    let native = a.h.dtype == Dtype::F32 && a.h.big == cfg!(target_endian = "big");
    let a = if native && !a.h.fortran && t.is_none_or(|t| t == 0 || t == cols - 1) {
        if let Some((m, y, sha)) = read_mapped(path, a, (rows, cols), t)? {
            let y = match response {
                Response::File(labels) => read_labels(labels, rows)?,
                Response::Column(_) => y,
            };
            let features = Features::Mapped(m);
            let lines = Vec::new();
            return Ok((
                Dataset {
                    features,
                    y,
                    names,
                    lines,
                },
                sha,
            ));
        }
        // Values not aligned for f32 in the map: read into memory.
        open(path)?
    } else {
        a
    };
    rows.checked_mul(d)
        .filter(|&v| v <= super::MAX_DENSE_VALUES * 4)
        .ok_or_else(|| DataError::new(path, 0, format!("{rows} x {d} values are too many")))?;
    let (x, mut y, sha) = if a.h.fortran {
        read_columns(path, a, (rows, cols), t, GROUP_VALUES)?
    } else {
        read_c_order(path, a, (rows, cols), t)?
    };
    if let Response::File(labels) = response {
        y = read_labels(labels, rows)?;
    }
    let data = Dataset {
        features: Features::Dense { x, d },
        y,
        names,
        lines: Vec::new(),
    };
    Ok((data, sha.into()))
}

/// A little-endian f32 C-order design read in place ([`MappedDesign`]), its response
/// column `t` (first or last, if any) copied out: the values checked finite while a
/// thread of its own hashes the file ([`Checksum::spawn`]). `None` when the values are
/// not aligned for f32 in the map.
fn read_mapped(
    path: &Path,
    a: Opened,
    (rows, cols): (usize, usize),
    t: Option<usize>,
) -> Result<Option<(MappedDesign, Vec<f32>, Checksum)>, DataError> {
    let io = |e: std::io::Error| DataError::new(path, 0, format!("cannot read: {e}"));
    let Opened {
        mut file, hasher, ..
    } = a;
    let start = file.stream_position().map_err(io)? as usize;
    let (first, width) = ((t == Some(0)) as usize, cols - t.is_some() as usize);
    let Some(m) = MappedDesign::map(path, &file, start, (rows, cols), (first, width))? else {
        return Ok(None);
    };
    if let Some((row, col, v)) = m.first_non_finite() {
        finite(path, v, row, col)?;
    }
    // `open` hashed the header; the values, which end the file, are hashed beside the
    // run, which needs the hash only for summary.json.
    let sha = m.hash_after(hasher);
    let y = t.map(|t| m.column(t)).unwrap_or_default();
    // From here on the rows are read in mini-batches at random.
    m.expect_random_reads();
    Ok(Some((m, y, sha)))
}

/// A C-order design (`rows × cols`) read into the row-major design and, for `t`, the
/// response, a block of rows at a time.
fn read_c_order(
    path: &Path,
    a: Opened,
    (rows, cols): (usize, usize),
    t: Option<usize>,
) -> Result<(Vec<f32>, Vec<f32>, String), DataError> {
    let d = cols - t.is_some() as usize;
    // Room for a bias column, which then goes in without moving the design.
    let mut x = Vec::with_capacity(rows * d + rows);
    let mut y = Vec::with_capacity(if t.is_some() { rows } else { 0 });
    let sha = read_rows(path, a, (rows, cols), BLOCK_BYTES, |first, block| {
        if let Some(k) = block.iter().position(|v| !v.is_finite()) {
            return finite(path, block[k], first + k / cols, k % cols).map(|_| ());
        }
        match t {
            None => x.extend_from_slice(block),
            Some(t) => {
                for row in block.chunks_exact(cols) {
                    x.extend_from_slice(&row[..t]);
                    y.push(row[t]);
                    x.extend_from_slice(&row[t + 1..]);
                }
            }
        }
        Ok(())
    })?;
    Ok((x, y, sha))
}

/// Values a group of a Fortran-order design's columns holds at least (64 MB as f32).
const GROUP_VALUES: usize = 16 << 20;

/// A Fortran-order design (`rows × cols`, stored column by column) read into the
/// row-major design and, for `t`, the response: the file is read once and in order (so
/// it is hashed as any other), and its columns are written into the design a group at a
/// time, each group of at least `group_values` values (and an eighth of the design) in
/// one pass over the rows, not one strided pass a column.
fn read_columns(
    path: &Path,
    a: Opened,
    (rows, cols): (usize, usize),
    t: Option<usize>,
    group_values: usize,
) -> Result<(Vec<f32>, Vec<f32>, String), DataError> {
    let d = cols - t.is_some() as usize;
    // Zero pages are mapped as they are first written; room for a bias column.
    let mut x = vec![0.0f32; rows * d + rows];
    x.truncate(rows * d);
    let mut y = vec![0.0f32; if t.is_some() { rows } else { 0 }];
    let per_group = (group_values.max(rows * d / 8) / rows).clamp(1, cols);
    let (mut group, mut first) = (Vec::new(), 0usize);
    // Blocks of whole columns: the rows of the transpose, which is in C order.
    let sha = read_rows(path, a, (cols, rows), BLOCK_BYTES, |col, block| {
        if let Some(k) = block.iter().position(|v| !v.is_finite()) {
            return finite(path, block[k], k % rows, col + k / rows).map(|_| ());
        }
        group.extend_from_slice(block);
        let end = col + block.len() / rows;
        if end - first >= per_group || end == cols {
            scatter(&group, first, (rows, d), t, &mut x, &mut y);
            group.clear();
            first = end;
        }
        Ok(())
    })?;
    Ok((x, y, sha))
}

/// Writes the columns `first..` of a design (`group`, column-major, `rows` each) into
/// the row-major `x` of `d` columns, the response column `t` into `y`.
fn scatter(
    group: &[f32],
    first: usize,
    (rows, d): (usize, usize),
    t: Option<usize>,
    x: &mut [f32],
    y: &mut [f32],
) {
    // The design's columns of the group's features, beside their values.
    let mut features = Vec::with_capacity(group.len() / rows);
    for (c, values) in (first..).zip(group.chunks_exact(rows)) {
        match t {
            Some(t) if c == t => y.copy_from_slice(values),
            Some(t) if c > t => features.push((c - 1, values)),
            _ => features.push((c, values)),
        }
    }
    for (i, row) in x.chunks_exact_mut(d).enumerate() {
        for &(j, values) in &features {
            row[j] = values[i];
        }
    }
}

/// A 1-D labels file (or `(n, 1)`) of `rows` entries.
fn read_labels(path: &Path, rows: usize) -> Result<Vec<f32>, DataError> {
    let a = open(path)?;
    let n = match a.h.shape[..] {
        [n] | [n, 1] => n,
        _ => {
            return Err(DataError::new(
                path,
                0,
                format!("shape {:?}: labels are a 1-D array", a.h.shape),
            ));
        }
    };
    if n != rows {
        return Err(DataError::new(
            path,
            0,
            format!("{n} labels for a design of {rows} rows"),
        ));
    }
    let mut y = Vec::with_capacity(n);
    read_rows(path, a, (n, 1), BLOCK_BYTES, |first, block| {
        for (k, &v) in block.iter().enumerate() {
            y.push(finite(path, v, first + k, 0)?);
        }
        Ok(())
    })?;
    Ok(y)
}

/// Writes `values` (`rows × cols`, row-major) as a little-endian f32 `.npy` (version 1).
pub fn write_f32(
    out: &mut impl Write,
    values: &[f32],
    rows: usize,
    cols: usize,
) -> std::io::Result<()> {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    // Magic, version and length (10 bytes), the dictionary, spaces and a newline to a
    // multiple of 64 bytes.
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    let mut head = Vec::with_capacity(total);
    head.extend_from_slice(b"\x93NUMPY\x01\x00");
    head.extend_from_slice(&((total - 10) as u16).to_le_bytes());
    head.extend_from_slice(dict.as_bytes());
    head.resize(total - 1, b' ');
    head.push(b'\n');
    out.write_all(&head)?;
    let mut buf = Vec::with_capacity(BLOCK_BYTES);
    for chunk in values.chunks(BLOCK_BYTES / 4) {
        buf.clear();
        for v in chunk {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        out.write_all(&buf)?;
    }
    Ok(())
}

/// Writes `data` to `out` as one f32 `.npy` matrix, its response the last column, by way
/// of `out.partial` renamed into place (an interrupted write leaves no `out`). Returns
/// the matrix's shape.
pub fn write_dataset(out: &Path, data: &Dataset) -> Result<(usize, usize), String> {
    let x = data.dense_or_error()?;
    let (n, d) = (data.len(), data.dim());
    let mut table = Vec::with_capacity(n * (d + 1));
    for (row, &y) in x.chunks_exact(d.max(1)).zip(&data.y) {
        table.extend_from_slice(&row[..d]);
        table.push(y);
    }
    if d == 0 {
        table = data.y.clone();
    }
    super::write_whole(out, |partial| -> std::io::Result<std::fs::File> {
        let mut f = std::io::BufWriter::new(std::fs::File::create(partial)?);
        write_f32(&mut f, &table, n, d + 1)?;
        f.into_inner().map_err(|e| e.into_error())
    })?;
    Ok((n, d + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(dir: &Path, name: &str, descr: &str, shape: &str, data: &[u8]) -> std::path::PathBuf {
        npy_ordered(dir, name, (descr, "False"), shape, data)
    }

    /// An array whose header says `fortran_order: ORDER`.
    fn npy_ordered(
        dir: &Path,
        name: &str,
        (descr, order): (&str, &str),
        shape: &str,
        data: &[u8],
    ) -> std::path::PathBuf {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        bytes.extend_from_slice(dict.as_bytes());
        bytes.extend_from_slice(data);
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn designs_labels_and_dtypes_read_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.npy");
        let values = [1.5f32, 2.0, 0.0, -3.0, 4.25, 1.0];
        let mut f = std::fs::File::create(&p).unwrap();
        write_f32(&mut f, &values, 2, 3).unwrap();
        drop(f);
        assert_eq!(std::fs::metadata(&p).unwrap().len() % 4, 0);
        // Little-endian f32 with the response last or first: read in place.
        let (d, sha) = read_hashed(&p, Response::Column(None)).unwrap();
        assert!(
            matches!(d.features, Features::Mapped(_)),
            "{:?}",
            d.features
        );
        assert_eq!(d.dense().unwrap(), vec![1.5, 2.0, -3.0, 4.25]);
        assert_eq!(d.y, vec![0.0, 1.0]);
        assert_eq!(d.names, vec!["0", "1"]);
        assert_eq!(sha, crate::data::registry::sha256_file(&p).unwrap());
        let (d, _) = read_hashed(&p, Response::Column(Some(0))).unwrap();
        assert!(matches!(d.features, Features::Mapped(_)));
        assert_eq!(d.dense().unwrap(), vec![2.0, 0.0, 4.25, 1.0]);
        assert_eq!(d.y, vec![1.5, -3.0]);
        assert_eq!(d.names, vec!["1", "2"]);
        // The response in the middle: the design is read into memory.
        let (d, sha_read) = read_hashed(&p, Response::Column(Some(1))).unwrap();
        assert_eq!(
            d.features,
            Features::Dense {
                x: vec![1.5, 0.0, -3.0, 1.0],
                d: 2
            }
        );
        assert_eq!((d.y, sha_read), (vec![2.0, 4.25], sha));
        // Labels of their own, as int64 (NumPy's default for 0/1 integers), big-endian
        // doubles for the design.
        let labels: Vec<u8> = [1i64, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let y = npy(dir.path(), "y.npy", "<i8", "(2,)", &labels);
        let xb: Vec<u8> = [0.5f64, -1.0]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let x = npy(dir.path(), "xb.npy", ">f8", "(2, 1)", &xb);
        let (d, _) = read_hashed(&x, Response::File(&y)).unwrap();
        assert_eq!(d.y, vec![1.0, 0.0]);
        assert_eq!(
            d.features,
            Features::Dense {
                x: vec![0.5, -1.0],
                d: 1
            }
        );
    }

    #[test]
    fn a_converted_data_set_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let data = Dataset {
            features: Features::SparseBinary {
                offsets: vec![0, 2, 3],
                indices: vec![0, 2, 1],
                d: 3,
            },
            y: vec![1.0, -1.0],
            names: vec!["1".into(), "2".into(), "3".into()],
            lines: vec![1, 2],
        };
        let out = dir.path().join("c.npy");
        assert_eq!(write_dataset(&out, &data).unwrap(), (2, 4));
        let (back, _) = read_hashed(&out, Response::Column(None)).unwrap();
        assert_eq!(back.y, data.y);
        assert_eq!((back.dim(), back.dense()), (3, data.dense()));
        assert!(!dir.path().join("c.npy.partial").exists());
    }

    /// Many small blocks, so that buffers come back for reuse, over dtypes of 2, 4 and
    /// 8 bytes (a block not a whole number of f32 words among them), in either byte
    /// order; a bad value in a late block is named by its row.
    #[test]
    fn blocks_read_as_one_piece() {
        let dir = tempfile::tempdir().unwrap();
        let (rows, cols) = (1001usize, 3usize);
        let v: Vec<f64> = (0..rows * cols).map(|k| (k % 977) as f64 - 400.0).collect();
        type Encode = fn(f64) -> Vec<u8>;
        let cases: [(&str, Encode); 4] = [
            ("<f4", |x| (x as f32).to_le_bytes().to_vec()),
            (">f4", |x| (x as f32).to_be_bytes().to_vec()),
            ("<i2", |x| (x as i16).to_le_bytes().to_vec()),
            (">f8", |x| x.to_be_bytes().to_vec()),
        ];
        for (descr, bytes) in cases {
            let data: Vec<u8> = v.iter().flat_map(|&x| bytes(x)).collect();
            let p = npy(dir.path(), "b.npy", descr, "(1001, 3)", &data);
            for block in [1, 7, 100, 1 << 20] {
                let mut got = Vec::new();
                let sha = read_rows(&p, open(&p).unwrap(), (rows, cols), block, |first, b| {
                    assert_eq!(first * cols, got.len());
                    got.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
                assert_eq!(sha, crate::data::registry::sha256_file(&p).unwrap());
                assert!(got.iter().zip(&v).all(|(&g, &w)| g as f64 == w), "{descr}");
            }
        }
        let mut w = v.clone();
        w[937 * cols + 2] = f64::NAN;
        let data: Vec<u8> = w.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect();
        let p = npy(dir.path(), "n.npy", "<f4", "(1001, 3)", &data);
        let e = read_hashed(&p, Response::Column(None)).unwrap_err();
        assert!(e.what.contains("row 937, column 2"), "{e}");
    }

    /// A design stored column by column reads as its C-order copy, whichever column is
    /// the response and however the columns are grouped; a bad value is named by its
    /// row and column.
    #[test]
    fn fortran_order_reads_as_c_order() {
        let dir = tempfile::tempdir().unwrap();
        let (rows, cols) = (37usize, 5usize);
        let v: Vec<f32> = (0..rows * cols).map(|k| k as f32 * 0.5 - 20.0).collect();
        let column_major = |v: &[f32]| -> Vec<f32> {
            (0..cols)
                .flat_map(|j| (0..rows).map(move |i| v[i * cols + j]))
                .collect()
        };
        let f4 = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let f8 =
            |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|&x| (x as f64).to_be_bytes()).collect() };
        let c = npy(dir.path(), "c.npy", "<f4", "(37, 5)", &f4(&v));
        let fortran = |name: &str, descr: &str, data: &[u8]| {
            npy_ordered(dir.path(), name, (descr, "True"), "(37, 5)", data)
        };
        let f = fortran("f4.npy", "<f4", &f4(&column_major(&v)));
        let g = fortran("f8.npy", ">f8", &f8(&column_major(&v)));
        let labels = npy(dir.path(), "y.npy", "<f4", "(37,)", &f4(&vec![1.0; rows]));
        for response in [
            Response::Column(None),
            Response::Column(Some(0)),
            Response::Column(Some(2)),
            Response::File(&labels),
        ] {
            let (want, _) = read_hashed(&c, response).unwrap();
            for p in [&f, &g] {
                let (got, sha) = read_hashed(p, response).unwrap();
                assert_eq!(got.features, want.features);
                assert_eq!(
                    (got.y.clone(), got.names.clone()),
                    (want.y.clone(), want.names.clone())
                );
                assert_eq!(sha, crate::data::registry::sha256_file(p).unwrap());
            }
            // Groups of one column up to all of them.
            let t = match response {
                Response::Column(t) => Some(t.unwrap_or(cols - 1)),
                Response::File(_) => None,
            };
            for group in [1, rows, 2 * rows + 1, rows * cols] {
                let (x, y, _) =
                    read_columns(&f, open(&f).unwrap(), (rows, cols), t, group).unwrap();
                let d = cols - t.is_some() as usize;
                assert_eq!(Features::Dense { x, d }, want.features, "group {group}");
                if t.is_some() {
                    assert_eq!(y, want.y);
                }
            }
        }
        let mut w = v.clone();
        w[30 * cols + 3] = f32::INFINITY;
        let p = fortran("inf.npy", "<f4", &f4(&column_major(&w)));
        let e = read_hashed(&p, Response::Column(None)).unwrap_err();
        assert!(e.what.contains("row 30, column 3"), "{e}");
        // The same value in C order: found in the memory-mapped design.
        let p = npy(dir.path(), "inf_c.npy", "<f4", "(37, 5)", &f4(&w));
        let e = read_hashed(&p, Response::Column(None)).unwrap_err();
        assert!(e.what.contains("row 30, column 3"), "{e}");
        let p = npy_ordered(dir.path(), "m.npy", ("<f4", "Maybe"), "(37, 5)", &f4(&v));
        let e = read_hashed(&p, Response::Column(None)).unwrap_err();
        assert!(e.what.contains("neither True nor False"), "{e}");
        let p = npy(dir.path(), "z.npy", "<f4", "(37, 0)", &[]);
        let e = read_hashed(&p, Response::File(&labels)).unwrap_err();
        assert!(e.what.contains("no feature columns"), "{e}");
    }

    #[test]
    fn bad_arrays_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let f4 = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let cases = [
            (
                "short.npy",
                "<f4",
                "(2, 2)",
                f4(&[1.0, 2.0, 3.0]),
                "truncated",
            ),
            (
                "long.npy",
                "<f4",
                "(1, 2)",
                f4(&[1.0, 2.0, 3.0]),
                "bytes after",
            ),
            ("1d.npy", "<f4", "(3,)", f4(&[1.0, 2.0, 3.0]), "2-D"),
            ("str.npy", "<U3", "(1, 2)", vec![0; 24], "not read"),
            // Found by the `data_files` fuzz target: a multi-byte first character.
            (
                "utf.npy",
                "\u{e9}4",
                "(1, 2)",
                vec![0; 8],
                "not a number type",
            ),
            (
                "nan.npy",
                "<f4",
                "(1, 2)",
                f4(&[f32::NAN, 1.0]),
                "row 0, column 0",
            ),
            (
                "one.npy",
                "<f4",
                "(2, 1)",
                f4(&[1.0, 2.0]),
                "feature column",
            ),
            ("empty.npy", "<f4", "(0, 2)", vec![], "no data rows"),
        ];
        for (name, descr, shape, data, what) in cases {
            let p = npy(dir.path(), name, descr, shape, &data);
            let e = read_hashed(&p, Response::Column(None)).unwrap_err();
            assert!(e.what.contains(what), "{name}: {e}");
        }
        let p = dir.path().join("junk.npy");
        std::fs::write(&p, b"x,y\n1,2\n").unwrap();
        let e = read_hashed(&p, Response::Column(None)).unwrap_err();
        assert!(e.what.contains("not a .npy file"), "{e}");
        let x = npy(
            dir.path(),
            "x.npy",
            "<f4",
            "(2, 2)",
            &f4(&[1.0, 2.0, 3.0, 4.0]),
        );
        let e = read_hashed(&x, Response::Column(Some(2))).unwrap_err();
        assert!(e.what.contains("columns 0 to 1"), "{e}");
        let y = npy(dir.path(), "y.npy", "<f4", "(3,)", &f4(&[1.0, 0.0, 1.0]));
        let e = read_hashed(&x, Response::File(&y)).unwrap_err();
        assert!(e.what.contains("3 labels for a design of 2 rows"), "{e}");
    }
}
