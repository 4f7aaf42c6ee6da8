//! A library host: the same config file, `DSH_STORE` and store values as `dsh`, in a few
//! lines, with one dependency (`dsh`, feature `host`). Run it with
//! `cargo run -p example-library-host -- [CONFIG_FILE]`; it stores one session (a user turn)
//! in the working directory it runs in, and prints where.

use dsh::host::{HostConfig, Sources};
use dsh::session::{CreateOptions, EventDraft, SessionStore, TurnEndReason};
use std::error::Error;

/// Stores a one-turn session in the store `sources` name, at the working directory `cwd`
/// (every dsh session has one: dsh files and lists sessions by it); returns its id and the
/// store.
fn store_a_turn(sources: &Sources, cwd: &str) -> Result<(String, String), Box<dyn Error>> {
    let config = HostConfig::resolve(sources)?;
    let ctx = config.build()?;
    let store = ctx.expect::<SessionStore>();
    let session = store.create(None, CreateOptions::at(cwd))?;
    session.append(EventDraft::turn_start(1))?;
    session.append(EventDraft::user_text(
        "m1",
        "hello from a library host",
        "user",
    ))?;
    session.append(EventDraft::turn_end(1, TurnEndReason::Completed))?;
    store.flush(&session)?;
    let store_name = config
        .store
        .map_or("the configured store".into(), |s| s.to_string());
    dsh::host::exit::shut_down(&ctx)?;
    Ok((session.id().to_string(), store_name))
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut sources = Sources::from_env();
    sources.config_file = std::env::args_os().nth(1).map(Into::into);
    let cwd = std::env::current_dir()?;
    let (id, store) = store_a_turn(&sources, &cwd.to_string_lossy())?;
    println!("stored session {id} in {store}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_host_stores_a_turn_that_dsh_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let sources = Sources::default().store(dir.path());
        let (id, store) = store_a_turn(&sources, "/work/project").unwrap();
        assert_eq!(store, dir.path().display().to_string());
        let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
        let stored = ctx
            .expect::<SessionStore>()
            .load(&id.as_str().into())
            .unwrap();
        assert_eq!(stored.events().len(), 3);
        assert_eq!(stored.header().cwd.as_deref(), Some("/work/project"));
    }
}
