//! Progress on stderr for the commands that can take long (`import` of many files, `export`,
//! `gc`): a bar (or a spinner, for work whose size is not known) that appears once the work
//! has run for a second, only when stderr is a terminal and the output is not `--json`; an
//! invisible bar otherwise, so scripts, pipes and tests see nothing.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::Duration;

/// How long work runs before its progress appears: one second.
const DELAY: Duration = Duration::from_secs(1);

/// Whether progress may be drawn in this run (set once, by [`init`]).
static DRAWN: OnceLock<bool> = OnceLock::new();

/// Decides, once per run, whether progress is drawn: never under `--json`, and only when
/// stderr is a terminal.
pub fn init(json: bool) {
    let _ = DRAWN.set(drawn(json, std::io::stderr().is_terminal()));
}

/// The rule of [`init`].
fn drawn(json: bool, stderr_is_terminal: bool) -> bool {
    !json && stderr_is_terminal
}

/// The progress of one piece of work; cleared from the terminal when dropped.
pub struct Progress(ProgressBar);

impl Progress {
    /// A bar of `total` steps (files, sessions), each step named by [`Progress::step`].
    pub fn bar(total: u64, what: &'static str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {wide_msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        Progress::start(bar, what)
    }

    /// A spinner for work whose size is not known.
    pub fn spinner(what: &'static str) -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix} {elapsed} {wide_msg}")
                .expect("a valid template"),
        );
        Progress::start(bar, what)
    }

    fn start(bar: ProgressBar, what: &'static str) -> Progress {
        bar.set_prefix(what);
        if DRAWN.get().copied().unwrap_or(false) {
            let shown = bar.clone();
            // Shown only if the work is still running a second from now; the thread holds
            // nothing the command needs and does not keep the process alive.
            std::thread::spawn(move || {
                std::thread::sleep(DELAY);
                if !shown.is_finished() {
                    shown.set_draw_target(ProgressDrawTarget::stderr());
                    shown.enable_steady_tick(Duration::from_millis(120));
                }
            });
        }
        Progress(bar)
    }

    /// Names the step being worked on (a file, a session).
    pub fn step(&self, name: impl Into<String>) {
        self.0.set_message(name.into());
    }

    /// Counts a step done.
    pub fn done(&self) {
        self.0.inc(1);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_drawn_only_on_a_terminal_and_never_under_json() {
        assert!(drawn(false, true));
        assert!(!drawn(true, true), "--json");
        assert!(!drawn(false, false), "a pipe or a file");
    }

    #[test]
    fn a_bar_that_is_not_drawn_still_counts() {
        let progress = Progress::bar(3, "importing");
        progress.step("a.jsonl");
        progress.done();
        assert_eq!(progress.0.position(), 1);
        assert!(progress.0.is_hidden());
    }
}
