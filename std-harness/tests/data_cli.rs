//! `sgld data list` and `sgld data fetch` against a local HTTP server on 127.0.0.1 (the
//! test machine has no internet): checksums verified, a corrupt download refused.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn shared_datasets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets")
}

/// Serves files below `root` over HTTP/1.1 on 127.0.0.1 (GET only, one request per
/// connection) until the returned flag is set; `corrupt` flips a byte of every file.
fn serve(root: PathBuf, corrupt: bool) -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !flag.load(Ordering::Relaxed) && std::time::Instant::now() < deadline {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            };
            stream.set_nonblocking(false).unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                    break;
                }
            }
            let path = line
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .trim_start_matches('/')
                .to_string();
            let mut stream = stream;
            match std::fs::read(root.join(&path)) {
                Ok(mut body) => {
                    if corrupt && !body.is_empty() {
                        body[0] ^= 1;
                    }
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(&body);
                }
                Err(_) => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    );
                }
            }
        }
    });
    (format!("http://{addr}"), stop)
}

fn sgld(data_dir: &Path, mirror: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sgld"));
    c.env("SGLD_DATA_DIR", data_dir)
        .env("SGLD_DATA_MIRROR", mirror);
    c
}

#[test]
fn fetch_verifies_checksums_and_list_sees_the_result() {
    let shared = shared_datasets();
    assert!(
        shared.join("uci_pbp/yacht/data.txt").is_file(),
        "the shared data sets are needed beside the repository"
    );
    let (url, stop) = serve(shared.clone(), false);
    let dir = tempfile::tempdir().unwrap();
    let list = sgld(dir.path(), &url)
        .args(["data", "list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        text.contains("missing  uci-yacht") && text.contains("published at"),
        "{text}"
    );

    let o = sgld(dir.path(), &url)
        .args(["data", "fetch", "uci-yacht"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.matches("sha256 verified").count(), 44, "{text}");
    let list = sgld(dir.path(), &url)
        .args(["data", "list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains("present  uci-yacht"));
    // Fetching again downloads nothing.
    let o = sgld(dir.path(), &url)
        .args(["data", "fetch", "uci-yacht"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("already present"));
    // A corrupted file on disk is reported by list.
    let f = dir.path().join("uci_pbp/yacht/data.txt");
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&f, bytes).unwrap();
    let list = sgld(dir.path(), &url)
        .args(["data", "list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains("CORRUPT  uci-yacht"));
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn fetch_refuses_a_download_with_the_wrong_checksum() {
    let (url, stop) = serve(shared_datasets(), true);
    let dir = tempfile::tempdir().unwrap();
    let o = sgld(dir.path(), &url)
        .args(["data", "fetch", "uci-yacht"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("checksum mismatch"));
    assert!(
        !dir.path().join("uci_pbp/yacht/data.txt").exists(),
        "nothing is written for a bad download"
    );
    let o = sgld(dir.path(), &url)
        .args(["data", "fetch", "no-such-set"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown data set"));
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn unusable_data_directories_get_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    // A data "directory" that is a file: fetch cannot create anything below it.
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let (url, stop) = serve(shared_datasets(), false);
    let o = sgld(&file, &url)
        .args(["data", "fetch", "uci-yacht"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot create"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    stop.store(true, Ordering::Relaxed);
    // A missing data directory: list says every set is missing, reproduce says what is not found.
    let missing = tmp.path().join("nowhere");
    let o = sgld(&missing, "").args(["data", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("missing  a9a"));
    let o = sgld(&missing, "")
        .args(["reproduce", "logreg", "--quick", "--out"])
        .arg(tmp.path().join("r"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("a9a/a9a not found in"));
    // No data directory at all: fetch refuses.
    let o = Command::new(env!("CARGO_BIN_EXE_sgld"))
        .env_remove("SGLD_DATA_DIR")
        .args(["data", "fetch", "a9a"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs a data directory"));
}
