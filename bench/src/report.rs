//! The figures of one `core` run and their two renderings: one JSON line, or a table for a
//! person with each figure next to its in-run baseline and the cordis figures of issue 3.

use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt::Write as _;

/// Every figure of one `core` run. Times are medians over the plan's repetitions; ratios are
/// dsh-core's time over the baseline's (so lower is better, 1.0 is parity).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Whether the quick plan was used (noisier figures).
    pub quick: bool,
    /// `ctx.get::<T>()` with 32 services registered, nanoseconds.
    pub get_ns: f64,
    /// `HashMap<TypeId, Box<dyn Any + Send + Sync>>` lookup + downcast + `Arc` clone, ns.
    pub baseline_get_ns: f64,
    /// `get_ns / baseline_get_ns` (target <= 1.5).
    pub get_ratio: f64,
    /// `ctx.with::<T>(..)` (borrow, no reference count), nanoseconds.
    pub with_ns: f64,
    /// The baseline map's lookup + downcast, borrowed, nanoseconds.
    pub baseline_with_ns: f64,
    /// `with_ns / baseline_with_ns` (target <= 1.5).
    pub with_ratio: f64,
    /// A hazard announcement alone, as `with` makes one (a store to a slot, a sequentially
    /// consistent fence, the cell loaded again), nanoseconds: the fixed cost `with` pays over
    /// the map borrow, this machine's price of one locked instruction (no target; it moves
    /// `with_ratio` from one machine to another).
    pub announce_ns: f64,
    /// 1 when this process's hazard reads use asymmetric fences (no locked instruction; see
    /// `dsh_core::asymmetric_read_fences`), 0 when they pay the fence `announce_ns` measures.
    pub asymmetric_fences: f64,
    /// `ctx.with::<T>(..)` over the 32 registered types in turn (what a host resolving several
    /// services does; `with_ns` keeps one type hot), nanoseconds per lookup.
    pub with_mixed_ns: f64,
    /// The baseline borrow over the same 32 types in turn, ns per lookup.
    pub baseline_with_mixed_ns: f64,
    /// `with_mixed_ns / baseline_with_mixed_ns` (target <= 1.5).
    pub with_mixed_ratio: f64,
    /// `ctx.get::<T>()` over the 32 registered types in turn, ns per lookup.
    pub get_mixed_ns: f64,
    /// The baseline lookup and `Arc` clone over the same 32 types in turn, ns per lookup.
    pub baseline_get_mixed_ns: f64,
    /// `get_mixed_ns / baseline_get_mixed_ns` (target <= 1.5).
    pub get_mixed_ratio: f64,
    /// A read of a `Dep<T>` resolved once (`dep.get()`, a borrow), nanoseconds.
    pub dep_ns: f64,
    /// A bare `Arc<T>` deref, nanoseconds.
    pub baseline_arc_ns: f64,
    /// `dep_ns / baseline_arc_ns` (target <= 3).
    pub dep_ratio: f64,
    /// `realm.get::<T>()` through an isolation realm with its own provider of `T`, ns.
    pub realm_lookup_ns: f64,
    /// `realm_lookup_ns` over a `ctx.get::<T>()` outside the realm measured beside it (its
    /// own pairing, so not exactly `realm_lookup_ns / get_ns`).
    pub realm_lookup_ratio: f64,
    /// `get` lookups per second on one thread.
    pub get_1thread_per_s: f64,
    /// `get` lookups per second on two threads resolving the same service.
    pub get_2threads_per_s: f64,
    /// Lookups/s on 2 threads over 1 thread with `ctx.get` (both threads clone one `Arc`, so
    /// they contend on its reference count: shown, not targeted).
    pub get_2threads_scaling: f64,
    /// The same for the baseline `get` (the `Arc` clone's shared reference count alone).
    pub baseline_get_2threads_scaling: f64,
    /// Lookups/s on 2 threads over 1 thread with `ctx.with` (a borrow; target >= 1.8).
    pub with_2threads_scaling: f64,
    /// The same for the baseline borrow.
    pub baseline_with_2threads_scaling: f64,
    /// Reads/s on 2 threads over 1 thread of one `Dep` (target >= 1.8).
    pub dep_2threads_scaling: f64,
    /// The same for pure arithmetic on registers: the most two threads gain on this machine.
    pub spin_2threads_scaling: f64,
    /// A chain of 1000 plugins (each requiring the previous one's service), root first, from
    /// nothing to all active, milliseconds.
    pub activate_chain_1000_ms: f64,
    /// That chain from all active to all disposed (`Context::dispose`), ms.
    pub dispose_chain_1000_ms: f64,
    /// The same chain loaded into an empty context one `load` call at a time, root first,
    /// until all active, ms.
    pub activate_chain_1000_incremental_ms: f64,
    /// `activate_chain_1000_incremental_ms / activate_chain_1000_ms` (target <= 2).
    pub chain_incremental_ratio: f64,
    /// 1000 independent plugins from nothing to all active, ms.
    pub activate_independent_1000_ms: f64,
    /// Those from all active to all disposed, ms.
    pub dispose_independent_1000_ms: f64,
    /// The growth per plugin from a chain of 100 to one of 10,000, the caches warm from the
    /// repetition before (`activate_chain_100_ms`, `build_per_plugin_growth` and the rest).
    pub growth: GrowthFigures,
    /// The same with the CPU caches emptied before each timed part (the same names ending
    /// `_cold`): what a host's one build at start-up pays per plugin at 10,000 over at 100,
    /// without the small chain's edge of staying cached.
    pub growth_cold: GrowthFigures,
    /// From the root `provide` of a service to its pending dependant being active, us.
    pub pending_to_active_us: f64,
    /// From enabling the provider of a service to its pending dependant being active, us.
    pub pending_to_active_enable_us: f64,
    /// A chain of 10,000 registered leaf-first: activation when the root appears plus
    /// tear-down when it goes, ms.
    pub cascade_chain_10000_ms: f64,
    /// The activation half of `cascade_chain_10000_ms`, ms.
    pub cascade_chain_10000_activate_ms: f64,
    /// The tear-down half of `cascade_chain_10000_ms`, ms.
    pub cascade_chain_10000_teardown_ms: f64,
    /// Building the context of the 10,000 cascade (registered leaf-first, root disabled),
    /// before the cascade and not part of it, ms.
    pub cascade_chain_10000_build_ms: f64,
    /// The same cascade with 1000 plugins, ms (a linear core needs a tenth of the 10,000).
    pub cascade_chain_1000_ms: f64,
    /// Emits per second of one event to 10 listeners through `ctx.emit`.
    pub emit_10_listeners_per_s: f64,
    /// Emits per second of the baseline: a `Vec` of 10 boxed listeners called in order.
    pub baseline_emit_10_listeners_per_s: f64,
    /// `baseline_emit_10_listeners_per_s / emit_10_listeners_per_s` (time per emit over the
    /// baseline's; target <= 2).
    pub emit_ratio: f64,
}

