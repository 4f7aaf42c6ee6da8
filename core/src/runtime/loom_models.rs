//! Loom models of the lock-free cells: every interleaving of a few threads (up to a bound on
//! preemptions) and the values loom lets a load return under its approximation of the C11
//! memory model (below), run through the real [`HazardCell`] and [`Index`] with loom's
//! atomics, mutexes, statics and thread-locals in place of std's (see `sync.rs`).
//!
//! A published [`Value`] keeps a payload in a loom cell that its drop writes: loom reports any
//! read of the payload that the release of the value is not ordered after, which is what a
//! read of freed memory would be. A value released twice fails its model, and so does a value
//! never released by the end of an execution, when every thread has ended (loom runs a
//! thread's thread-local destructors, the end of its hazard slots, after `join` returns).
//!
//! The models cover readers racing a replace (one read, two reads in a row, two readers) and a
//! remove, two writers with a reader, two writers retiring what a nested read holds, a block
//! of slots handed to a new thread, and a reader racing inserts into the index.
//!
//! What they do not check, and why:
//!
//! - Interleavings past the preemption bound of each model ([`check`]: three for two actors,
//!   two for three). A bug that needs more preemptions passes.
//! - Executions loom does not generate: load buffering (two threads' relaxed loads each
//!   returning the store the other thread makes after its load), which loom's README lists as
//!   unsupported. A bug that only such an execution shows passes.
//! - The C++ semantics of `SeqCst` fences exactly. Loom orders its `fence(SeqCst)`s by
//!   happens-before (each joins the causality of every earlier one), which is stronger than
//!   C++20, where the fences' total order only constrains which stores loads may read. So an
//!   execution that is safe only through happens-before across fences passes here and would be
//!   a data race in Rust. `hazard.rs` uses its fences only for what C++20 gives them (a scan
//!   after a reader's fence sees its announcement or a later store to the slot; a reader's
//!   check after a writer's fence sees its swap or a later one), and takes the happens-before
//!   edge from a reader's last use of a value to its release from the slot stores, all
//!   `Release`, and the scans' `Acquire` loads: that argument is by reading, not checked here.
//!   Loom treats `SeqCst` loads, stores and read-modify-writes as `AcqRel`; that is weaker
//!   than Rust, so it can only report false alarms, and the protocol does not rely on them.
//! - The asymmetric fences of a normal Linux build (`sync.rs`): loom cannot model
//!   `membarrier(2)`, so the models run with `fence(SeqCst)` on both sides. That a private
//!   expedited barrier on the writer's side, with only a compiler fence on the reader's, orders
//!   them as those two fences do is the kernel's documented guarantee, not checked here; nor
//!   is the one switch from symmetric to asymmetric fences once the process is registered
//!   (argued in `sync.rs`). The writer's skip of its fence when no other thread holds a block
//!   of slots is checked.
//! - Address reuse: every value of a model is made before any is released, so no new value
//!   takes a released one's address (the ABA case hazard pointers handle, but which makes
//!   executions diverge in ways loom cannot replay).
//! - Sizes past the models': two slots per thread ([`super::hazard::SLOTS`]), one bucket in
//!   the index, at most three actors; the periodic rescan after `RESCAN_EVERY` reads is never
//!   reached.
//!
//! Loom runs all of a model's threads as coroutines of the OS thread that called it, and the
//! test harness runs several models at once on threads of its own: the statics of
//! `sync::global!` are made per execution of each OS thread. (When they were per process, a
//! model starting an execution remade the statics of the models running at once: they used
//! loom objects of another execution, which failed them with loom's "index out of bounds" in
//! `rt/object.rs` and poisoned locks, and scanned fresh, empty lists of blocks, which released
//! values their readers held.)
//!
//! Run them with
//! `RUSTFLAGS="--cfg loom" cargo test -p dsh-core --release --lib --target-dir target/loom loom`
//! (`.ci/run` does); `LOOM_MAX_PREEMPTIONS` overrides the bounds of [`check`].

use super::cells::Index;
use super::hazard::HazardCell;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Mutex;
use loom::thread;
use std::any::TypeId;
use std::sync::Arc;

