//! The scenarios do the work they measure, on small sizes (no test looks at a time).
//!
//! The memory figures are tested in `memory.rs`, a binary of its own with the counting
//! allocator, so that no other test allocates or frees while they count.

use dsh::session::{check_invariants, SessionPlugin, SessionStore};
use dsh::Context;
use dsh_bench::events::Emitters;
use dsh_bench::lifecycle::{
    cascade, chain, independent, load_one_by_one, pending_to_active_enable_median,
    pending_to_active_provide, up_down, Growth,
};
use dsh_bench::lookup::{baseline_map, scaling, spin, Lookup, Resolver};
use dsh_bench::measure::Caches;
use dsh_bench::{async_face, fork, generate, persist, session};
use dsh_bench_chain::{CHAIN_LEN, INDEPENDENT_LEN, LOOKUP_SERVICES};
use std::collections::HashSet;

#[test]
fn the_generated_chain_links_each_plugin_to_the_previous_service() {
    let plugins = chain(CHAIN_LEN);
    assert_eq!(CHAIN_LEN, 10_000);
    assert!(plugins[0].manifest().requires().is_empty());
    for i in 1..CHAIN_LEN {
        assert_eq!(
            plugins[i].manifest().requires(),
            plugins[i - 1].manifest().provides(),
            "c{i}"
        );
        assert_eq!(plugins[i].name(), format!("c{i}"));
    }
    let provided: HashSet<_> = plugins
        .iter()
        .map(|p| p.manifest().provides()[0].id())
        .collect();
    assert_eq!(
        provided.len(),
        CHAIN_LEN,
        "one distinct service type per plugin"
    );
}

#[test]
fn the_independent_plugins_require_nothing() {
    let plugins = independent(INDEPENDENT_LEN);
    assert!(plugins.iter().all(|p| p.manifest().requires().is_empty()));
}

#[test]
fn a_chain_activates_and_disposes_completely() {
    let times = up_down(&chain(50));
    assert!(times.activate_ms >= 0.0 && times.dispose_ms >= 0.0);
}

#[test]
fn a_chain_loaded_one_plugin_at_a_time_ends_all_active() {
    assert!(load_one_by_one(&chain(50)) >= 0.0);
}

#[test]
fn the_growth_scenario_measures_both_chains_build_dispose_and_load_and_the_bare_baseline() {
    for caches in [Caches::Warm, Caches::Cold] {
        let growth = Growth::measure(1, caches);
        for figure in [
            growth.build(),
            growth.dispose(),
            growth.load(),
            growth.baseline_build(),
            growth.baseline_dispose(),
        ] {
            assert!(figure.is_finite() && figure > 0.0, "{caches:?}: {growth:?}");
        }
        for (small, large) in [
            (growth.small, growth.large),
            (growth.bare_small, growth.bare_large),
        ] {
            assert!(
                large.activate_ms > small.activate_ms,
                "{caches:?}: {growth:?}"
            );
        }
    }
}

#[test]
fn independent_plugins_activate_and_dispose_completely() {
    up_down(&independent(50));
}

#[test]
fn a_leaf_first_chain_of_10000_cascades_up_and_down_with_its_root_on_a_small_stack() {
    // 256 KiB of stack: recursion that grows with the chain would overflow long before
    // 10,000 links (cordis overflows its stack at about 560).
    let times = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| cascade(CHAIN_LEN))
        .expect("spawn the cascade thread")
        .join()
        .expect("the cascade completes: all pending, all active, all pending again");
    assert!(times.total_ms() >= times.activate_ms);
}

#[test]
fn a_pending_dependant_becomes_active_when_its_service_is_provided() {
    assert!(pending_to_active_provide() >= 0.0);
}

#[test]
fn a_pending_dependant_follows_its_provider_on_and_off() {
    assert!(pending_to_active_enable_median(3) >= 0.0);
}

#[test]
fn every_resolver_finds_the_lookup_target() {
    assert_eq!(baseline_map().len(), LOOKUP_SERVICES);
    let lookup = Lookup::new();
    for resolver in [
        Resolver::Get,
        Resolver::With,
        Resolver::BaselineGet,
        Resolver::BaselineWith,
        Resolver::Dep,
        Resolver::BaselineArc,
        Resolver::RealmGet,
        Resolver::WithMixed,
        Resolver::BaselineWithMixed,
        Resolver::GetMixed,
        Resolver::BaselineGetMixed,
    ] {
        lookup.run(resolver, 100);
        let s = lookup.scaling(resolver, 1, 100);
        assert!(s.one_thread_per_s > 0.0 && s.two_threads_per_s > 0.0);
    }
    assert!(scaling(1, 100, spin).ratio > 0.0);
}

#[test]
fn every_listener_hears_every_emit() {
    let emitters = Emitters::new(10);
    assert!(emitters.emits_per_s(20) > 0.0);
    assert!(emitters.baseline_emits_per_s(20) > 0.0);
}

