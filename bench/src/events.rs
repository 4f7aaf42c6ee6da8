//! Events: emits per second of one event to 10 listeners through `ctx.emit`, against a plain
//! `Vec` of boxed listeners called in order with their errors collected.

use crate::measure::time;
use dsh_core::{BoxError, Context};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The event emitted.
#[derive(Debug)]
pub struct Ping(pub u64);

/// A listener as the baseline stores it.
pub type BaselineListener = Box<dyn Fn(&Ping) -> Result<(), BoxError> + Send + Sync>;

/// The listener body shared by both sides: reads the event and counts the call.
fn listener(calls: Arc<AtomicU64>) -> impl Fn(&Ping) -> Result<(), BoxError> + Send + Sync {
    move |ping: &Ping| {
        black_box(ping.0);
        calls.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A root context with `listeners` listeners of [`Ping`], and the one baseline with as many,
/// all counting their calls into one counter each.
pub struct Emitters {
    /// The dsh-core context.
    pub ctx: Context,
    /// Calls seen by the context's listeners.
    pub ctx_calls: Arc<AtomicU64>,
    /// The baseline listeners.
    pub baseline: Vec<BaselineListener>,
    /// Calls seen by the baseline listeners.
    pub baseline_calls: Arc<AtomicU64>,
}

impl Emitters {
    /// Both sides with `listeners` listeners each.
    pub fn new(listeners: usize) -> Emitters {
        let ctx = Context::builder().build().expect("empty context builds");
        let ctx_calls = Arc::new(AtomicU64::new(0));
        for _ in 0..listeners {
            ctx.on::<Ping>(listener(ctx_calls.clone()))
                .expect("root listens");
        }
        let baseline_calls = Arc::new(AtomicU64::new(0));
        let baseline = (0..listeners)
            .map(|_| Box::new(listener(baseline_calls.clone())) as BaselineListener)
            .collect();
        Emitters {
            ctx,
            ctx_calls,
            baseline,
            baseline_calls,
        }
    }

    /// Emits per second of `emits` emits through `ctx.emit`.
    ///
    /// # Panics
    /// When an emit fails or a listener call is missing.
    pub fn emits_per_s(&self, emits: u64) -> f64 {
        self.rate(&self.ctx_calls, emits, |i| {
            black_box(&self.ctx)
                .emit(&Ping(i))
                .expect("no listener fails");
        })
    }

    /// Emits per second of `emits` baseline emits: each listener called in order, errors
    /// collected into a `Vec` (allocated only on a failure).
    ///
    /// # Panics
    /// When a listener fails or a listener call is missing.
    pub fn baseline_emits_per_s(&self, emits: u64) -> f64 {
        self.rate(&self.baseline_calls, emits, |i| {
            let errors = baseline_emit(black_box(&self.baseline), &Ping(i));
            assert!(errors.is_empty(), "no listener fails");
        })
    }

    /// Emits per second of `emits` calls of `emit` (given the emit number), checking through
    /// `calls` that every listener heard every emit.
    fn rate(&self, calls: &AtomicU64, emits: u64, mut emit: impl FnMut(u64)) -> f64 {
        let before = calls.load(Ordering::Relaxed);
        let elapsed = time(|| (0..emits).for_each(&mut emit));
        let heard = calls.load(Ordering::Relaxed) - before;
        assert_eq!(
            heard,
            emits * self.baseline.len() as u64,
            "every listener ran"
        );
        emits as f64 / elapsed.as_secs_f64()
    }
}

/// The baseline dispatch: every listener in order, failures collected.
pub fn baseline_emit(listeners: &[BaselineListener], event: &Ping) -> Vec<BoxError> {
    let mut errors = Vec::new();
    for l in listeners {
        if let Err(e) = l(event) {
            errors.push(e);
        }
    }
    errors
}
