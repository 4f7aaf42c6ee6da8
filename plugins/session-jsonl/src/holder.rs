//! Who holds the write lock of a session file, where the operating system tells: on Linux,
//! `/proc/locks` lists every `flock` lock with the pid of the process that took it and the
//! device and inode of the file. Elsewhere (and when the entry is not found, e.g. on a file
//! system whose device numbers `/proc/locks` reports differently) the holder is "another
//! process", unnamed.

use std::fs::File;

/// How the holder of the lock on `file` is named in a [`PersistenceError::Locked`] reason:
/// `process 1234 (dsh)` (the command name when `/proc/<pid>/comm` is readable), `this process
/// (pid 1234)` when it is the caller's own (another backend instance on the same root), or
/// `another process` when the system does not tell.
///
/// [`PersistenceError::Locked`]: dsh_session::backend::PersistenceError::Locked
pub(crate) fn holder_of(file: &File) -> String {
    match holder_pid(file) {
        Some(pid) if pid == std::process::id() => format!("this process (pid {pid})"),
        Some(pid) => match command_of(pid) {
            Some(command) => format!("process {pid} ({command})"),
            None => format!("process {pid}"),
        },
        None => "another process".to_owned(),
    }
}

#[cfg(target_os = "linux")]
fn holder_pid(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().ok()?;
    let dev = meta.dev();
    let key = format!(
        "{:02x}:{:02x}:{}",
        rustix::fs::major(dev),
        rustix::fs::minor(dev),
        meta.ino()
    );
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    write_lock_pid(&locks, &key)
}

#[cfg(not(target_os = "linux"))]
fn holder_pid(_file: &File) -> Option<u32> {
    None
}

#[cfg(target_os = "linux")]
fn command_of(pid: u32) -> Option<String> {
    let command = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(command.trim_end().to_owned()).filter(|c| !c.is_empty())
}

#[cfg(not(target_os = "linux"))]
fn command_of(_pid: u32) -> Option<String> {
    None
}

/// The pid of the granted `flock` write lock on the file `key` (`MAJ:MIN:INODE`, the device
/// numbers in two-digit hex as `/proc/locks` prints them) in the text of `/proc/locks`.
/// Waiters (`->` lines) and other lock kinds are skipped.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn write_lock_pid(locks: &str, key: &str) -> Option<u32> {
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, "WRITE", pid, file, ..] if *file == key => pid.parse().ok(),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_granted_write_lock_of_the_file_names_its_pid() {
        let locks = "1: FLOCK  ADVISORY  WRITE 9092 fe:00:5908314 0 EOF\n\
                     1: -> FLOCK  ADVISORY  WRITE 7 fe:00:42 0 EOF\n\
                     2: FLOCK  ADVISORY  READ 8019 fe:00:42 0 EOF\n\
                     3: POSIX  ADVISORY  WRITE 11 fe:00:42 0 EOF\n\
                     4: FLOCK  ADVISORY  WRITE 8852 fe:00:42 0 EOF\n";
        assert_eq!(write_lock_pid(locks, "fe:00:42"), Some(8852));
        assert_eq!(write_lock_pid(locks, "fe:00:4"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_lock_this_process_holds_is_named_as_its_own() {
        let file = tempfile::tempfile().expect("a temp file");
        file.lock().expect("locked");
        let other = file.try_clone().expect("cloned");
        let named = holder_of(&other);
        if named == "another process" {
            println!(
                "skipped: /proc/locks does not list this file system's locks by its stat device"
            );
            return;
        }
        assert_eq!(named, format!("this process (pid {})", std::process::id()));
    }
}