#[test]
fn the_generator_makes_valid_logs_of_exactly_the_asked_length_ending_with_a_turn_end() {
    let first = generate::TURN_LEN + 1;
    assert_eq!(generate::turn(2, 4).len(), generate::TURN_LEN);
    for len in [first, first + 1, first + generate::TURN_LEN, 1000, 1234] {
        let events = generate::events(len);
        assert_eq!(events.len(), len);
        assert_eq!(events.last().map(|e| e.kind.as_str()), Some("turn/end"));
        assert_eq!(check_invariants(&events), [], "len {len}");
        let (_ctx, session, _) = fork::source(len); // the store accepts it as a seed
        assert_eq!(session.len(), len);
    }
}

#[test]
fn a_generated_session_written_through_the_store_loads_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let (id, file) = session::write_session(dir.path(), 500);
    assert_eq!(session::load(dir.path(), &id).1, 500);
    assert!(
        session::baseline_parse(&file).1.len() > 1,
        "header and rows"
    );
}

#[test]
fn appends_in_memory_and_with_a_flush_at_every_turn_end_complete() {
    let mem = Context::builder()
        .add_plugin(SessionPlugin)
        .build()
        .unwrap();
    assert!(
        session::appends_per_s(&mem.expect::<SessionStore>(), generate::drafts(100), false) > 0.0
    );
    let dir = tempfile::tempdir().unwrap();
    let durable = session::jsonl_context(dir.path());
    let store = durable.expect::<SessionStore>();
    assert!(session::appends_per_s(&store, generate::drafts(100), true) > 0.0);
    assert!(store.list().is_empty(), "the measured session is disposed");
}

#[test]
fn a_fork_of_a_generated_session_seeds_the_whole_source_and_leaves_no_child() {
    let (ctx, source, events) = fork::source(300);
    let (us, _) = fork::fork_once(&ctx, &source);
    assert!(us >= 0.0);
    assert!(fork::deep_clone_once(&events) >= 0.0);
    assert_eq!(
        ctx.expect::<SessionStore>().list().len(),
        1,
        "only the source is live"
    );
}

#[test]
fn the_binary_offers_the_core_session_fork_and_persist_subcommands() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dsh-bench"))
        .arg("--help")
        .output()
        .expect("run dsh-bench --help");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for command in ["core", "session", "fork", "persist"] {
        assert!(help.contains(command), "{command}: {help}");
    }
}

#[test]
fn the_hidden_lifecycle_work_runs_the_chain_silently_and_refuses_a_chain_too_long() {
    let run = |plugins: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_dsh-bench"))
            .args(["lifecycle-work", plugins, "1"])
            .output()
            .expect("run dsh-bench lifecycle-work")
    };
    let out = run("20");
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty(), "it measures nothing: {out:?}");
    assert!(
        !run("10001").status.success(),
        "the chain has 10,000 plugins"
    );
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_dsh-bench"))
        .arg("--help")
        .output()
        .expect("run dsh-bench --help");
    assert!(!String::from_utf8_lossy(&help.stdout).contains("lifecycle-work"));
}

#[test]
fn the_quick_plan_sizes_the_loaded_file_below_the_full_one() {
    use dsh_bench::measure::Plan;
    let quick = session::Sizes::of(Plan::QUICK);
    let full = session::Sizes::of(Plan::FULL);
    assert!(quick.load_events > generate::TURN_LEN);
    assert!(quick.load_events < full.load_events);
    // About 50 MB in the full plan: a generated event is a few hundred bytes.
    assert!(full.load_events > 50_000, "{}", full.load_events);
}

#[test]
fn the_persist_scenarios_measure_every_backend_next_to_the_baselines() {
    let sizes = persist::Sizes {
        flushes: 3,
        load_events: 300,
        reps: 1,
        paired_reps: 2,
    };
    let figures = persist::measure(sizes, |_| {});
    let names: Vec<&str> = figures.iter().map(|(name, _)| name.as_str()).collect();
    let mut expected = Vec::new();
    for backend in ["jsonl", "sqlite"] {
        expected.extend([
            format!("{backend}_flush_per_s"),
            format!("flush_ratio_{backend}"),
            format!("{backend}_turn_per_s"),
            format!("turn_ratio_{backend}"),
            format!("{backend}_flush_8threads_per_s"),
            format!("flush_8threads_scaling_{backend}"),
            format!("{backend}_load_events_per_s"),
            format!("{backend}_read_from_us"),
            format!("read_from_ratio_{backend}"),
        ]);
        if backend == "jsonl" {
            expected.push("read_from_ratio".into());
        }
    }
    for backend in ["jsonl", "sqlite"] {
        for kind in ["", "_changed", "_cold"] {
            expected.extend([
                format!("{backend}_list_page{kind}_ms_100"),
                format!("{backend}_list_page{kind}_ms_10000"),
                format!("list_page{kind}_growth_{backend}"),
            ]);
        }
    }
    expected.extend(
        [
            "list_page",
            "baseline_fsync_flush_per_s",
            "baseline_fsync_8threads_per_s",
            "baseline_fsync_8threads_scaling",
            "baseline_parse_events_per_s",
            "events_per_flush",
            "flush_threads",
            "load_events",
            "tail_events",
        ]
        .map(String::from),
    );
    assert_eq!(names, expected);
    assert!(figures.iter().all(|(_, value)| *value > 0.0), "{figures:?}");
    let turns = persist::turn_lines(2);
    let lines = turns[0].iter().filter(|b| **b == b'\n').count();
    assert_eq!(
        lines,
        persist::EVENTS_PER_FLUSH,
        "a flushed turn has 20 events"
    );
}

