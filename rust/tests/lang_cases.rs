//! The language's case tables (tests/lang/cases/*.txt) on the interpreter alone: the same
//! files the Python tests run through `ptc`, so the crate is tested without Python. A case is
//! `program<TAB>printed value`, or `program<TAB>!kind<TAB>text...` for a program that fails
//! with that error kind and a message containing each text.

use _core::data::value::Value;

/// Every `(file, section, program, printed value)` of the case files.
fn cases() -> Vec<(String, String, String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lang/cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/lang/cases")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).expect("a UTF-8 case file");
        let mut section = String::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("### ") {
                section = rest.split_whitespace().next().unwrap_or("").to_string();
            } else if !line.is_empty() && !line.starts_with(";;") {
                let (src, expected) = line
                    .split_once('\t')
                    .unwrap_or_else(|| panic!("{name}: a case without a tab: {line}"));
                out.push((name.clone(), section.clone(), src.into(), expected.into()));
            }
        }
    }
    out
}

/// The printed form of the value of `src`, rendered inside the interpreter, as the Python
/// tests' `show` does.
fn show(src: &str) -> Result<String, String> {
    match _core::eval_str(&format!("(str (vector {src}))")) {
        Ok(Value::Str(s)) => Ok(s[1..s.len() - 1].to_string()),
        Ok(other) => Err(format!("not a string: {other:?}")),
        Err(e) => Err(format!("{:?}: {}", e.kind, e.message)),
    }
}

/// Whether `src` fails with the error kind named first in `spec` (tab-separated), and a message
/// containing each of the rest.
fn fails_as(src: &str, spec: &str) -> bool {
    let mut parts = spec.split('\t');
    let kind = parts.next().unwrap_or_default();
    match _core::eval_str(src) {
        Err(e) => e.kind.as_str() == kind && parts.all(|t| e.message.contains(t)),
        Ok(_) => false,
    }
}

#[test]
fn every_case_prints_its_expected_value() {
    let all = cases();
    assert!(
        all.len() > 1_000,
        "the case files lost their cases: {}",
        all.len()
    );
    let failures: Vec<String> = all
        .iter()
        .filter_map(|(file, section, src, expected)| {
            let ok = match expected.strip_prefix('!') {
                Some(error) => fails_as(src, error),
                None => show(src).as_ref() == Ok(expected),
            };
            (!ok).then(|| {
                let got = show(src);
                format!("{file} {section}: {src}\n  want {expected}\n  got  {got:?}")
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