/// Runs `model` over every interleaving with at most `preemptions` preemptions (or
/// `LOOM_MAX_PREEMPTIONS`, when set). Three for the models of two actors: that covers the races
/// they are about (a reader preempted between its announcement and its check, a writer between
/// its swap and its scan, a scan between taking the retired list and putting back what it
/// kept) in seconds; two for those of three actors, which take seconds at two and six minutes
/// on two cores at three (where the three-actor models passed too when run by hand with
/// `LOOM_MAX_PREEMPTIONS=3`, on 2026-12-03).
fn check(preemptions: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    builder.check(move || {
        super::sync::new_execution();
        super::hazard::make_statics();
        model();
    });
}

/// The payloads of the [`Value`]s released, one bit each.
type Releases = loom::sync::Arc<AtomicUsize>;

/// The bit of `payload` in [`Releases`].
fn bit(payload: u64) -> usize {
    1 << payload
}

/// A published value: `payload` (a small number, unique in its model) is written when it is
/// created and when it is released, and its bit set in `releases` then. `releases` is a loom
/// `Arc`, so a value never released leaks a reference of it, which loom reports at the end of
/// the execution (after every thread has ended, thread-locals included).
struct Value {
    payload: UnsafeCell<u64>,
    releases: Releases,
}

// SAFETY: `payload` is written by `Value::new` (before the value is shared) and by `drop`
// (`&mut self`), and read through `&self` only by `Value::read`: loom itself checks, in every
// execution, that no read of it is concurrent with those writes.
unsafe impl Sync for Value {}

impl Value {
    fn new(payload: u64, releases: &Releases) -> Arc<Value> {
        Arc::new(Value {
            payload: UnsafeCell::new(payload),
            releases: releases.clone(),
        })
    }

    /// The payload: a read loom checks against the write of the release.
    fn read(&self) -> u64 {
        // SAFETY: no `&mut` to the payload exists while `&self` does; loom reports the read if
        // it races with the write of `drop`.
        self.payload.with(|payload| unsafe { *payload })
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        // SAFETY: `&mut self`; loom fails the model if a reader's access of the payload is not
        // ordered before this write.
        let payload = self
            .payload
            .with_mut(|payload| unsafe { std::mem::replace(&mut *payload, u64::MAX) });
        let before = self.releases.fetch_or(bit(payload), Ordering::SeqCst);
        assert_eq!(before & bit(payload), 0, "value {payload} released twice");
    }
}

/// Whether the value of `payload` was released (as far as this thread sees).
fn released(releases: &Releases, payload: u64) -> bool {
    releases.load(Ordering::SeqCst) & bit(payload) != 0
}

/// Reads `cell` and returns the payload it saw (`None` when empty). A model thread's reads
/// never nest past the slots, so the read never falls back.
fn read(cell: &HazardCell<Value>) -> Option<u64> {
    cell.read(|value| value.map(Value::read))
        .unwrap_or_else(|_| panic!("a model's read found no free slot"))
}

/// Spawns a thread of the model: every actor of a model is a thread of its own, the model's
/// own thread only sets up, joins and checks (loom explores fewer orders between a thread and
/// one it spawned than between two spawned threads).
fn actor(f: impl FnOnce() + Send + 'static) -> thread::JoinHandle<()> {
    thread::spawn(f)
}

/// Joins the actors, failing the model if one failed.
fn join(actors: impl IntoIterator<Item = thread::JoinHandle<()>>) {
    for actor in actors {
        actor.join().unwrap();
    }
}

#[test]
fn loom_a_reader_racing_a_replace_never_sees_a_released_value() {
    check(3, || {
        let releases = Releases::new(AtomicUsize::new(0));
        let cell = Arc::new(HazardCell::new());
        drop(cell.store(Some(Value::new(1, &releases))));
        let next = Value::new(2, &releases);
        let reader = actor({
            let cell = cell.clone();
            move || {
                let seen = read(&cell);
                assert!(matches!(seen, Some(1 | 2)), "saw {seen:?}");
            }
        });
        let writer = actor({
            let cell = cell.clone();
            move || drop(cell.store(Some(next)))
        });
        join([reader, writer]);
        // The value in the cell is never released; the replaced one is, by the end of the
        // execution (loom's leak check), once (the drop of `Value`).
        assert!(!released(&releases, 2));
    });
}

