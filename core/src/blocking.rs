//! [`run_blocking`]: a sync call awaited from a tokio task without holding a worker (feature
//! `tokio`), shared by every async face of dsh-rs.

/// Runs `work` on tokio's blocking pool and returns its result, resuming its panic in the
/// caller if it panicked. The work runs to its end even when the returned future is dropped
/// (a flush that began is finished; only the answer is dropped).
///
/// # Panics
/// Outside a tokio runtime (as [`tokio::task::spawn_blocking`] does); when the runtime shuts
/// down before the work started (it did not run); when `work` panics.
pub async fn run_blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(error) => match error.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(_) => panic!("the tokio runtime shut down before the blocking call ran"),
        },
    }
}
