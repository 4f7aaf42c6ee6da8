//! Criterion benches of the `dsh-bench core` scenarios: service lookup against the baseline
//! map and a `Dep` read against an `Arc` deref, a 1000-plugin chain's activation (at once and
//! one load at a time) and disposal, emit to 10 listeners against a plain listener `Vec`. Kept short (10 samples, 2 s each) so a full `cargo bench -p dsh-bench`
//! takes well under a minute; `dsh-bench core` gives the published figures.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode};
use dsh_bench::events::{baseline_emit, Emitters, Ping};
use dsh_bench::lifecycle::{chain, load_one_by_one};
use dsh_bench::lookup::{baseline_get, baseline_with, Lookup};
use dsh_bench_chain::LookupTarget;
use dsh_core::{AnyPlugin, Context};
use std::hint::black_box;
use std::time::Duration;

fn lookup(c: &mut Criterion) {
    let l = Lookup::new();
    let mut group = c.benchmark_group("lookup_32_services");
    group.bench_function("get", |b| {
        b.iter(|| black_box(&l.ctx).get::<LookupTarget>())
    });
    group.bench_function("baseline_get", |b| {
        b.iter(|| baseline_get::<LookupTarget>(black_box(&l.map)))
    });
    group.bench_function("with", |b| {
        b.iter(|| {
            black_box(&l.ctx).with::<LookupTarget, _>(|s| {
                black_box(s);
            })
        })
    });
    group.bench_function("baseline_with", |b| {
        b.iter(|| {
            baseline_with::<LookupTarget, _>(black_box(&l.map), |s| {
                black_box(s);
            })
        })
    });
    group.bench_function("dep", |b| {
        b.iter(|| {
            black_box(&l.dep).get().map(|s| {
                black_box(s);
            })
        })
    });
    group.bench_function("baseline_arc", |b| {
        b.iter(|| {
            let service: &LookupTarget = black_box(&l.arc);
            black_box(service);
        })
    });
    group.finish();
}

fn build_chain(plugins: &[AnyPlugin]) -> Context {
    Context::builder()
        .add_plugins(plugins.iter().cloned())
        .build()
        .expect("chain builds")
}

fn chain_1000(c: &mut Criterion) {
    let plugins = chain(1000);
    let mut group = c.benchmark_group("chain_1000");
    group.sampling_mode(SamplingMode::Flat);
    group.bench_function("activate", |b| {
        b.iter_with_large_drop(|| build_chain(&plugins))
    });
    group.bench_function("activate_one_load_at_a_time", |b| {
        b.iter(|| load_one_by_one(&plugins))
    });
    group.bench_function("dispose", |b| {
        b.iter_batched(
            || build_chain(&plugins),
            |ctx| ctx.dispose(),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn emit_10_listeners(c: &mut Criterion) {
    let e = Emitters::new(10);
    let mut group = c.benchmark_group("emit_10_listeners");
    group.bench_function("emit", |b| {
        b.iter(|| black_box(&e.ctx).emit(&Ping(1)).expect("no listener fails"))
    });
    group.bench_function("baseline", |b| {
        b.iter(|| baseline_emit(black_box(&e.baseline), &Ping(1)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = lookup, chain_1000, emit_10_listeners
}
criterion_main!(benches);