/// How the cost per plugin of a chain's build, dispose and one-load-at-a-time activation
/// grows from 100 plugins to 10,000 in one cache state: each chain's whole time (medians, ms)
/// and the time per plugin at 10,000 over at 100 (1 means linear; target <= 1.5).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GrowthFigures {
    /// The chain of 100 built at once, root first, until all active, ms.
    pub activate_100_ms: f64,
    /// The chain of 10,000 likewise, ms.
    pub activate_10000_ms: f64,
    /// The build's growth per plugin.
    pub build: f64,
    /// The chain of 100 from all active to all disposed, ms.
    pub dispose_100_ms: f64,
    /// The chain of 10,000 likewise, ms.
    pub dispose_10000_ms: f64,
    /// The dispose's growth per plugin.
    pub dispose: f64,
    /// The chain of 100 loaded one `load` call at a time until all active, ms.
    pub load_100_ms: f64,
    /// The chain of 10,000 likewise, ms.
    pub load_10000_ms: f64,
    /// One-load-at-a-time's growth per plugin.
    pub load: f64,
    /// The bare registry's build growth per plugin (`crate::bare_registry`): what the caches
    /// impose on any registry of maps, the baseline of `build` and `load`.
    pub baseline_build: f64,
    /// The bare registry's dispose growth per plugin, the baseline of `dispose`.
    pub baseline_dispose: f64,
}

