//! dsh-fuzz: fuzzing of the session file decoder, of seed validation and of a JSONL store
//! laid with symbolic links, on the stable toolchain, as a plain loop (no cargo-fuzz, no
//! nightly).
//!
//! Each iteration generates a valid session (header and log of turns, steps, streamed chunks,
//! tool calls, replacements, log-only events), then either keeps it, cuts it, mutates it (bit
//! flips, truncations, splices, lines removed or duplicated, random JSON values in fields) or
//! replaces it with `arbitrary`-drawn noise, and checks properties of what the readers make of
//! it: no panic, typed errors with stable codes, a valid file reads back as written, a cut file
//! reads as the prefix of its complete records, whatever reads back can be written and read
//! again unchanged, and a seed `create` accepts is never refused by `dsh check` once written
//! (the targets module lists them all). The `store` target (module `store`) builds stores
//! whose folders and files are symbolic links and checks that no write leaves the store and
//! that reads and writes agree.
//!
//! ```text
//! dsh-fuzz [--target jsonl|seed|store|all] [--seconds N] [--seed S] [--out DIR]
//! dsh-fuzz --replay FILE...
//! ```
//!
//! `--seconds` is per target (default 60); iteration `i` of seed `S` is reproducible. A failing
//! input is written to `--out` (default `target/fuzz-failures`) as `<target>-<S>-<i>.<ext>`
//! (`.jsonl`, `.jsonl.zstd`, `.seed.json`: a JSON array of event records, or `.store.json`: a
//! store plan) and can be run
//! again with `--replay`. The exit status is 1 when any property failed, 2 on a usage error;
//! `--help` prints the usage.

#![forbid(unsafe_code)]

mod file;
mod generate;
mod mutate;
#[cfg(unix)]
mod store;
mod targets;

use fastrand::Rng;
use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use targets::{Case, Expect};

/// The targets `--target all` (the default) runs; `store` needs symbolic links.
const ALL_TARGETS: &[&str] = if cfg!(unix) {
    &["jsonl", "seed", "store"]
} else {
    &["jsonl", "seed"]
};

/// At most this many inputs are saved per distinct failure.
const SAVED_PER_FAILURE: usize = 3;

struct Options {
    targets: Vec<&'static str>,
    seconds: u64,
    seed: u64,
    out: PathBuf,
    replay: Vec<PathBuf>,
    help: bool,
}

const USAGE: &str =
    "usage: dsh-fuzz [--target jsonl|seed|store|all] [--seconds N] [--seed S] [--out DIR]
       dsh-fuzz --replay FILE...";

fn usage(why: &str) -> ExitCode {
    eprintln!("dsh-fuzz: {why}");
    eprintln!("{USAGE}");
    ExitCode::from(2)
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        targets: ALL_TARGETS.to_vec(),
        seconds: 60,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        out: PathBuf::from("target/fuzz-failures"),
        replay: Vec::new(),
        help: false,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--target" => {
                options.targets = match value()?.as_str() {
                    "jsonl" => vec!["jsonl"],
                    "seed" => vec!["seed"],
                    "store" => vec!["store"],
                    "all" => ALL_TARGETS.to_vec(),
                    other => return Err(format!("unknown target {other}")),
                }
            }
            "--seconds" => options.seconds = value()?.parse().map_err(|e| format!("{e}"))?,
            "--seed" => options.seed = value()?.parse().map_err(|e| format!("{e}"))?,
            "--out" => options.out = PathBuf::from(value()?),
            "--replay" => {
                options.replay.extend(args.by_ref().map(PathBuf::from));
                break;
            }
            "--help" | "-h" => options.help = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(options)
}

/// The message of the last panic, recorded by the hook instead of printed.
type LastPanic = Arc<Mutex<Option<String>>>;

fn quiet_panics() -> LastPanic {
    let last: LastPanic = Arc::default();
    let slot = last.clone();
    panic::set_hook(Box::new(move |info| {
        if let Ok(mut slot) = slot.lock() {
            // With RUST_BACKTRACE=1 the backtrace is part of the failure message.
            let trace = std::backtrace::Backtrace::capture();
            let trace = match trace.status() {
                std::backtrace::BacktraceStatus::Captured => format!("\n{trace}"),
                _ => String::new(),
            };
            *slot = Some(format!("{info}{trace}"));
        }
    }));
    last
}

/// Runs the properties of a case, a panic counting as a failure.
fn run(case: &Case, last_panic: &LastPanic) -> Result<(), String> {
    let result = panic::catch_unwind(AssertUnwindSafe(|| match case.extension {
        #[cfg(unix)]
        "store.json" => store::check_store(&case.bytes),
        _ => targets::check(&case.bytes, case.extension, &case.expect),
    }));
    result.unwrap_or_else(|_| {
        let message = last_panic.lock().ok().and_then(|mut m| m.take());
        Err(message.unwrap_or_else(|| "panic".into()))
    })
}

/// A failure message with its numbers blanked, to group repeats of one failure.
fn signature(message: &str) -> String {
    message
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .take(120)
        .collect()
}

fn fuzz(options: &Options, last_panic: &LastPanic) -> bool {
    let mut clean = true;
    for target in &options.targets {
        let deadline = Instant::now() + Duration::from_secs(options.seconds);
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut iterations = 0u64;
        while Instant::now() < deadline {
            let mut rng =
                Rng::with_seed(options.seed ^ iterations.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let case = match *target {
                "jsonl" => targets::jsonl_case(&mut rng),
                #[cfg(unix)]
                "store" => Case {
                    bytes: store::store_case(&mut rng),
                    extension: "store.json",
                    expect: Expect::Anything,
                },
                _ => targets::seed_case(&mut rng),
            };
            if let Err(message) = run(&case, last_panic) {
                clean = false;
                let count = seen.entry(signature(&message)).or_default();
                *count += 1;
                if *count <= SAVED_PER_FAILURE {
                    let name = format!("{target}-{}-{iterations}.{}", options.seed, case.extension);
                    let saved = save(&options.out, &name, &case.bytes);
                    println!(
                        "FAIL {target} iteration {iterations}: {message}\n     input: {saved}"
                    );
                }
            }
            iterations += 1;
        }
        let failures: usize = seen.values().sum();
        println!(
            "{target}: {iterations} inputs in {}s (seed {}), {failures} failed ({} distinct)",
            options.seconds,
            options.seed,
            seen.len()
        );
    }
    clean
}

fn save(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    match std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, bytes)) {
        Ok(()) => path.display().to_string(),
        Err(e) => format!("(not saved: {e})"),
    }
}

fn replay(files: &[PathBuf], last_panic: &LastPanic) -> bool {
    let mut clean = true;
    for file in files {
        let name = file.to_string_lossy();
        let extension = ["seed.json", "store.json", "jsonl.zstd", "jsonl"]
            .into_iter()
            .find(|ext| name.ends_with(ext))
            .unwrap_or("jsonl");
        let case = match std::fs::read(file) {
            Ok(bytes) => Case {
                bytes,
                extension,
                expect: Expect::Anything,
            },
            Err(e) => {
                println!("FAIL {name}: cannot read: {e}");
                clean = false;
                continue;
            }
        };
        match run(&case, last_panic) {
            Ok(()) => println!("ok   {name}"),
            Err(message) => {
                clean = false;
                println!("FAIL {name}: {message}");
            }
        }
    }
    clean
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(options) => options,
        Err(why) => return usage(&why),
    };
    if options.help {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let last_panic = quiet_panics();
    let clean = if options.replay.is_empty() {
        fuzz(&options, &last_panic)
    } else {
        replay(&options.replay, &last_panic)
    };
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
