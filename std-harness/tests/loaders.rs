//! LIBSVM and CSV loaders on good and malformed files: every malformed file gets an error
//! that names the file, the line and what was wrong — never a panic.

use std::path::PathBuf;

use sgld_harness::data::{self, Features, Format, csv_table, libsvm};

fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn libsvm_good_binary_rows_stay_sparse() {
    let dir = tempfile::tempdir().unwrap();
    let p = file(
        &dir,
        "a.txt",
        "+1 1:1 3:1 7:1\n-1 2:1\n0 3:1 4:1 # a comment\n\n",
    );
    let d = libsvm::read(&p).unwrap();
    assert_eq!(d.y, vec![1.0, -1.0, 0.0]);
    assert_eq!(d.dim(), 7);
    match &d.features {
        Features::SparseBinary {
            offsets,
            indices,
            d,
        } => {
            assert_eq!(offsets, &vec![0, 3, 4, 6]);
            assert_eq!(indices, &vec![0, 2, 6, 1, 2, 3]);
            assert_eq!(*d, 7);
        }
        other => panic!("expected sparse rows, got {other:?}"),
    }
    let b = d.with_bias();
    assert_eq!(b.dim(), 8);
    assert_eq!(b.names.last().map(String::as_str), Some("bias"));
}

/// Rows with values at least a sixteenth filled are made dense.
#[test]
fn libsvm_real_values_become_dense() {
    let dir = tempfile::tempdir().unwrap();
    let p = file(&dir, "r.txt", "1 1:0.5 3:-2\n-1 2:1e-3\n");
    let d = libsvm::read(&p).unwrap();
    assert_eq!(
        d.features,
        Features::Dense {
            x: vec![0.5, 0.0, -2.0, 0.0, 0.001, 0.0],
            d: 3
        }
    );
}

#[test]
fn libsvm_sparse_real_values_stay_sparse_with_their_values() {
    // Three rows of 40 features, four non-zeros in all (a fortieth filled): kept as
    // rows with values; every operation on them agrees with the dense matrix.
    let dir = tempfile::tempdir().unwrap();
    let p = file(&dir, "t.txt", "1 3:0.5 40:-2\n-1 7:0.25\n1 1:3\n");
    let d = libsvm::read(&p).unwrap();
    match &d.features {
        Features::SparseValued {
            offsets,
            indices,
            values,
            d,
        } => {
            assert_eq!(offsets, &vec![0, 2, 3, 4]);
            assert_eq!(indices, &vec![2, 39, 6, 0]);
            assert_eq!(values, &vec![0.5, -2.0, 0.25, 3.0]);
            assert_eq!(*d, 40);
        }
        other => panic!("expected sparse rows with values, got {other:?}"),
    }
    let x = d.dense().unwrap();
    assert_eq!(
        (x.len(), x[2], x[39], x[40 + 6], x[80]),
        (120, 0.5, -2.0, 0.25, 3.0)
    );
    let cell = |ds: &data::Dataset, i: usize, j: usize| ds.dense().unwrap()[i * ds.dim() + j];
    let s = d.subset(&[2, 0]);
    assert_eq!(
        (s.y.clone(), cell(&s, 0, 0), cell(&s, 1, 39)),
        (vec![1.0, 1.0], 3.0, -2.0)
    );
    let b = d.clone().with_bias();
    assert_eq!((b.dim(), cell(&b, 1, 40), cell(&b, 1, 6)), (41, 1.0, 0.25));
    assert_eq!(d.rows_beyond(10), 1);
    let narrow = d.with_dim(10);
    assert_eq!(
        (narrow.dim(), cell(&narrow, 0, 2), narrow.rows_beyond(5)),
        (10, 0.5, 1)
    );
}

#[test]
fn libsvm_malformed_files_name_file_line_and_problem() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("token", "1 1:1\n1 2-1\n", 2, "not index:value"),
        ("zero", "1 0:1\n", 1, "index 0"),
        ("dup", "1 1:1 3:1\n-1 2:1 2:1\n", 2, "duplicate index 2"),
        ("unsorted", "1 3:1 2:1\n", 1, "must increase"),
        ("value", "1 1:abc\n", 1, "not a finite number"),
        ("nan", "1 1:nan\n", 1, "not a finite number"),
        ("label", "yes 1:1\n", 1, "label"),
        ("index", "1 x:1\n", 1, "not a positive integer"),
        ("empty", "", 0, "empty file"),
        ("blank", "\n\n# only comments\n", 0, "empty file"),
    ];
    for (name, text, line, what) in cases {
        let p = file(&dir, name, text);
        let e = libsvm::read(&p).unwrap_err();
        assert_eq!(e.line, line, "{name}: {e}");
        assert!(e.what.contains(what), "{name}: {e}");
        assert!(
            e.to_string().starts_with(&p.display().to_string()),
            "{name}: {e}"
        );
    }
    // Found by the `libsvm_parser` fuzz target: a huge index asked for billions of
    // parameters (and, with non-binary values, a dense matrix of billions of values).
    let p = file(&dir, "huge", "1 4000000000:0.5\n-1 1:2\n");
    let e = libsvm::read(&p).unwrap_err();
    assert!(e.line == 1 && e.what.contains("too large"), "{e}");
    // Values in rows of 16 M features stay sparse: no dense matrix is made.
    let p = file(&dir, "wide", &"1 16000000:0.5\n".repeat(20));
    let d = libsvm::read(&p).unwrap();
    let Features::SparseValued { values, d: dim, .. } = &d.features else {
        panic!("expected sparse rows with values");
    };
    assert_eq!((values.len(), *dim), (20, 16_000_000));
    let missing = libsvm::read(&dir.path().join("nope")).unwrap_err();
    assert!(missing.what.contains("cannot read"), "{missing}");
}

