//! The machinery of the kill tests: a child process started from the current test binary and
//! killed with `SIGKILL` once it reported enough ([`Child`]), the seeded kill moments
//! ([`Moments`]), and the name of the child's test ([`child_test`]).

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// splitmix64: a small seeded generator for the kill moments.
pub(crate) struct Moments(pub(crate) u64);

impl Moments {
    /// The next moment, below `bound`.
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % bound
    }
}

/// A child process of a kill test: `test` of the current test binary, run with the
/// environment variable `var` set to `spec`, reporting one line per durable step in `report`,
/// its stderr kept in `stderr`.
pub(crate) struct Child<'a> {
    pub(crate) test: &'a str,
    pub(crate) var: &'a str,
    pub(crate) spec: &'a serde_json::Value,
    pub(crate) report: &'a Path,
    pub(crate) stderr: &'a Path,
}

impl Child<'_> {
    /// Empties the report file, starts the child, waits until it reported `lines` lines and
    /// then `delay`, and kills it with `SIGKILL` (`std::process::Child::kill`).
    ///
    /// # Panics
    /// Naming `context`, with the child's stderr, when it ends on its own or reports nothing
    /// for a minute.
    pub(crate) fn kill_after(&self, lines: usize, delay: Duration, context: &str) {
        fs::write(self.report, "").expect("resets the report file");
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([self.test, "--exact", "--nocapture", "--test-threads=1"])
            // The child's test may be ignored in plain runs (a backend whose server is not
            // always there): the child runs it all the same.
            .arg("--include-ignored")
            .env(self.var, self.spec.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(self.stderr).expect("a stderr file"))
            .spawn()
            .expect("starts the child");
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = 0;
        while seen < lines {
            if let Some(status) = child.try_wait().expect("polls the child") {
                panic!(
                    "{context}: the child ended on its own ({status}): {}",
                    fs::read_to_string(self.stderr).unwrap_or_default()
                );
            }
            assert!(Instant::now() < deadline, "{context}: the child stalled");
            std::thread::sleep(Duration::from_micros(200));
            seen = fs::read_to_string(self.report)
                .map(|t| t.matches('\n').count())
                .unwrap_or(0);
        }
        std::thread::sleep(delay);
        child.kill().expect("kills the child");
        child.wait().expect("reaps the child");
    }
}

/// The full name inside the test binary (`module::path::name`, without the crate name) of test
/// `name` in the module whose `module_path!()` is `module_path`: what a kill test starts as its
/// child.
#[doc(hidden)]
pub fn child_test(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, inside)) => format!("{inside}::{name}"),
        None => name.to_owned(),
    }
}
