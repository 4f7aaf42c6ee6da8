//! `dsh completions SHELL` and `dsh man`: the shell completion scripts and the man page,
//! generated from the clap definitions of `cli.rs` (so they never drift from the commands).

use crate::cli::Cli;
use clap::CommandFactory;
use std::io::Write;

/// Prints the completion script of `shell` on stdout; returns the exit status (1 when stdout
/// cannot be written, with the reason on stderr).
pub fn completions(shell: clap_complete::Shell) -> i32 {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "dsh", &mut script);
    print(&script)
}

/// Prints the man page (roff) on stdout; returns the exit status.
pub fn man() -> i32 {
    let mut page = Vec::new();
    if let Err(error) = clap_mangen::Man::new(Cli::command()).render(&mut page) {
        eprintln!("error [IO_ERROR]: cannot render the man page: {error}");
        return 1;
    }
    print(&page)
}

fn print(bytes: &[u8]) -> i32 {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("error [IO_ERROR]: cannot write to stdout: {error}");
            1
        }
    }
}
