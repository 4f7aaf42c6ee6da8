//! A library host: the same config file, `DSH_STORE` and store values as `dsh`, in a few
//! lines. Run it with `cargo run -p dsh-host --example library_host -- [CONFIG_FILE]`; it
//! stores one session (a user turn) and prints where.

use dsh::session::{EventDraft, SessionStore, TurnEndReason};
use dsh_host::{HostConfig, Sources};
use std::error::Error;

/// Stores a one-turn session in the store `sources` name; returns its id and the store.
fn store_a_turn(sources: &Sources) -> Result<(String, String), Box<dyn Error>> {
    let config = HostConfig::resolve(sources)?;
    let ctx = config.build()?;
    let store = ctx.expect::<SessionStore>();
    let session = store.create(None, Default::default())?;
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
    Ok((session.id().to_string(), store_name))
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut sources = Sources::from_env();
    sources.config_file = std::env::args_os().nth(1).map(Into::into);
    let (id, store) = store_a_turn(&sources)?;
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
        let (id, store) = store_a_turn(&sources).unwrap();
        assert_eq!(store, dir.path().display().to_string());
        let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
        let stored = ctx
            .expect::<SessionStore>()
            .load(&id.as_str().into())
            .unwrap();
        assert_eq!(stored.events().len(), 3);
    }
}
