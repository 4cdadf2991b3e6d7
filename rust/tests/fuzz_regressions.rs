//! Replays the fuzz corpora (fuzz/corpus/<target>/) and every minimized crash reproducer
//! (fuzz/regressions/<target>/) through exactly the code the cargo-fuzz targets run: the
//! harness module of the fuzz crate is included here by path, so no dependency on the fuzz
//! crate (or on libFuzzer) is needed.
//!
//! Each input runs in a child process (this test binary again, running `replay_child`) with an
//! address-space cap, an 8 MiB main stack as under libFuzzer, and a timeout, so a stack
//! overflow, an abort, a hang or a memory blow-up fails the test naming the file instead of
//! killing the test run. A target's test fails if any of its inputs crashes, hangs or panics.
//!
//! Files named `*.md` or `*.txt` are notes (e.g. the program a generated input stands for) and
//! are skipped. `PTC_FUZZ_ONLY=<substring>` replays only the files whose name contains it.

#[path = "../../fuzz/src/harness.rs"]
mod harness;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_TARGET: &str = "PTC_FUZZ_REPLAY_TARGET";
const CHILD_FILE: &str = "PTC_FUZZ_REPLAY_FILE";
/// Wall-clock limit of one replayed input (the harness' own budget is a few seconds).
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);
/// Address-space cap of a child, in KiB (4 GiB: the runs' memory limit is 64 MB).
const CHILD_AS_KIB: u64 = 4 * 1024 * 1024;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn run_target(target: &str, data: &[u8]) {
    match target {
        "reader" => harness::run_reader(data),
        "eval" => harness::run_program(data),
        "printer" => harness::run_printer(data),
        "json" => harness::run_json(data),
        other => panic!("unknown fuzz target {other}"),
    }
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let only = std::env::var("PTC_FUZZ_ONLY").ok();
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                !name.starts_with('.') && !name.ends_with(".md") && !name.ends_with(".txt")
            })
            .filter(|p| match &only {
                Some(o) => p
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .contains(o.as_str()),
                None => true,
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// The child side: runs one input in this process (only when the parent asked for it).
#[test]
fn replay_child() {
    let (Ok(target), Ok(file)) = (std::env::var(CHILD_TARGET), std::env::var(CHILD_FILE)) else {
        return;
    };
    let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    run_target(&target, &data);
    eprintln!("REPLAY-OK {file}");
}

/// Runs one input in a child process; `Err` describes how it went wrong.
fn replay_in_child(target: &str, file: &Path) -> Result<(), String> {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "ulimit -v {CHILD_AS_KIB} 2>/dev/null; exec \"$0\" \"$@\""
        ))
        .arg(&exe)
        .args([
            "fuzz_regressions::replay_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_TARGET, target)
        .env(CHILD_FILE, file)
        // as under libFuzzer, which runs inputs on the 8 MiB main thread
        .env("RUST_MIN_STACK", "8388608")
        // debug builds on a shared machine: twice the fuzzing budget before "slow"
        .env("PTC_FUZZ_SLOW_FACTOR", "2")
        // a hang aborts the child at 3x its budget instead of running into CHILD_TIMEOUT
        .env("PTC_FUZZ_WATCHDOG", "1")
        .env_remove("PTC_FUZZ_ONLY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot spawn the child: {e}"))?;
    // drain the pipes on threads so a chatty child cannot block
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > CHILD_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for the child: {e}")),
        }
    };
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    let ok_marker = stderr.contains("REPLAY-OK") || stdout.contains("REPLAY-OK");
    match status {
        None => Err(format!("hang: no result after {CHILD_TIMEOUT:?}")),
        Some(s) if s.success() && ok_marker => Ok(()),
        Some(s) => {
            use std::os::unix::process::ExitStatusExt;
            let how = match (s.code(), s.signal()) {
                (_, Some(sig)) => format!("killed by signal {sig} (stack overflow / abort / OOM)"),
                (Some(101), _) => "panicked (finding or core panic)".to_string(),
                (Some(c), _) => format!("exit code {c}"),
                _ => "unknown exit".to_string(),
            };
            let text = format!("{stdout}\n{stderr}");
            let detail: Vec<&str> = text
                .lines()
                .filter(|l| {
                    l.contains("FINDING")
                        || l.contains("panicked")
                        || l.contains("overflow")
                        || l.contains("memory allocation")
                        || l.contains("error")
                })
                .take(6)
                .collect();
            Err(format!(
                "{how} after {:?}\n      {}",
                started.elapsed(),
                detail.join("\n      ")
            ))
        }
    }
}

fn replay(target: &str) {
    if std::env::var(CHILD_TARGET).is_ok() {
        return; // inside a child: only replay_child works there
    }
    let dir = fuzz_dir();
    let corpus = inputs(&dir.join("corpus").join(target));
    let regressions = inputs(&dir.join("regressions").join(target));
    if std::env::var("PTC_FUZZ_ONLY").is_err() {
        assert!(
            !corpus.is_empty(),
            "no seed corpus in {}",
            dir.join("corpus").join(target).display()
        );
    }
    let mut failures = Vec::new();
    let total = corpus.len() + regressions.len();
    for file in corpus.iter().chain(regressions.iter()) {
        if let Err(why) = replay_in_child(target, file) {
            failures.push(format!(
                "  {}: {why}",
                file.strip_prefix(&dir).unwrap_or(file).display()
            ));
        }
    }
    if !failures.is_empty() {
        panic!(
            "fuzz target `{target}`: {} of {total} inputs crash, hang or fail \
             (replay one with: PTC_FUZZ_ONLY=<name> cargo test --test core fuzz_regressions::{target}; \
             show it with: scripts/fuzz.sh show {target} FILE):\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

#[test]
fn reader() {
    replay("reader");
}

#[test]
fn eval() {
    replay("eval");
}

#[test]
fn printer() {
    replay("printer");
}

#[test]
fn json() {
    replay("json");
}

/// The generators terminate and stay within their size budgets on arbitrary bytes.
#[test]
fn generators_are_bounded() {
    if std::env::var(CHILD_TARGET).is_ok() {
        return;
    }
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for len in [0usize, 1, 2, 7, 64, 300, 4_096] {
        for _ in 0..20 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed >> 24) as u8
                })
                .collect();
            let (src, _, _) = harness::program_from_bytes(&[&[1u8][..], &bytes].concat());
            assert!(src.len() < 8_000_000, "program of {} bytes", src.len());
            let (text, _) = harness::reader_input(&[&[1u8][..], &bytes].concat());
            assert!(text.len() < 8_000_000);
            let json = harness::json_input(&[&[1u8][..], &bytes].concat());
            assert!(json.len() < 8_000_000);
            let (spec, _) = harness::printer_input(&bytes);
            assert!(spec.program().len() < 8_000_000);
        }
    }
}