#[test]
fn csv_good_file_with_target() {
    let dir = tempfile::tempdir().unwrap();
    let p = file(&dir, "t.csv", "a,b,y,c\n1,2,3,4\n5,6,7,8\n");
    let d = csv_table::read(&p, Some("y")).unwrap();
    assert_eq!(d.y, vec![3.0, 7.0]);
    assert_eq!(d.names, vec!["a", "b", "c"]);
    assert_eq!(
        d.features,
        Features::Dense {
            x: vec![1.0, 2.0, 4.0, 5.0, 6.0, 8.0],
            d: 3
        }
    );
    // Default target: the last column; format by extension.
    let d = data::load(&p, None, None).unwrap();
    assert_eq!(d.y, vec![4.0, 8.0]);
    assert_eq!(Format::from_path(&p), Format::Csv);
}

#[test]
fn csv_malformed_files_name_file_line_and_problem() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("cols.csv", "a,b\n1,2\n3\n", 3, "columns"),
        ("wide.csv", "a,b\n1,2\n1,2,3\n", 3, "3 columns, expected 2"),
        ("comma.csv", "a,b\n1,2,\n", 2, "3 columns, expected 2"),
        ("badwide.csv", "a,b\nx,2,3\n", 2, "3 columns, expected 2"),
        (
            "junk.csv",
            "a,b\n1,2x\n",
            2,
            "column \"b\": \"2x\" is not a finite number",
        ),
        (
            "cell.csv",
            "a,b\n1,2\n3,x\n",
            3,
            "\"x\" is not a finite number",
        ),
        ("inf.csv", "a,b\n1,inf\n", 2, "not a finite number"),
        ("empty.csv", "", 0, "empty"),
        ("header.csv", "a,b\n", 0, "no data rows"),
    ];
    for (name, text, line, what) in cases {
        let p = file(&dir, name, text);
        let e = csv_table::read(&p, None).unwrap_err();
        assert_eq!(e.line, line, "{name}: {e}");
        assert!(e.what.contains(what), "{name}: {e}");
    }
    let p = file(&dir, "t.csv", "a,b\n1,2\n");
    let e = csv_table::read(&p, Some("zzz")).unwrap_err();
    assert!(e.what.contains("no column named \"zzz\""), "{e}");
}

#[test]
fn subset_and_dimension_alignment() {
    let dir = tempfile::tempdir().unwrap();
    let p = file(&dir, "s.txt", "1 1:1 5:1\n-1 2:1\n1 3:1\n");
    let d = libsvm::read(&p).unwrap();
    let s = d.subset(&[2, 0]);
    assert_eq!(s.y, vec![1.0, 1.0]);
    assert_eq!(
        s.dense().unwrap(),
        vec![0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    );
    let narrow = d.with_dim(3);
    assert_eq!(narrow.dense().unwrap()[..3], [1.0, 0.0, 0.0]);
    assert_eq!(narrow.dim(), 3);
}

/// The fast reader (unquoted files) and the `csv` crate (files with quotes) read the same
/// table: spaces, blank lines, signs, exponents, long and short numbers; CRLF endings
/// read as LF ones.
#[test]
fn csv_fast_path_and_quoted_path_agree() {
    let dir = tempfile::tempdir().unwrap();
    let mut plain = String::from("a, b ,y\n");
    for i in 0..5000 {
        let v = (i as f64 * 0.7311).sin() * 10f64.powi(i % 9 - 4);
        plain.push_str(&format!(" {v} ,{:.3e},{}\n", -v, i % 2));
        if i % 977 == 0 {
            plain.push('\n');
        }
    }
    let quoted = plain.replacen("a, b ,y", "\"a\", b ,\"y\"", 1);
    let crlf = plain.replace('\n', "\r\n");
    let p = file(&dir, "p.csv", &plain);
    let (a, sa) = csv_table::read_hashed(&p, Some("y")).unwrap();
    let (b, sb) = csv_table::read_hashed(&file(&dir, "q.csv", &quoted), Some("y")).unwrap();
    let (c, _) = csv_table::read_hashed(&file(&dir, "c.csv", &crlf), Some("y")).unwrap();
    // The same values (the `csv` crate numbers a row after a blank line one line early).
    assert!(
        a.features == b.features && a.y == b.y && a.names == b.names,
        "the fast and the quoted paths differ"
    );
    assert!(a == c, "CRLF endings read otherwise");
    assert_eq!(a.len(), 5000);
    assert_eq!(a.names, vec!["a", "b"]);
    assert_eq!(a.lines[..3], [2, 4, 5]);
    assert_ne!(sa, sb);
    assert_eq!(sa, sgld_harness::data::registry::sha256_file(&p).unwrap());
}