#[test]
fn the_async_scenarios_measure_every_backend_with_the_heartbeat() {
    let sizes = persist::Sizes {
        flushes: 3,
        load_events: 0,
        reps: 1,
        paired_reps: 1,
    };
    let figures = async_face::measure(sizes, |_| {});
    let names: Vec<&str> = figures.iter().map(|(name, _)| name.as_str()).collect();
    let mut expected = Vec::new();
    for backend in ["jsonl", "sqlite"] {
        expected.extend([
            format!("{backend}_async_flush_per_s"),
            format!("{backend}_sync_threads_flush_per_s"),
            format!("async_flush_ratio_{backend}"),
            format!("heartbeat_late_ms_p99_{backend}"),
            format!("heartbeat_late_ms_p99_sync_on_workers_{backend}"),
        ]);
    }
    expected.extend(
        [
            "heartbeat_late_ms_p99_idle",
            "async_flush_ratio",
            "heartbeat_late_ms_p99",
            "heartbeat_ms",
            "events_per_flush",
            "flush_tasks",
        ]
        .map(String::from),
    );
    assert_eq!(names, expected);
    let rates = figures.iter().filter(|(name, _)| name.contains("flush"));
    assert!(rates.clone().all(|(_, value)| *value > 0.0), "{figures:?}");
    assert!(
        figures.iter().all(|(_, value)| *value >= 0.0),
        "{figures:?}"
    );
}

#[test]
fn read_from_returns_the_last_events_of_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.jsonl");
    for backend in persist::Backend::all(dir.path()) {
        let ctx = backend.context();
        persist::write_load_session(&ctx, "tail", 400, &plain);
        let service = ctx.expect::<SessionStore>().persistence().unwrap();
        let (load, read_from) = persist::load_and_read_from(service.as_ref(), "tail");
        assert!(
            load.as_nanos() > 0 && read_from.as_nanos() > 0,
            "{}",
            backend.name
        );
    }
}

#[test]
fn concurrent_flushes_flush_every_session_and_dispose_them() {
    let dir = tempfile::tempdir().unwrap();
    for backend in persist::Backend::all(dir.path()) {
        let ctx = backend.context();
        assert!(persist::threaded_flushes_per_s(&ctx, "t", 3, 2) > 0.0);
        let store = ctx.expect::<SessionStore>();
        assert!(store.list().is_empty(), "{}: disposed", backend.name);
        let stored = store.persistence().unwrap().list().unwrap();
        assert_eq!(stored.len(), 3, "{}: one session per thread", backend.name);
    }
    let turns = persist::turn_lines(2);
    assert!(persist::baseline_threaded_flushes_per_s(dir.path(), 3, &turns) > 0.0);
}

#[test]
fn the_acp_scenarios_replay_every_stored_session_and_fork_open_ones() {
    use dsh::session::SessionStore;
    use dsh_bench::acp::{context, create, fork_once, history_once, load_once, runtime, Client};
    let runtime = runtime();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let ctx = context(Some(dir.path()));
    let id = create(&ctx, "small", 240);
    let store = ctx.expect::<SessionStore>();
    store.dispose(&id).expect("written and closed");
    let mut client = Client::connect(&runtime, &ctx.expect::<dsh::acp::AcpServer>());
    let (_, updates) = load_once(&runtime, &mut client, &id);
    assert!(updates > 0, "the load replays the log");
    assert!(
        store.get(&id).is_none(),
        "the session is closed after the load"
    );
    assert_eq!(history_once(&store, &id).1, 240);
    let memory = context(None);
    let open = create(&memory, "open", 240);
    let mut client = Client::connect(&runtime, &memory.expect::<dsh::acp::AcpServer>());
    assert!(fork_once(&runtime, &mut client, &open) >= 0.0);
    assert_eq!(
        memory.expect::<SessionStore>().list().len(),
        1,
        "the child is closed after the fork"
    );
}
