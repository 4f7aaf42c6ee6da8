//! Seed and envelope validation (reference section 3.3, with the envelope of section 1.1).
//!
//! A seed handed to the store, or a log read back from persistence, is checked event by event in
//! dsh's order: lossless JSON data (a seed handed to `create` and a live append only: dsh
//! restores a stored log in place, without the copy that checks it), the envelope and
//! legacy-format rules, the `request/header` configuration, the shape of message events,
//! `seq == index`, and finally the surface transition ([`crate::fold`]). Turn balance, tool-call pairing and known event types are deliberately
//! **not** checked here: an open-turn seed is valid.
//!
//! One module per idea: the rules of one event (`rules.rs`), lossless data (`lossless.rs`),
//! the error ([`ValidationError`]); here, a whole log checked event by event
//! ([`validate_seed`], [`validate_restored`], `validate_restored_append`).

mod error;
mod lossless;
mod rules;

pub use error::ValidationError;
pub(crate) use lossless::lossy_number;
use rules::check_event_in;
pub(crate) use rules::message_shape_problem;
pub use rules::{check_event, check_storable};
use rules::{check_restored, check_restored_event};

use crate::event::SessionEvent;
use crate::fold::{Surface, SurfacePlan};
use crate::format::FormatVersion;
use crate::view::Json;
use std::borrow::Borrow;

/// Validates a whole seed and returns its folded surface, so the caller need not fold it again
/// (reference section 3.3).
///
/// `events` may be plain events or shared ones (`Arc<SessionEvent>`). For each index `i` in
/// order: [`check_event`], then `seq == i`, then the surface transition, which is applied before
/// the next event is looked at. An empty seed is valid; so is a seed that ends inside a turn.
///
/// # Errors
///
/// The first failure: a [`check_event`] error, [`ValidationError::NotContiguous`], or
/// [`ValidationError::Surface`].
pub fn validate_seed<E: Borrow<SessionEvent>>(events: &[E]) -> Result<Surface, ValidationError> {
    validate_seed_in(FormatVersion::V0, events)
}

/// [`validate_seed`] for a seed of format `version`: its surface types.
///
/// # Errors
///
/// As [`validate_seed`].
pub fn validate_seed_in<E: Borrow<SessionEvent>>(
    version: FormatVersion,
    events: &[E],
) -> Result<Surface, ValidationError> {
    let mut check = LogCheck::new(
        |event, index, version| check_event_in(version, event, index),
        version,
    );
    check.admit_all(events);
    check.into_surface()
}

/// Validates a log read back from persistence, as dsh validates a restored session: like
/// [`validate_seed`] but without the lossless-data step (dsh adopts the parsed events in place
/// instead of copying them, so whatever its JSON reader produced is accepted), and together
/// with the closers [`crate::interrupted_turn_closers`] would append (dsh validates
/// the log it would resume, so a log whose closers break a rule is refused even by a read
/// that does not append them). Run it on the events
/// [`crate::prepare_stored_events`] returns. Returns the surface of `events` alone.
///
/// # Errors
///
/// As [`validate_seed`] (for a closer, its index in the log it would extend), never
/// [`ValidationError::NotLossless`].
pub fn validate_restored<E: Borrow<SessionEvent>>(
    events: &[E],
) -> Result<Surface, ValidationError> {
    validate_restored_in(FormatVersion::V0, events)
}

/// [`validate_restored`] for a log of format `version`: its surface types.
///
/// # Errors
///
/// As [`validate_restored`].
pub fn validate_restored_in<E: Borrow<SessionEvent>>(
    version: FormatVersion,
    events: &[E],
) -> Result<Surface, ValidationError> {
    let mut check = LogCheck::restored(version);
    check.admit_all(events);
    if check.is_refused() {
        return check.into_surface();
    }
    check.finish_restored(&crate::repair::interrupted_turn_closers(
        events.iter().map(Borrow::borrow),
    ))
}

/// The per-event loop of [`validate_seed`] and [`validate_restored`], fed one event at a
/// time in log order (so a log read as a stream is checked too): a per-event rule check, then
/// `seq == index`, then the surface transition. Its state is the surface fold, never the log.
#[derive(Debug)]
pub(crate) struct LogCheck {
    /// The rules of one event at its index ([`check_event`], or [`check_restored_event`]).
    check: fn(&SessionEvent, u64, FormatVersion) -> Result<(), ValidationError>,
    surface: Surface,
    /// The index of the next event.
    index: u64,
    /// The first rule broken: nothing after it is checked.
    refused: Option<ValidationError>,
}

impl LogCheck {
    fn new(
        check: fn(&SessionEvent, u64, FormatVersion) -> Result<(), ValidationError>,
        version: FormatVersion,
    ) -> LogCheck {
        LogCheck {
            check,
            surface: Surface::of_version(version),
            index: 0,
            refused: None,
        }
    }

    /// The checks of a log of format `version` read back from persistence
    /// ([`validate_restored`] for v0).
    pub(crate) fn restored(version: FormatVersion) -> LogCheck {
        LogCheck::new(check_restored_event, version)
    }