impl GrowthFigures {
    /// The figures named as in the JSON line, `state` (`""` or `"_cold"`) before a time's
    /// `_ms` and after a growth's name: `activate_chain_100_ms`, `build_per_plugin_growth`,
    /// `dispose_chain_10000_cold_ms`, `load_per_plugin_growth_cold`.
    fn named(&self, state: &str) -> [(Cow<'static, str>, f64); 11] {
        let time =
            |what: &str, n: u32, value: f64| (format!("{what}_chain_{n}{state}_ms").into(), value);
        let growth =
            |what: &str, value: f64| (format!("{what}_per_plugin_growth{state}").into(), value);
        [
            time("activate", 100, self.activate_100_ms),
            time("activate", 10_000, self.activate_10000_ms),
            growth("build", self.build),
            time("dispose", 100, self.dispose_100_ms),
            time("dispose", 10_000, self.dispose_10000_ms),
            growth("dispose", self.dispose),
            time("load", 100, self.load_100_ms),
            time("load", 10_000, self.load_10000_ms),
            growth("load", self.load),
            growth("baseline_build", self.baseline_build),
            growth("baseline_dispose", self.baseline_dispose),
        ]
    }

    /// One line for a person: each growth with the two chains' times.
    fn summary(&self) -> String {
        let r = round3;
        format!(
            "build {} ({} -> {} ms), dispose {} ({} -> {} ms), one load at a time {} ({} -> {} ms); bare maps: build {}, dispose {}",
            r(self.build),
            r(self.activate_100_ms),
            r(self.activate_10000_ms),
            r(self.dispose),
            r(self.dispose_100_ms),
            r(self.dispose_10000_ms),
            r(self.load),
            r(self.load_100_ms),
            r(self.load_10000_ms),
            r(self.baseline_build),
            r(self.baseline_dispose),
        )
    }
}

/// One JSON object of `figures` (each rounded by [`round3`], in order), then `"plan"`
/// (`"full"` or `"quick"`): the line every `dsh-bench` subcommand prints with `--json`.
pub fn json_line<N: Into<String>>(figures: Vec<(N, f64)>, quick: bool) -> Value {
    let mut map = Map::new();
    for (name, value) in figures {
        map.insert(name.into(), Value::from(round3(value)));
    }
    map.insert(
        "plan".to_owned(),
        Value::from(if quick { "quick" } else { "full" }),
    );
    Value::Object(map)
}

/// A plain table of `figures` under `title`, one `name  value` line each (rounded by
/// [`round3`]): the human output of the subcommands without a table of their own.
pub fn figures_table<N: AsRef<str>>(title: &str, figures: &[(N, f64)], quick: bool) -> String {
    let plan = if quick {
        "quick plan, noisy"
    } else {
        "full plan"
    };
    let mut out = format!("{title} ({plan}; medians; baselines measured in the same run)\n");
    let width = figures
        .iter()
        .map(|(n, _)| n.as_ref().len())
        .max()
        .unwrap_or(0);
    for (name, value) in figures {
        let _ = writeln!(out, "  {:<width$}  {}", name.as_ref(), round3(*value));
    }
    out
}

/// Rounds to three significant digits (whole numbers from 1000 up), so the JSON line carries
/// no false precision.
pub fn round3(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    if x.abs() >= 1000.0 {
        return x.round();
    }
    let digits = 2 - x.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

impl Report {
    /// The figures in output order, named as in the JSON line.
    pub fn figures(&self) -> Vec<(Cow<'static, str>, f64)> {
        let before_growth: Vec<(&'static str, f64)> = vec![
            ("get_ns", self.get_ns),
            ("baseline_get_ns", self.baseline_get_ns),
            ("get_ratio", self.get_ratio),
            ("with_ns", self.with_ns),
            ("baseline_with_ns", self.baseline_with_ns),
            ("with_ratio", self.with_ratio),
            ("announce_ns", self.announce_ns),
            ("asymmetric_fences", self.asymmetric_fences),
            ("with_mixed_ns", self.with_mixed_ns),
            ("baseline_with_mixed_ns", self.baseline_with_mixed_ns),
            ("with_mixed_ratio", self.with_mixed_ratio),
            ("get_mixed_ns", self.get_mixed_ns),
            ("baseline_get_mixed_ns", self.baseline_get_mixed_ns),
            ("get_mixed_ratio", self.get_mixed_ratio),
            ("dep_ns", self.dep_ns),
            ("baseline_arc_ns", self.baseline_arc_ns),
            ("dep_ratio", self.dep_ratio),
            ("realm_lookup_ns", self.realm_lookup_ns),
            ("realm_lookup_ratio", self.realm_lookup_ratio),
            ("get_1thread_per_s", self.get_1thread_per_s),
            ("get_2threads_per_s", self.get_2threads_per_s),
            ("get_2threads_scaling", self.get_2threads_scaling),
            (
                "baseline_get_2threads_scaling",
                self.baseline_get_2threads_scaling,
            ),
            ("with_2threads_scaling", self.with_2threads_scaling),
            (
                "baseline_with_2threads_scaling",
                self.baseline_with_2threads_scaling,
            ),
            ("dep_2threads_scaling", self.dep_2threads_scaling),
            ("spin_2threads_scaling", self.spin_2threads_scaling),
            ("activate_chain_1000_ms", self.activate_chain_1000_ms),
            ("dispose_chain_1000_ms", self.dispose_chain_1000_ms),
            (
                "activate_chain_1000_incremental_ms",
                self.activate_chain_1000_incremental_ms,
            ),
            ("chain_incremental_ratio", self.chain_incremental_ratio),
            (
                "activate_independent_1000_ms",
                self.activate_independent_1000_ms,
            ),
            (
                "dispose_independent_1000_ms",
                self.dispose_independent_1000_ms,
            ),
        ];
        let after_growth: Vec<(&'static str, f64)> = vec![
            ("pending_to_active_us", self.pending_to_active_us),
            (
                "pending_to_active_enable_us",
                self.pending_to_active_enable_us,
            ),
            ("cascade_chain_10000_ms", self.cascade_chain_10000_ms),
            (
                "cascade_chain_10000_activate_ms",
                self.cascade_chain_10000_activate_ms,
            ),
            (
                "cascade_chain_10000_teardown_ms",
                self.cascade_chain_10000_teardown_ms,
            ),
            (
                "cascade_chain_10000_build_ms",
                self.cascade_chain_10000_build_ms,
            ),
            ("cascade_chain_1000_ms", self.cascade_chain_1000_ms),
            ("emit_10_listeners_per_s", self.emit_10_listeners_per_s),
            (
                "baseline_emit_10_listeners_per_s",
                self.baseline_emit_10_listeners_per_s,
            ),
            ("emit_ratio", self.emit_ratio),
        ];
        let named = |list: Vec<(&'static str, f64)>| {
            list.into_iter()
                .map(|(name, value)| (Cow::Borrowed(name), value))
        };
        named(before_growth)
            .chain(self.growth.named(""))
            .chain(self.growth_cold.named("_cold"))
            .chain(named(after_growth))
            .collect()
    }

    /// One JSON object: every figure (rounded by [`round3`]) in [`Report::figures`] order,
    /// then `"plan"` (`"full"` or `"quick"`).
    pub fn to_json(&self) -> Value {
        json_line(self.figures(), self.quick)
    }

    /// The table for a person: each figure with its baseline and, where issue 3 quotes one,
    /// the cordis 3.18.1 figure (measured there, not here).
    pub fn to_human(&self) -> String {
        let r = |x: f64| round3(x);
        let mut out = String::new();
        let plan = if self.quick {
            "quick plan, noisy"
        } else {
            "full plan"
        };
        writeln!(
            out,
            "dsh-core benchmarks ({plan}; medians; baselines measured in the same run)"
        )
        .unwrap();
        writeln!(out, "\nlookup, 32 services registered").unwrap();
        writeln!(
            out,
            "  get        {:>10} ns   baseline {:>8} ns   ratio {:>5}  (target <= 1.5; cordis 17,000 ns)",
            r(self.get_ns),
            r(self.baseline_get_ns),
            r(self.get_ratio)
        )
        .unwrap();
        writeln!(
            out,
            "  with       {:>10} ns   baseline {:>8} ns   ratio {:>5}  (target <= 1.5; http::Extensions 11 ns, bevy_ecs resource 14 ns)",
            r(self.with_ns),
            r(self.baseline_with_ns),
            r(self.with_ratio)
        )
        .unwrap();
        let fences = if self.asymmetric_fences == 1.0 {
            "with's reads here skip it: asymmetric fences, membarrier on the writer's side"
        } else {
            "with's reads here pay it: symmetric fences"
        };
        writeln!(
            out,
            "  announce   {:>10} ns   (a hazard announcement with a SeqCst fence, one locked instruction; {fences})",
            r(self.announce_ns)
        )
        .unwrap();
        writeln!(
            out,
            "  32 types in turn: with {} ns, baseline {} ns, ratio {}; get {} ns, baseline {} ns, ratio {}  (targets <= 1.5: what a host resolving several services pays)",
            r(self.with_mixed_ns),
            r(self.baseline_with_mixed_ns),
            r(self.with_mixed_ratio),
            r(self.get_mixed_ns),
            r(self.baseline_get_mixed_ns),
            r(self.get_mixed_ratio)
        )
        .unwrap();
        writeln!(
            out,
            "  Dep read   {:>10} ns   Arc deref {:>7} ns   ratio {:>5}  (target <= 3)",
            r(self.dep_ns),
            r(self.baseline_arc_ns),
            r(self.dep_ratio)
        )
        .unwrap();
        writeln!(
            out,
            "  realm get  {:>10} ns   over get outside a realm: ratio {:>5}",
            r(self.realm_lookup_ns),
            r(self.realm_lookup_ratio)
        )
        .unwrap();
        writeln!(
            out,
            "  2 threads / 1 thread: with {} (baseline {}), Dep {} (targets >= 1.8; machine ceiling {}); get {} (baseline {}; {} -> {} lookups/s, one shared reference count: not targeted)",
            r(self.with_2threads_scaling),
            r(self.baseline_with_2threads_scaling),
            r(self.dep_2threads_scaling),
            r(self.spin_2threads_scaling),
            r(self.get_2threads_scaling),
            r(self.baseline_get_2threads_scaling),
            r(self.get_1thread_per_s),
            r(self.get_2threads_per_s),
        )
        .unwrap();
        writeln!(out, "\nlifecycle").unwrap();
        writeln!(
            out,
            "  chain 1000, root first: activate {} ms, dispose {} ms  (cordis 1,009 ms, 708 ms)",
            r(self.activate_chain_1000_ms),
            r(self.dispose_chain_1000_ms)
        )
        .unwrap();
        writeln!(
            out,
            "  chain 1000, one load at a time: {} ms, ratio {} to the build at once  (target <= 2)",
            r(self.activate_chain_1000_incremental_ms),
            r(self.chain_incremental_ratio)
        )
        .unwrap();
        writeln!(
            out,
            "  1000 independent:       activate {} ms, dispose {} ms",
            r(self.activate_independent_1000_ms),
            r(self.dispose_independent_1000_ms)
        )
        .unwrap();
        for (label, growth, targets) in [
            (
                "growth per plugin, 100 -> 10,000",
                &self.growth,
                "  (targets <= 1.5)",
            ),
            (
                "the same, caches emptied before each",
                &self.growth_cold,
                "",
            ),
        ] {
            writeln!(out, "  {label}: {}{targets}", growth.summary()).unwrap();
        }
        writeln!(
            out,
            "  pending to active:      {} us by a root provide, {} us by enabling the provider  (cordis 1,020 us)",
            r(self.pending_to_active_us),
            r(self.pending_to_active_enable_us)
        )
        .unwrap();
        writeln!(
            out,
            "  cascade, leaf-first:    10,000 in {} ms (activate {} + tear down {}; the build before it {} ms); 1000 in {} ms (x{} for 10x the plugins)",
            r(self.cascade_chain_10000_ms),
            r(self.cascade_chain_10000_activate_ms),
            r(self.cascade_chain_10000_teardown_ms),
            r(self.cascade_chain_10000_build_ms),
            r(self.cascade_chain_1000_ms),
            r(self.cascade_chain_10000_ms / self.cascade_chain_1000_ms)
        )
        .unwrap();
        writeln!(out, "\nevents").unwrap();
        writeln!(
            out,
            "  emit to 10 listeners: {} /s   baseline {} /s   ratio {}  (target <= 2; cordis 6,400 /s)",
            r(self.emit_10_listeners_per_s),
            r(self.baseline_emit_10_listeners_per_s),
            r(self.emit_ratio)
        )
        .unwrap();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round3_keeps_three_significant_digits() {
        assert_eq!(round3(12.345), 12.3);
        assert_eq!(round3(1.23456), 1.23);
        assert_eq!(round3(0.012345), 0.0123);
        assert_eq!(round3(123456.7), 123457.0);
        assert_eq!(round3(0.0), 0.0);
    }

    #[test]
    fn json_names_every_figure_once_in_order() {
        let report = Report {
            get_ns: 10.0,
            ..Report::default()
        };
        let json = report.to_json();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        let figures = report.figures();
        let names: Vec<&str> = figures.iter().map(|f| f.0.as_ref()).collect();
        assert_eq!(keys.len(), names.len() + 1);
        for (key, name) in keys.iter().zip(&names) {
            assert_eq!(key.as_str(), *name);
        }
        assert_eq!(json["get_ns"], 10.0);
        assert_eq!(json["plan"], "full");
        for required in [
            "get_ns",
            "baseline_get_ns",
            "get_ratio",
            "with_ratio",
            "announce_ns",
            "asymmetric_fences",
            "with_mixed_ratio",
            "get_mixed_ratio",
            "dep_ratio",
            "realm_lookup_ns",
            "realm_lookup_ratio",
            "get_2threads_scaling",
            "with_2threads_scaling",
            "dep_2threads_scaling",
            "chain_incremental_ratio",
            "build_per_plugin_growth",
            "dispose_per_plugin_growth",
            "load_per_plugin_growth",
            "build_per_plugin_growth_cold",
            "dispose_per_plugin_growth_cold",
            "load_per_plugin_growth_cold",
            "baseline_build_per_plugin_growth",
            "baseline_dispose_per_plugin_growth_cold",
            "emit_ratio",
            "activate_chain_1000_ms",
            "dispose_chain_1000_ms",
            "activate_independent_1000_ms",
            "pending_to_active_us",
            "cascade_chain_10000_ms",
            "emit_10_listeners_per_s",
        ] {
            assert!(json.get(required).is_some(), "{required}");
        }
    }

    #[test]
    fn human_table_shows_figures_next_to_baselines() {
        let report = Report {
            get_ns: 20.0,
            baseline_get_ns: 10.0,
            get_ratio: 2.0,
            ..Report::default()
        };
        let text = report.to_human();
        assert!(text.contains("get                20 ns   baseline       10 ns   ratio     2"));
        assert!(text.contains("emit to 10 listeners"));
        assert!(text.contains("realm get"));
    }
}
