//! dsh-bench: measurements of dsh-rs, each next to a baseline measured in the same run.
//!
//! `core` figures: the scenario groups are [`lookup`] (service resolution on one and two threads),
//! [`lifecycle`] (chains, independent plugins, pending to active, the 10,000-plugin cascade)
//! and [`events`] (emit to 10 listeners). [`run_core`] runs them all into a
//! [`report::Report`]. The plugins and service types come from the `dsh-bench-chain` crate,
//! generated at compile time. `session` figures ([`session`]), `fork` figures ([`fork`]) and
//! `persist` figures ([`persist`], every persistence backend), `async` figures
//! ([`async_face`], the async face on a tokio runtime with a heartbeat) and `acp` figures
//! ([`acp`], `dsh acp`'s server in process) run on logs from [`generate`],
//! shaped like dsh turns. No randomness: every run does the
//! same work.
//!
//! ```text
//! cargo run --release -p dsh-bench -- core          # a table, about 30 s
//! cargo run --release -p dsh-bench -- core --json   # one JSON line
//! cargo run --release -p dsh-bench -- session --json
//! cargo run --release -p dsh-bench -- fork --json
//! cargo run --release -p dsh-bench -- persist --json
//! cargo run --release -p dsh-bench -- async --json
//! cargo run --release -p dsh-bench -- acp --json
//! cargo bench -p dsh-bench                          # the criterion benches, under a minute
//! ```

// Only the counting allocator (`alloc.rs`) may use `unsafe`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod acp;
pub mod acp_load;
#[allow(unsafe_code)]
pub mod alloc;
pub mod async_face;
pub mod bare_registry;
pub mod cold_fork;
pub mod events;
pub mod fork;
pub mod generate;
pub mod lifecycle;
pub mod lineage;
pub mod listing;
pub mod lookup;
pub mod measure;
pub mod persist;
pub mod pressure;
pub mod reads;
pub mod report;
pub mod session;
pub mod stored_fork;

use lookup::{Lookup, Resolver};
use measure::{median, paired_medians, Caches, Plan};
use report::Report;

/// Plugins in the measured chains and sets.
pub const CHAIN_1000: usize = 1000;
/// Plugins in the leaf-first cascade.
pub const CASCADE_10000: usize = 10_000;
/// Listeners of the emitted event.
pub const LISTENERS: usize = 10;

