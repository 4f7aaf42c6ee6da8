//! The edges run as dsh's chain runs them (`CompiledSessionFormatMigrationStream`): each source
//! event goes through every edge before the next one is read, so the first event an edge
//! refuses is the one dsh names, whichever edge refuses it.

use serde_json::{Map, Value};

use super::json::{kind, seq, Fail};
use super::{payload, v0_to_v1, v1_to_v2, v2_to_v3, Edge};

/// A refusal: the edge, the seq of the event it was transforming (its own numbering), why.
pub(crate) type Refusal = (Edge, Option<u64>, Fail);

/// The edges from `from` to `to`, chained.
pub(crate) struct Stages<'h> {
    from: u64,
    first: Option<(v0_to_v1::Stage, v0_to_v1::Source<'h>)>,
    second: Option<v1_to_v2::Stage>,
    third: Option<v2_to_v3::Stage>,
    out: Vec<Map<String, Value>>,
}

impl<'h> Stages<'h> {
    /// The chain over `headers` (the logical header of `from`, then of each next version up to
    /// `to`), for a source with fork cut `cut`.
    pub(crate) fn new(
        headers: &'h [Map<String, Value>],
        from: u64,
        to: u64,
        cut: u64,
    ) -> Stages<'h> {
        let header_of = |version: u64| &headers[(version - from) as usize];
        let runs = |edge: u64| from <= edge && edge < to;
        let first = runs(0).then(|| {
            let header = header_of(0);
            let source = v0_to_v1::Source {
                id: header.get("id").and_then(Value::as_str).unwrap_or_default(),
                parent: header.contains_key("parentSession"),
                cut,
            };
            (v0_to_v1::Stage::default(), source)
        });
        let second = runs(1).then(|| v1_to_v2::Stage::new(header_of(1), cut));
        let third = runs(2).then(|| v2_to_v3::Stage::new(header_of(2)));
        Stages {
            from,
            first,
            second,
            third,
            out: Vec::new(),
        }
    }

    /// Takes one source event through every edge.
    pub(crate) fn push(&mut self, event: Map<String, Value>) -> Result<(), Refusal> {
        let mut batch = vec![event];
        if let Some((stage, source)) = &mut self.first {
            let edge = Edge { from: 0 };
            batch = batch
                .into_iter()
                .map(|e| {
                    let at = seq(&e);
                    stage.event(source, e).map_err(|f| (edge, Some(at), f))
                })
                .collect::<Result<_, _>>()?;
        }
        if self.second.is_some() {
            batch = self.through_second(batch)?;
        }
        if self.third.is_some() {
            batch = self.through_third(batch)?;
        }
        self.out.extend(batch);
        Ok(())
    }

    /// Ends every edge in order, given the source's fork cut (for v2/v3 sources known only
    /// once every row is read): the events and the target's fork cut.
    pub(crate) fn finish(
        mut self,
        source_cut: u64,
    ) -> Result<(Vec<Map<String, Value>>, u64), Refusal> {
        let mut cut = source_cut;
        if let Some(stage) = self.second.take() {
            let (rest, next_cut) = stage.finish().map_err(|f| (Edge { from: 1 }, None, f))?;
            cut = next_cut;
            let rest = if self.third.is_some() {
                self.through_third(rest)?
            } else {
                rest
            };
            self.out.extend(rest);
        }
        if let Some(stage) = self.third.take() {
            let (rest, next_cut) = stage.finish(cut).map_err(|f| (Edge { from: 2 }, None, f))?;
            cut = next_cut;
            self.out.extend(rest);
        }
        Ok((self.out, cut))
    }

    fn through_second(
        &mut self,
        batch: Vec<Map<String, Value>>,
    ) -> Result<Vec<Map<String, Value>>, Refusal> {
        let edge = Edge { from: 1 };
        // Reading a v1 file, the edge checks each payload itself (`DecodedReleasedV1ToV2Stage`).
        let decoded = self.from == 1;
        let Some(stage) = &mut self.second else {
            return Ok(batch);
        };
        for event in batch {
            let at = seq(&event);
            let known = payload::v0_disposition(kind(&event)).is_some();
            if decoded && kind(&event) != "assistant/chunk" && known {
                payload::check_released(&event, 1).map_err(|f| (edge, Some(at), f))?;
            }
            stage.event(event).map_err(|f| (edge, Some(at), f))?;
        }
        Ok(stage.drain())
    }

    fn through_third(
        &mut self,
        batch: Vec<Map<String, Value>>,
    ) -> Result<Vec<Map<String, Value>>, Refusal> {
        let edge = Edge { from: 2 };
        let Some(stage) = &mut self.third else {
            return Ok(batch);
        };
        for event in batch {
            let at = seq(&event);
            stage.event(event).map_err(|f| (edge, Some(at), f))?;
        }
        Ok(stage.drain())
    }
}