/// A reader that reads again (its slot announcing the new value) while the writer's scan of the
/// old one runs: the scan that finds the slot announcing another value must be ordered after
/// the first read's use of the old one.
#[test]
fn loom_a_reader_reading_twice_racing_a_replace_never_sees_a_released_value() {
    check(3, || {
        let releases = Releases::new(AtomicUsize::new(0));
        let cell = Arc::new(HazardCell::new());
        drop(cell.store(Some(Value::new(1, &releases))));
        let next = Value::new(2, &releases);
        let reader = actor({
            let cell = cell.clone();
            move || {
                let first = read(&cell);
                let second = read(&cell);
                assert!(matches!(first, Some(1 | 2)), "saw {first:?}");
                assert!(matches!(second, Some(1 | 2)), "saw {second:?}");
                assert!(first <= second, "saw {second:?} after {first:?}");
            }
        });
        let writer = actor({
            let cell = cell.clone();
            move || drop(cell.store(Some(next)))
        });
        join([reader, writer]);
        assert!(!released(&releases, 2));
    });
}

#[test]
fn loom_a_reader_racing_a_remove_sees_the_value_or_nothing() {
    check(3, || {
        let releases = Releases::new(AtomicUsize::new(0));
        let cell = Arc::new(HazardCell::new());
        drop(cell.store(Some(Value::new(1, &releases))));
        let reader = actor({
            let cell = cell.clone();
            move || {
                let first = read(&cell);
                let second = read(&cell);
                assert!(matches!(first, Some(1) | None), "saw {first:?}");
                // Once a read has seen the cell empty, no later read sees the value again.
                assert!(
                    first.is_some() || second.is_none(),
                    "saw {second:?} after nothing"
                );
            }
        });
        let remover = actor({
            let cell = cell.clone();
            move || drop(cell.store(None))
        });
        join([reader, remover]);
    });
}

#[test]
fn loom_two_readers_racing_a_replace_release_it_once_both_have_ended() {
    check(2, || {
        let releases = Releases::new(AtomicUsize::new(0));
        let cell = Arc::new(HazardCell::new());
        drop(cell.store(Some(Value::new(1, &releases))));
        let next = Value::new(2, &releases);
        let mut actors: Vec<_> = (0..2)
            .map(|_| {
                let cell = cell.clone();
                actor(move || {
                    let seen = read(&cell);
                    assert!(matches!(seen, Some(1 | 2)), "saw {seen:?}");
                })
            })
            .collect();
        actors.push(actor({
            let cell = cell.clone();
            move || drop(cell.store(Some(next)))
        }));
        join(actors);
        assert!(!released(&releases, 2));
    });
}

/// Two writers replace the value of one cell, their stores serialized by a lock (as the
/// runtime's state lock serializes them) and the old values dropped after it, so that their
/// retire and reclaim scans race each other and a reader.
#[test]
fn loom_two_writers_and_a_reader_release_each_replaced_value_once() {
    check(2, || {
        let releases = Releases::new(AtomicUsize::new(0));
        let cell = Arc::new(HazardCell::new());
        let lock = Arc::new(Mutex::new(()));
        drop(cell.store(Some(Value::new(1, &releases))));
        // Made before any is released, so that no value reuses a released one's address (which
        // the hazard pointers allow, but which would make the executions differ in ways loom
        // cannot replay).
        let mut actors: Vec<_> = [2, 3]
            .map(|payload| Value::new(payload, &releases))
            .into_iter()
            .map(|value| {
                let (cell, lock) = (cell.clone(), lock.clone());
                actor(move || {
                    let withdrawn = {
                        let _state = lock.lock().unwrap();
                        cell.store(Some(value))
                    };
                    drop(withdrawn);
                })
            })
            .collect();
        actors.push(actor({
            let cell = cell.clone();
            move || {
                let seen = read(&cell);
                assert!(matches!(seen, Some(1..=3)), "saw {seen:?}");
            }
        }));
        join(actors);
        // Of the two new values, the one stored last is in the cell and never released.
        let current = read(&cell).expect("a value");
        assert!(matches!(current, 2 | 3) && !released(&releases, current));
    });
}

