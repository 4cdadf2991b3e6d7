//! Shows what fuzz inputs stand for: the program (and limits) of an `eval` input, the text of
//! a `reader` or `json` input, the value-building program and print limits of a `printer` one.
//! With `--run`, also runs each input through its target's harness (outside libFuzzer).
//!
//!     cargo run --manifest-path fuzz/Cargo.toml --example show -- eval [--run] FILE...

use ptc_fuzz::harness;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let run = if let Some(i) = args.iter().position(|a| a == "--run") {
        args.remove(i);
        true
    } else {
        false
    };
    let full = if let Some(i) = args.iter().position(|a| a == "--full") {
        args.remove(i);
        true
    } else {
        false
    };
    if args.len() < 2 {
        eprintln!("usage: show TARGET [--run] [--full] FILE...");
        std::process::exit(2);
    }
    let target = args.remove(0);
    let cut = |s: &str| {
        if full {
            s.to_string()
        } else {
            harness::excerpt(s)
        }
    };
    for path in &args {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        println!("=== {path} ({} bytes)", data.len());
        match target.as_str() {
            "eval" => {
                let (src, _data, limits) = harness::program_from_bytes(&data);
                if limits != harness::fuzz_limits() {
                    println!(";; limits: {limits:?}");
                }
                println!("{}", cut(&src));
            }
            "reader" => {
                let (src, nesting) = harness::reader_input(&data);
                println!(
                    ";; max_nesting {nesting}, {} bytes\n{}",
                    src.len(),
                    cut(&src)
                );
            }
            "printer" => {
                let (spec, prints) = harness::printer_input(&data);
                println!(";; prints (limit, printable_limit): {prints:?}");
                println!("{}", cut(&spec.program()));
            }
            "json" => println!("{}", cut(&harness::json_input(&data))),
            other => panic!("unknown target {other}"),
        }
        if run {
            let started = std::time::Instant::now();
            match target.as_str() {
                "eval" => harness::run_program(&data),
                "reader" => harness::run_reader(&data),
                "printer" => harness::run_printer(&data),
                _ => harness::run_json(&data),
            }
            println!(";; ran in {:?}", started.elapsed());
        }
    }
}
