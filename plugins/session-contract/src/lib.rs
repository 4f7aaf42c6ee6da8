//! dsh-session-contract: the contract every [`SessionPersistence`] backend passes, written
//! once (as dsh runs one `runPersistenceContract` against its JSONL and SQLite backends,
//! reference section 6.1).
//!
//! A backend crate implements [`Fixture`] over fresh storage in its tests and expands
//! [`contract_tests!`], which makes one `#[test]` per case of [`cases`], named after it, so a
//! failure names the case. The list of cases lives in that macro alone, and this crate's own
//! test checks it against the public functions of `cases.rs`, so a new case cannot be left
//! out of the run. The cases drive the backend directly (a [`Fixture::open`] instance)
//! and through a context of the session plugin plus the backend's plugin
//! ([`Fixture::plugin`]), the way a host does. They know nothing of files or databases:
//! the few that need to reach behind the backend (damage, a held lock) ask the fixture.
//!
//! ```ignore
//! struct MyFixture { /* a temporary folder or database */ }
//! impl dsh_session_contract::Fixture for MyFixture { /* ... */ }
//! dsh_session_contract::contract_tests!(MyFixture::new());
//! dsh_session_contract::fault_tests!(MyFixture::new(), MyBackendPlugin);
//! ```
//!
//! The fault tests of [`faults`] (an injected write failure, a writer killed with `SIGKILL`)
//! are expanded separately, by [`fault_tests!`], with the backend's plugin.
//!
//! Not a published crate (`publish = false`): a dev-dependency of the backend crates.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cases;
pub mod drain;
pub mod faults;
mod server;
mod support;

pub use dsh_session::format::FormatVersion;
pub use server::postgres_url;
pub use support::turn_drafts;

use dsh_core::AnyPlugin;
use dsh_session::backend::SessionPersistence;
use dsh_session::SessionId;
use std::any::Any;
use std::sync::Arc;

/// Fresh, empty storage of one backend, as a contract case uses it. One fixture per case;
/// dropping it removes the storage.
pub trait Fixture: Send + Sync {
    /// A new backend instance over this fixture's storage (the same folder or database).
    /// Two instances stand for two processes: they share nothing but the storage. Instances
    /// wait at most a short time (a few hundred milliseconds) for another writer's lock.
    fn open(&self) -> Arc<dyn SessionPersistence>;

    /// The backend's plugin and the config that points it at this fixture's storage: a
    /// context of the session plugin plus this plugin (loaded enabled, with this config)
    /// persists into the same storage as [`Fixture::open`] instances.
    fn plugin(&self) -> (AnyPlugin, serde_json::Value);

    /// Takes the cross-process writer lock of stored session `id` the way another process
    /// writing it would, and holds it until the returned guard drops.
    fn hold_writer_lock(&self, id: &SessionId) -> Box<dyn Any + Send>;

    /// Deletes the stored event `seq` of session `id` behind the backend's back (damage: a
    /// gap in the log), leaving the header and the other events as they are.
    fn remove_stored_event(&self, id: &SessionId, seq: u64);

    /// Rewrites the stored header version of session `id` behind the backend's back.
    fn set_stored_version(&self, id: &SessionId, version: u64);

    /// Leaves a torn final record after the stored events of session `id`, as a crash in the
    /// middle of an append does. Returns `false` when the backend's storage cannot hold one
    /// (a database writes a transaction whole or not at all); the torn-tail cases then check
    /// nothing more.
    fn tear_tail(&self, id: &SessionId) -> bool;

    /// The log format version the contract cases write their sessions in: v0 unless the
    /// fixture is wrapped in [`AtVersion`] (what [`contract_tests!`] does for its `v3` run).
    fn version(&self) -> FormatVersion {
        FormatVersion::V0
    }
}

/// A fixture whose cases write their sessions in format version `version`: the same storage
/// as the wrapped fixture, every other method passed through.
pub struct AtVersion<F> {
    fixture: F,
    version: FormatVersion,
}

impl<F: Fixture> AtVersion<F> {
    /// `fixture`, with its cases' sessions written in `version`.
    pub fn new(fixture: F, version: FormatVersion) -> AtVersion<F> {
        AtVersion { fixture, version }
    }
}

impl<F: Fixture> Fixture for AtVersion<F> {
    fn open(&self) -> Arc<dyn SessionPersistence> {
        self.fixture.open()
    }