/// Runs every `core` scenario with `plan`, calling `progress` with the name of each group as
/// it starts.
///
/// # Panics
/// When a scenario does not reach the states it measures (see [`lifecycle`]).
pub fn run_core(plan: Plan, mut progress: impl FnMut(&str)) -> Report {
    let mut report = Report {
        quick: plan != Plan::FULL,
        ..Report::default()
    };

    progress("lookup");
    let lookup = Lookup::new();
    lookup::await_asymmetric_fences();
    for resolver in [
        Resolver::Get,
        Resolver::BaselineGet,
        Resolver::With,
        Resolver::BaselineWith,
        Resolver::Dep,
        Resolver::BaselineArc,
        Resolver::RealmGet,
        Resolver::WithMixed,
        Resolver::BaselineWithMixed,
        Resolver::GetMixed,
        Resolver::BaselineGetMixed,
    ] {
        lookup.run(resolver, plan.iters); // warm-up
    }
    (report.get_ns, report.baseline_get_ns) = paired_medians(
        plan.reps,
        || lookup.ns_per_lookup(Resolver::Get, plan.iters),
        || lookup.ns_per_lookup(Resolver::BaselineGet, plan.iters),
    );
    report.get_ratio = report.get_ns / report.baseline_get_ns;
    (report.with_ns, report.baseline_with_ns) = paired_medians(
        plan.reps,
        || lookup.ns_per_lookup(Resolver::With, plan.iters),
        || lookup.ns_per_lookup(Resolver::BaselineWith, plan.iters),
    );
    report.with_ratio = report.with_ns / report.baseline_with_ns;
    report.asymmetric_fences = f64::from(u8::from(dsh_core::asymmetric_read_fences()));
    report.announce_ns = median(
        (0..plan.reps)
            .map(|_| lookup::announce_ns(plan.iters))
            .collect(),
    );
    (report.dep_ns, report.baseline_arc_ns) = paired_medians(
        plan.reps,
        || lookup.ns_per_lookup(Resolver::Dep, plan.iters),
        || lookup.ns_per_lookup(Resolver::BaselineArc, plan.iters),
    );
    report.dep_ratio = report.dep_ns / report.baseline_arc_ns;
    // What a host does: the 32 registered types in turn (the loops above keep one key hot).
    let mixed_iters = (plan.iters / 32).max(1);
    (report.with_mixed_ns, report.baseline_with_mixed_ns) = paired_medians(
        plan.reps,
        || lookup.ns_per_lookup(Resolver::WithMixed, mixed_iters),
        || lookup.ns_per_lookup(Resolver::BaselineWithMixed, mixed_iters),
    );
    report.with_mixed_ratio = report.with_mixed_ns / report.baseline_with_mixed_ns;
    (report.get_mixed_ns, report.baseline_get_mixed_ns) = paired_medians(
        plan.reps,
        || lookup.ns_per_lookup(Resolver::GetMixed, mixed_iters),
        || lookup.ns_per_lookup(Resolver::BaselineGetMixed, mixed_iters),
    );
    report.get_mixed_ratio = report.get_mixed_ns / report.baseline_get_mixed_ns;
    let outside_ns;
    (report.realm_lookup_ns, outside_ns) = paired_medians(
        plan.reps,
        || lookup.ns_per_lookup(Resolver::RealmGet, plan.iters),
        || lookup.ns_per_lookup(Resolver::Get, plan.iters),
    );
    report.realm_lookup_ratio = report.realm_lookup_ns / outside_ns;

    progress("lookup on two threads");
    let get = lookup.scaling(Resolver::Get, plan.reps, plan.iters);
    report.get_1thread_per_s = get.one_thread_per_s;
    report.get_2threads_per_s = get.two_threads_per_s;
    report.get_2threads_scaling = get.ratio;
    report.baseline_get_2threads_scaling = lookup
        .scaling(Resolver::BaselineGet, plan.reps, plan.iters)
        .ratio;
    report.with_2threads_scaling = lookup.scaling(Resolver::With, plan.reps, plan.iters).ratio;
    report.baseline_with_2threads_scaling = lookup
        .scaling(Resolver::BaselineWith, plan.reps, plan.iters)
        .ratio;
    report.dep_2threads_scaling = lookup.scaling(Resolver::Dep, plan.reps, plan.iters).ratio;
    report.spin_2threads_scaling = lookup::scaling(plan.reps, plan.iters, lookup::spin).ratio;
    drop(lookup);

    progress("chain and independent plugins");
    let chain_1000 = lifecycle::chain(CHAIN_1000);
    lifecycle::up_down(&chain_1000); // warm-up
    let chain = lifecycle::up_down_median(&chain_1000, plan.lifecycle_reps);
    report.activate_chain_1000_ms = chain.activate_ms;
    report.dispose_chain_1000_ms = chain.dispose_ms;
    report.activate_chain_1000_incremental_ms =
        lifecycle::load_one_by_one_median(&chain_1000, plan.lifecycle_reps);
    report.chain_incremental_ratio =
        report.activate_chain_1000_incremental_ms / report.activate_chain_1000_ms;
    let independent =
        lifecycle::up_down_median(&lifecycle::independent(CHAIN_1000), plan.lifecycle_reps);
    report.activate_independent_1000_ms = independent.activate_ms;
    report.dispose_independent_1000_ms = independent.dispose_ms;

    progress("growth from 100 to 10,000 plugins");
    report.growth = lifecycle::Growth::measure(plan.cascade_reps, Caches::Warm).figures();
    progress("growth from 100 to 10,000 plugins, caches emptied before each");
    report.growth_cold = lifecycle::Growth::measure(plan.cascade_reps, Caches::Cold).figures();

    progress("pending to active");
    report.pending_to_active_us = lifecycle::pending_to_active_provide_median(plan.pending_reps);
    report.pending_to_active_enable_us =
        lifecycle::pending_to_active_enable_median(plan.pending_reps);

    progress("cascades");
    let (_, cascade_1000) = lifecycle::cascade_median(CHAIN_1000, plan.lifecycle_reps);
    report.cascade_chain_1000_ms = cascade_1000;
    let (halves, total) = lifecycle::cascade_median(CASCADE_10000, plan.cascade_reps);
    report.cascade_chain_10000_ms = total;
    report.cascade_chain_10000_activate_ms = halves.activate_ms;
    report.cascade_chain_10000_teardown_ms = halves.teardown_ms;
    report.cascade_chain_10000_build_ms = halves.build_ms;

    progress("events");
    let emitters = events::Emitters::new(LISTENERS);
    let emits = (plan.iters / 10).max(1);
    emitters.emits_per_s(emits); // warm-up
    (
        report.emit_10_listeners_per_s,
        report.baseline_emit_10_listeners_per_s,
    ) = paired_medians(
        plan.reps,
        || emitters.emits_per_s(emits),
        || emitters.baseline_emits_per_s(emits),
    );
    report.emit_ratio = report.baseline_emit_10_listeners_per_s / report.emit_10_listeners_per_s;

    report
}