    /// Admits `events` in order, looking earlier events up among them; stops at the first
    /// that breaks a rule.
    fn admit_all<E: Borrow<SessionEvent>>(&mut self, events: &[E]) {
        let lookup = |seq: u64| {
            usize::try_from(seq)
                .ok()
                .and_then(|i| events.get(i))
                .map(Borrow::borrow)
        };
        for event in events {
            self.admit(event.borrow(), lookup);
            if self.is_refused() {
                break;
            }
        }
    }

    /// Checks the next event of the log (unless an earlier one broke a rule): the rules of a
    /// restored event, `seq == index`, then the surface transition. `lookup` returns the
    /// earlier event of the log with a given seq (read only for a replacement of a
    /// `tool/result`, which must change nothing of its original but the content).
    pub(crate) fn admit<'a>(
        &mut self,
        event: &SessionEvent,
        lookup: impl Fn(u64) -> Option<&'a SessionEvent>,
    ) {
        if self.refused.is_some() {
            return;
        }
        let index = self.index;
        self.index += 1;
        let checked = (self.check)(event, index, self.surface.version()).and_then(|()| {
            if event.seq != index {
                return Err(ValidationError::NotContiguous {
                    index,
                    seq: event.seq,
                });
            }
            self.surface
                .plan(event, lookup)
                .map_err(|source| ValidationError::Surface { index, source })
        });
        match checked {
            Ok(plan) => self.surface.apply(plan, event.seq),
            Err(refused) => self.refused = Some(refused),
        }
    }

    /// Whether an event admitted so far broke a rule.
    pub(crate) fn is_refused(&self) -> bool {
        self.refused.is_some()
    }

    /// The surface of the log admitted.
    ///
    /// # Errors
    ///
    /// The first rule an event broke.
    pub(crate) fn into_surface(self) -> Result<Surface, ValidationError> {
        match self.refused {
            Some(refused) => Err(refused),
            None => Ok(self.surface),
        }
    }

    /// The verdict on the restored log admitted, whose crash closers are `closers`
    /// ([`crate::interrupted_turn_closers`] of it): the first rule an event broke,
    /// else the first a closer would break after the log. Returns the log's surface.
    ///
    /// # Errors
    ///
    /// As [`validate_restored`].
    pub(crate) fn finish_restored(
        self,
        closers: &[SessionEvent],
    ) -> Result<Surface, ValidationError> {
        let surface = self.into_surface()?;
        surface_after(&surface, closers)?;
        Ok(surface)
    }
}

/// The surface of a restored log whose surface is `surface` once its crash `closers` are
/// appended, each checked as a restored event first.
///
/// # Errors
///
/// The first rule a closer breaks (its seq as the index).
pub(crate) fn surface_after(
    surface: &Surface,
    closers: &[SessionEvent],
) -> Result<Surface, ValidationError> {
    // Closers are appends: their surface plans read no earlier event.
    let mut resumed = surface.clone();
    for closer in closers {
        check_restored_event(closer, closer.seq, surface.version())?;
        let plan = resumed
            .plan(closer, |_| None)
            .map_err(|source| ValidationError::Surface {
                index: closer.seq,
                source,
            })?;
        resumed.apply(plan, closer.seq);
    }
    Ok(resumed)
}

/// Validates an event about to be appended to a live log whose surface is `surface`, without
/// the lossless-data step, reading the event's data from `data`, and returns the surface plan
/// to apply once the append is committed ([`Surface::apply`]): for an event read back from
/// persistence after the log (a follower's tail, `data` its stored text), as
/// [`validate_restored`] checks a stored log; and for a live append whose caller checked the
/// draft's tree for lossy numbers already (`data` that tree).
///
/// The event must already carry its final `seq` (the log length); it is used as the index in
/// errors. `lookup` returns the log's earlier event with a given seq. Nothing is mutated.
///
/// # Errors
///
/// As [`check_event`] (never [`ValidationError::NotLossless`]), then
/// [`ValidationError::Surface`] when the transition is refused.
pub(crate) fn validate_restored_append<'a>(
    surface: &Surface,
    event: &SessionEvent,
    data: Json<'_>,
    lookup: impl Fn(u64) -> Option<&'a SessionEvent>,
) -> Result<SurfacePlan, ValidationError> {
    plan_after(surface, event, lookup, |event, index| {
        check_restored(event, data, index, surface.version())
    })
}

/// `check`, then the surface plan of `event` after a log whose surface is `surface`.
fn plan_after<'a>(
    surface: &Surface,
    event: &SessionEvent,
    lookup: impl Fn(u64) -> Option<&'a SessionEvent>,
    check: impl FnOnce(&SessionEvent, u64) -> Result<(), ValidationError>,
) -> Result<SurfacePlan, ValidationError> {
    let index = event.seq;
    check(event, index)?;
    surface
        .plan(event, lookup)
        .map_err(|source| ValidationError::Surface { index, source })
}

#[cfg(test)]
mod tests;