    fn plugin(&self) -> (AnyPlugin, serde_json::Value) {
        self.fixture.plugin()
    }

    fn hold_writer_lock(&self, id: &SessionId) -> Box<dyn Any + Send> {
        self.fixture.hold_writer_lock(id)
    }

    fn remove_stored_event(&self, id: &SessionId, seq: u64) {
        self.fixture.remove_stored_event(id, seq);
    }

    fn set_stored_version(&self, id: &SessionId, version: u64) {
        self.fixture.set_stored_version(id, version);
    }

    fn tear_tail(&self, id: &SessionId) -> bool {
        self.fixture.tear_tail(id)
    }

    fn version(&self) -> FormatVersion {
        self.version
    }
}

/// Expands to two `#[test]`s per contract case, each running [`cases`]`::<name>` against a
/// fresh fixture made by `$fixture` (an expression evaluated once per test, of a type
/// implementing [`Fixture`]): one with sessions in format v0 (named after the case), one with
/// sessions in format v3 (the same name in a module `v3`, the fixture wrapped in
/// [`AtVersion`]). Attributes after the fixture go on every test, e.g.
/// `contract_tests!(fixture(), #[ignore = "needs a server"])` for a backend whose storage is
/// not always there.
///
/// The `@list` arm holds the one list of the cases and hands it to another arm: `@tests`
/// makes the tests (one [`suite_test!`] each), `@names` (used by this crate's own test, which
/// checks the list against the public functions of `cases.rs`) the names with their
/// functions.
#[macro_export]
macro_rules! contract_tests {
    ($fixture:expr $(, #[$attr:meta])*) => {
        $crate::contract_tests! { @list tests ([$(#[$attr])*] ($fixture)) }
    };
    (@list $arm:ident $args:tt) => {
        $crate::contract_tests! { @$arm $args;
            create_then_load_round_trips_header_and_events,
            events_read_back_as_identical_json,
            appends_then_load_round_trip,
            atomic_appends_round_trip_between_appends,
            an_empty_session_is_stored_and_loads_empty,
            an_append_not_at_the_stored_next_seq_is_rejected_and_changes_nothing,
            a_non_contiguous_batch_is_rejected_whole,
            a_seed_not_starting_at_zero_is_rejected_and_nothing_is_stored,
            unknown_sessions_are_not_found,
            an_id_collision_is_an_error_and_loses_nothing,
            read_prefix_returns_the_first_events,
            read_from_returns_the_events_from_a_seq_on,
            read_from_refuses_a_foreign_version_and_a_gap_it_reads,
            the_revision_changes_with_each_append_and_only_then,
            list_reports_the_revision_each_load_reports,
            list_is_empty_for_fresh_storage,
            list_returns_headers_sorted_without_reading_logs,
            a_page_of_the_listing_is_the_page_of_the_whole_listing,
            a_newer_header_version_is_refused_with_upgrade_and_not_written,
            a_stored_newer_version_is_refused_on_load_naming_upgrade,
            a_gap_before_the_last_turn_end_refuses_the_load,
            a_torn_final_record_is_dropped_on_load_and_cut_on_resume,
            store_flush_round_trips_through_a_new_context,
            store_flush_never_writes_an_event_twice,
            a_fork_child_is_persisted_once_with_its_lineage,
            resume_keeps_created_at_and_seed_length_and_does_not_grow_the_log,
            resume_closes_an_open_turn_once,
            the_store_adopts_a_stored_prefix_and_appends_only_the_rest,
            the_store_refuses_a_stored_session_at_another_cwd,
            the_store_refuses_a_stored_log_that_is_not_a_prefix,
            an_unknown_event_type_is_refused_unless_ignorable,
            concurrent_appends_on_one_instance_are_serialized,
            concurrent_flushes_through_the_store_are_serialized,
            a_second_instance_with_a_stale_view_is_rejected_and_changes_nothing,
            two_instances_appending_concurrently_never_interleave,
            a_held_writer_lock_gives_a_locked_error_and_changes_nothing,
            stores_racing_to_create_one_session_all_succeed_and_store_it_once,
            every_backend_refuses_the_same_invalid_ids,
            an_id_of_the_longest_length_is_stored_and_read_back,
            a_published_successor_is_read_in_place_of_its_source,
            a_publish_is_refused_when_the_source_changed_or_the_version_is_not_later,
            a_writer_of_the_superseded_generation_is_refused,
            fork_chains_read_back_the_events_a_copy_holds,
            a_child_created_from_a_stored_prefix_reads_back_as_the_forked_child,
            children_read_the_same_after_their_parent_is_migrated,
            list_reports_the_last_title_of_each_session,
            list_follows_titles_another_instance_appends,
            a_deleted_session_is_gone_from_every_read,
            a_second_delete_is_not_found,
            a_writer_of_a_deleted_session_is_refused_and_recreates_nothing,
            an_append_racing_a_delete_gets_an_error_never_a_resurrected_session,
            deleting_a_parent_leaves_its_descendants_reading_their_events,
            a_parent_written_after_the_fork_then_deleted_leaves_the_children_whole,
            a_deleted_id_is_created_again_without_changing_what_children_read,
            deleting_a_migrated_session_takes_every_generation,
            deleting_the_children_then_the_parent_leaves_nothing,
            a_log_read_while_its_session_is_deleted_is_whole_or_refused,
            random_creates_forks_appends_and_deletes_keep_every_live_session_whole,
        }
    };
    (@tests ($attrs:tt ($fixture:expr)); $($case:ident),* $(,)?) => {
        $($crate::suite_test! { $attrs ($fixture) cases $case })*
        /// The contract cases with sessions in format v3.
        mod v3 {
            #[allow(unused_imports)]
            use super::*;
            $($crate::suite_test! {
                $attrs
                ($crate::AtVersion::new($fixture, $crate::FormatVersion::V3))
                cases $case
            })*
        }
    };
    (@names (); $($case:ident),* $(,)?) => {
        [$((stringify!($case), $crate::cases::$case as fn(&dyn $crate::Fixture))),*]
    };
}

/// Expands to one `#[test]` per case of [`drain`] (every way a host ends writes what was
/// appended; required persistence; a follower's refresh), each against a fresh fixture made
/// by `$fixture`; attributes after the fixture go on every test, as for
/// [`contract_tests!`].
#[macro_export]
macro_rules! drain_tests {
    ($fixture:expr $(, #[$attr:meta])*) => {
        $crate::drain_tests! { @tests [$(#[$attr])*] ($fixture);
            context_dispose_drains_every_session,
            context_drop_drains_every_session,
            disabling_either_plugin_drains_every_session,
            required_persistence_refuses_memory,
            a_follower_refreshes_only_what_was_appended,
        }
    };
    (@tests $attrs:tt $fixture:tt; $($case:ident),* $(,)?) => {
        $($crate::suite_test! { $attrs $fixture drain $case })*
    };
}

/// One test of a suite: the case `$case` of this crate's module `$module` against a fresh
/// fixture made by `$fixture`, with the attributes in brackets. What [`contract_tests!`] and
/// [`drain_tests!`] expand to, once per case.
#[doc(hidden)]
#[macro_export]
macro_rules! suite_test {
    ([$($attr:tt)*] ($fixture:expr) $module:ident $case:ident) => {
        $($attr)*
        #[test]
        fn $case() {
            $crate::$module::$case(&$fixture);
        }
    };
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The names of the public functions of `cases.rs` and its submodules (every one is a
    /// case).
    fn defined_cases() -> BTreeSet<&'static str> {
        [
            include_str!("cases.rs"),
            include_str!("cases/delete_model.rs"),
            include_str!("cases/deletes.rs"),
            include_str!("cases/forks.rs"),
            include_str!("cases/generations.rs"),
            include_str!("cases/pages.rs"),
            include_str!("cases/titles.rs"),
        ]
        .into_iter()
        .flat_map(str::lines)
        .filter_map(|line| line.strip_prefix("pub fn "))
        .filter_map(|rest| rest.split('(').next())
        .collect()
    }

    #[test]
    fn contract_tests_lists_every_public_function_of_cases_rs_once() {
        let listed = contract_tests!(@list names ());
        let names: BTreeSet<&str> = listed.iter().map(|(name, _)| *name).collect();
        assert_eq!(names.len(), listed.len(), "a case is listed twice");
        let defined = defined_cases();
        assert!(!defined.is_empty(), "the scan of cases.rs finds its cases");
        let unlisted: Vec<_> = defined.difference(&names).collect();
        assert!(
            unlisted.is_empty(),
            "cases.rs defines {unlisted:?}, which contract_tests! (lib.rs) does not list: \
             add each to the list (or make a helper private)"
        );
        // The converse holds by construction: a listed name that is no case does not compile.
        assert_eq!(names, defined);
    }
}