/// Two writers withdraw the values of two cells while a reader holds both (nested reads: two
/// slots of one thread), so that two retired values wait at once and the writers' scans race
/// over the retired list.
#[test]
fn loom_two_writers_retiring_what_a_nested_read_holds_release_both_after_it() {
    check(2, || {
        let releases = Releases::new(AtomicUsize::new(0));
        let cells: [Arc<HazardCell<Value>>; 2] =
            [Arc::new(HazardCell::new()), Arc::new(HazardCell::new())];
        drop(cells[0].store(Some(Value::new(1, &releases))));
        drop(cells[1].store(Some(Value::new(2, &releases))));
        let mut actors = vec![actor({
            let cells = cells.clone();
            move || {
                let seen = cells[0]
                    .read(|outer| {
                        let inner = read(&cells[1]);
                        (outer.map(Value::read), inner)
                    })
                    .unwrap_or_else(|_| panic!("a free slot"));
                assert!(matches!(seen.0, Some(1) | None), "saw {:?}", seen.0);
                assert!(matches!(seen.1, Some(2) | None), "saw {:?}", seen.1);
            }
        })];
        actors.extend(cells.iter().map(|cell| {
            let cell = cell.clone();
            actor(move || drop(cell.store(None)))
        }));
        join(actors);
    });
}

/// A thread's slots go to the next new thread when it ends: the second reader reads through
/// the first one's block while a writer replaces the value.
#[test]
fn loom_a_block_handed_to_a_new_thread_protects_its_reads() {
    check(3, || {
        let releases = Releases::new(AtomicUsize::new(0));
        let cell = Arc::new(HazardCell::new());
        drop(cell.store(Some(Value::new(1, &releases))));
        let next = Value::new(2, &releases);
        join([actor({
            let cell = cell.clone();
            move || assert_eq!(read(&cell), Some(1))
        })]);
        let second = actor({
            let cell = cell.clone();
            move || {
                let seen = read(&cell);
                assert!(matches!(seen, Some(1 | 2)), "saw {seen:?}");
            }
        });
        let writer = actor({
            let cell = cell.clone();
            move || drop(cell.store(Some(next)))
        });
        join([second, writer]);
        assert!(!released(&releases, 2));
    });
}

/// A cell published in the index, its payload written (a write loom tracks) before it is
/// inserted.
struct Published {
    payload: UnsafeCell<u64>,
}

// SAFETY: `payload` is written only before the value is shared (`Published::write`); loom
// checks that every read of it is ordered after that write.
unsafe impl Sync for Published {}

impl Published {
    /// Sets the payload, before the value is shared.
    fn write(&self, value: u64) {
        // SAFETY: called before the value is shared; loom checks that every read of the
        // payload is ordered after this write.
        self.payload.with_mut(|payload| unsafe { *payload = value });
    }

    fn read(&self) -> u64 {
        // SAFETY: the payload is written only before the value is shared.
        self.payload.with(|payload| unsafe { *payload })
    }
}

/// One bucket under loom: the two keys share a chain, so a reader walks a node's `next` link
/// that the inserter published.
#[test]
fn loom_a_reader_racing_inserts_finds_each_published_cell_whole() {
    check(3, || {
        let index: Arc<Index<Published>> = Arc::new(Index::new());
        let (first, second) = (TypeId::of::<u8>(), TypeId::of::<u16>());
        let inserter = actor({
            let index = index.clone();
            move || {
                for (key, payload) in [(first, 1), (second, 2)] {
                    let cell = Arc::new(Published {
                        payload: UnsafeCell::new(0),
                    });
                    cell.write(payload);
                    index.insert(key, cell);
                }
            }
        });
        let reader = actor({
            let index = index.clone();
            move || {
                let later = index.get(&second).map(|cell| cell.read());
                let earlier = index.get(&first).map(|cell| cell.read());
                assert!(matches!(later, Some(2) | None), "saw {later:?}");
                assert!(matches!(earlier, Some(1) | None), "saw {earlier:?}");
                // The second key was inserted after the first: finding it means finding both.
                assert!(later.is_none() || earlier.is_some());
            }
        });
        join([inserter, reader]);
        assert_eq!(index.get(&first).map(|cell| cell.read()), Some(1));
        assert_eq!(index.get(&second).map(|cell| cell.read()), Some(2));
    });
}
