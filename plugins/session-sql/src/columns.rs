//! The row mapping: [`HeaderColumns`] and [`EventColumns`] hold a row as plain values
//! (integers, text, JSON text), so a backend only moves them between its driver's rows and
//! these structs; the encoding (which field goes where, JSON for payloads and unmodelled
//! header fields) and the checks on the way back live here once. What is read back equals what
//! was written: the same JSON values, keys in the same order.

use dsh_session::backend::PersistenceError;
use dsh_session::format::{FormatVersion, READABLE_VERSIONS};
use dsh_session::{EventData, SessionEvent, SessionHeader, SessionId, SurfaceOp};
use serde_json::Value;

/// A stored row that cannot be turned back into a header or an event: a negative count, or a
/// JSON column that does not parse as what it holds. The text names the session (for a
/// header) or the event's seq and the column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ColumnError {
    /// What is wrong, naming the row and the column.
    pub reason: String,
}

impl ColumnError {
    /// As [`PersistenceError::Corrupt`] of the database `store` (a path or a connection
    /// description), naming session `id`: for an event row.
    pub fn corrupt(self, store: &str, id: &SessionId) -> PersistenceError {
        PersistenceError::Corrupt {
            file: store.to_owned(),
            reason: format!("session \"{id}\": {}", self.reason),
        }
    }

    /// As [`PersistenceError::HeaderInvalid`] of the database `store` (the text names the
    /// session already): for a header row.
    pub fn header_invalid(self, store: &str) -> PersistenceError {
        PersistenceError::HeaderInvalid {
            file: store.to_owned(),
            reason: self.reason,
        }
    }
}

/// A `u64` of a header or event (seq, epoch ms, count) as a signed 64-bit SQL integer. Values
/// past `i64::MAX` cannot occur (seqs and times are JSON safe integers) and are saturated.
pub fn sql_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A count or seq read from the database (a revision, a next seq: never negative) as `u64`;
/// a negative one reads as 0.
pub fn sql_count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// A row of a database driver, read column by column by index: a backend implements it over
/// its driver's row type, so that [`HeaderColumns::read`] and [`EventColumns::read`] read a
/// row selected in the order of their `NAMES`. Each method reads the column at `index` as the
/// SQL type it names (an integer is a 64-bit `INTEGER` or `BIGINT`; JSON columns are read as
/// their text).
pub trait Row {
    /// The driver's error for a column that is not of the type asked for.
    type Error;
    /// A non-NULL integer column.
    fn int(&self, index: usize) -> Result<i64, Self::Error>;
    /// An integer column that may be NULL.
    fn opt_int(&self, index: usize) -> Result<Option<i64>, Self::Error>;
    /// A non-NULL text column.
    fn text(&self, index: usize) -> Result<String, Self::Error>;
    /// A text column that may be NULL.
    fn opt_text(&self, index: usize) -> Result<Option<String>, Self::Error>;
    /// A boolean column that may be NULL.
    fn opt_bool(&self, index: usize) -> Result<Option<bool>, Self::Error>;
}

/// The `sessions` row of a header.
///
/// `version`, `created_at` (epoch ms), `seed_length` and `delegation_depth` are integers
/// (`None` = SQL NULL, for a field the header does not carry); `is_seeded` a boolean (NULL in
/// a v0 or v1 header, which keeps its fork cut in `seed_length`); `extra` is the JSON text of
/// an object holding the header fields the session crate does not model (`{}` when none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderColumns {
    /// `id`, the primary key.
    pub id: String,
    /// `version`, the log format version.
    pub version: i64,
    /// `created_at`, epoch milliseconds.
    pub created_at: i64,
    /// `cwd`.
    pub cwd: Option<String>,
    /// `parent_session`, the lineage parent's id.
    pub parent_session: Option<String>,
    /// `seed_length`.
    pub seed_length: Option<i64>,
    /// `origin`.
    pub origin: Option<String>,
    /// `delegation_depth`.
    pub delegation_depth: Option<i64>,
    /// `agent_preset`.
    pub agent_preset: Option<String>,
    /// `extra`: JSON object text.
    pub extra: String,
    /// `is_seeded`: whether a v2 or v3 log holds an inherited fork cut (NULL before v2).
    pub is_seeded: Option<bool>,
}

impl HeaderColumns {
    /// The column names, in field order: what a backend selects and inserts.
    pub const NAMES: &'static str = "id, version, created_at, cwd, parent_session, \
        seed_length, origin, delegation_depth, agent_preset, extra, is_seeded";

    /// How many columns [`HeaderColumns::NAMES`] names: the index of a column selected after
    /// them.
    pub const COUNT: usize = 11;

    /// The row `row` selected with [`HeaderColumns::NAMES`] (from column 0, in their order).
    ///
    /// # Errors
    ///
    /// The driver's, for a column of another type.
    pub fn read<R: Row>(row: &R) -> Result<HeaderColumns, R::Error> {
        Ok(HeaderColumns {
            id: row.text(0)?,
            version: row.int(1)?,
            created_at: row.int(2)?,
            cwd: row.opt_text(3)?,
            parent_session: row.opt_text(4)?,
            seed_length: row.opt_int(5)?,
            origin: row.opt_text(6)?,
            delegation_depth: row.opt_int(7)?,
            agent_preset: row.opt_text(8)?,
            extra: row.text(9)?,
            is_seeded: row.opt_bool(10)?,
        })
    }

    /// The row of `header`. A v2 or v3 header without `is_seeded` is stored unseeded
    /// (`false`), as the JSONL backend writes it.
    pub fn of(header: &SessionHeader) -> HeaderColumns {
        let marks_cut_in_body = FormatVersion::from_number(header.version)
            .is_some_and(|version| !version.has_seed_length());
        let is_seeded = match header.is_seeded {
            None if marks_cut_in_body => Some(false),
            seeded => seeded,
        };
        HeaderColumns {
            id: header.id.as_str().to_owned(),
            version: sql_int(header.version),
            created_at: sql_int(header.created_at),
            cwd: header.cwd.clone(),
            parent_session: header
                .parent_session
                .as_ref()
                .map(|p| p.as_str().to_owned()),
            seed_length: header.seed_length.map(sql_int),
            origin: header.origin.clone(),
            delegation_depth: header.delegation_depth.map(sql_int),
            agent_preset: header.agent_preset.clone(),
            extra: Value::Object(header.extra.clone()).to_string(),
            is_seeded,
        }
    }

    /// The header this row holds, refused unless its version is one this build reads.
    /// `store` names the database in errors.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::HeaderInvalid`] (as [`HeaderColumns::into_header`]);
    /// [`PersistenceError::VersionUnsupported`] (as [`check_stored_version`]).
    pub fn read_header(self, store: &str) -> Result<SessionHeader, PersistenceError> {
        let header = self
            .into_header()
            .map_err(|bad| bad.header_invalid(store))?;
        check_stored_version(store, &header)?;
        Ok(header)
    }

    /// The header this row holds. The version is returned as stored; see
    /// [`check_stored_version`].
    ///
    /// # Errors
    ///
    /// [`ColumnError`] naming the session when a count is negative or `extra` is not
    /// a JSON object.
    pub fn into_header(self) -> Result<SessionHeader, ColumnError> {
        let id = self.id;
        let count = |value: i64, name: &str| {
            u64::try_from(value).map_err(|_| ColumnError {
                reason: format!("session \"{id}\": header {name} is negative"),
            })
        };
        let version = count(self.version, "version")?;
        let created_at = count(self.created_at, "createdAt")?;
        let seed_length = self
            .seed_length
            .map(|v| count(v, "seedLength"))
            .transpose()?;
        let delegation_depth = self
            .delegation_depth
            .map(|v| count(v, "delegationDepth"))
            .transpose()?;
        let Ok(Value::Object(extra)) = serde_json::from_str::<Value>(&self.extra) else {
            return Err(ColumnError {
                reason: format!("session \"{id}\": header extra fields are not a JSON object"),
            });
        };
        Ok(SessionHeader {
            version,
            id: SessionId::new(id),
            created_at,
            cwd: self.cwd,
            parent_session: self.parent_session.map(SessionId::new),
            seed_length,
            is_seeded: self.is_seeded,
            origin: self.origin,
            delegation_depth,
            agent_preset: self.agent_preset,
            extra,
        })
    }
}

/// The `events` row of an event (without its `session_id`).
///
/// `data` is the payload's JSON text; `surface_op` and `source_event_seqs` are JSON text,
/// `None` (SQL NULL) when the event has none, as is `ignorable`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventColumns {
    /// `seq`, the second half of the primary key.
    pub seq: i64,
    /// `type`.
    pub kind: String,
    /// `time`, epoch milliseconds.
    pub time: i64,
    /// `data`: JSON text.
    pub data: String,
    /// `surface_op`: JSON text (`"append"` or the replace object).
    pub surface_op: Option<String>,
    /// `source_event_seqs`: JSON text of an array of seqs.
    pub source_event_seqs: Option<String>,
    /// `ignorable`.
    pub ignorable: Option<bool>,
}

impl EventColumns {
    /// The column names, in field order: what a backend selects and inserts after
    /// `session_id`.
    pub const NAMES: &'static str =
        "seq, type, time, data, surface_op, source_event_seqs, ignorable";

    /// The row `row` selected with [`EventColumns::NAMES`] (from column 0, in their order).
    ///
    /// # Errors
    ///
    /// The driver's, for a column of another type.
    pub fn read<R: Row>(row: &R) -> Result<EventColumns, R::Error> {
        Ok(EventColumns {
            seq: row.int(0)?,
            kind: row.text(1)?,
            time: row.int(2)?,
            data: row.text(3)?,
            surface_op: row.opt_text(4)?,
            source_event_seqs: row.opt_text(5)?,
            ignorable: row.opt_bool(6)?,
        })
    }

    /// The row of `event`.
    pub fn of(event: &SessionEvent) -> EventColumns {
        EventColumns {
            seq: sql_int(event.seq),
            kind: event.kind.clone(),
            time: event.time,
            data: event.data.to_string(),
            surface_op: event.surface_op.map(|op| surface_op_text(&op)),
            source_event_seqs: event
                .source_event_seqs
                .as_ref()
                .map(|seqs| Value::from(seqs.clone()).to_string()),
            ignorable: event.ignorable,
        }
    }

    /// The event this row holds.
    ///
    /// # Errors
    ///
    /// [`ColumnError`] naming the seq and the column when the seq is negative or a
    /// JSON column does not parse as what it holds.
    pub fn into_event(self) -> Result<SessionEvent, ColumnError> {
        let seq = u64::try_from(self.seq).map_err(|_| ColumnError {
            reason: format!("event seq {} is negative", self.seq),
        })?;
        let bad = |column: &str| ColumnError {
            reason: format!("event at seq {seq}: column {column} is invalid"),
        };
        let data = EventData::from_json(self.data).map_err(|_| bad("data"))?;
        let surface_op = self
            .surface_op
            .map(|text| serde_json::from_str::<SurfaceOp>(&text))
            .transpose()
            .map_err(|_| bad("surface_op"))?;
        let source_event_seqs = self
            .source_event_seqs
            .map(|text| serde_json::from_str::<Vec<u64>>(&text))
            .transpose()
            .map_err(|_| bad("source_event_seqs"))?;
        Ok(SessionEvent {
            kind: self.kind,
            seq,
            time: self.time,
            data,
            surface_op,
            source_event_seqs,
            ignorable: self.ignorable,
        })
    }
}

fn surface_op_text(op: &SurfaceOp) -> String {
    serde_json::to_string(op).unwrap_or_else(|_| "null".to_owned())
}

/// Refuses a stored (or about to be stored) header whose log format version is not one this
/// build reads ([`READABLE_VERSIONS`]), naming the direction as dsh does: a higher version was
/// written by a newer harness, so the message says to upgrade.
///
/// # Errors
///
/// [`PersistenceError::VersionUnsupported`] with `file` = `store` (the database: a
/// path or a connection description).
pub fn check_stored_version(store: &str, header: &SessionHeader) -> Result<(), PersistenceError> {
    if FormatVersion::from_number(header.version).is_some() {
        return Ok(());
    }
    let readable: Vec<String> = READABLE_VERSIONS.iter().map(|v| format!("v{v}")).collect();
    Err(PersistenceError::VersionUnsupported {
        file: store.to_owned(),
        version: header.version.to_string(),
        message: format!(
            "session \"{}\" is stored in log format v{}, but this build reads only {}: it was \
             written by a newer harness — upgrade the harness to open it",
            header.id,
            header.version,
            readable.join(", ")
        ),
    })
}

/// Refuses a header about to be stored that its format version has no place for, as the JSONL
/// backend refuses it on create (its header line would not read back): in v1 to v3 a field the
/// session crate does not model (those headers have exact keys), in v2 and v3 a `seedLength`
/// (their fork cut is an inherited `session/end-seed` marker in the log), in v0 and v1 an
/// `isSeeded`. The version itself is [`check_stored_version`]'s.
///
/// # Errors
///
/// [`PersistenceError::HeaderInvalid`] with `file` = `store`, naming the session and field.
pub fn check_header_fields(store: &str, header: &SessionHeader) -> Result<(), PersistenceError> {
    let Some(version) = FormatVersion::from_number(header.version) else {
        return Ok(());
    };
    let v = version.number();
    let reason = if version.has_seed_length() {
        header
            .is_seeded
            .map(|_| format!("header \"isSeeded\" has no place in format v{v}"))
    } else {
        header.seed_length.map(|_| {
            format!(
                "a v{v} header has no \"seedLength\": its fork cut is an inherited \
                 session/end-seed marker in the log"
            )
        })
    };
    let reason = reason.or_else(|| {
        let unmodelled = header.extra.keys().next().filter(|_| v > 0)?;
        Some(format!(
            "released v{v} physical header has unexpected member \"{unmodelled}\""
        ))
    });
    match reason {
        None => Ok(()),
        Some(reason) => Err(PersistenceError::HeaderInvalid {
            file: store.to_owned(),
            reason: format!("session \"{}\": {reason}", header.id),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::SessionMeta;
    use serde_json::json;

    #[test]
    fn a_header_with_every_field_survives_its_row() {
        let mut header = SessionHeader::new(SessionId::from("h"), 7, SessionMeta::default());
        header.cwd = Some("/w".into());
        header.parent_session = Some(SessionId::from("p"));
        header.seed_length = Some(3);
        header.origin = Some("subagent".into());
        header.delegation_depth = Some(1);
        header.agent_preset = Some("coder".into());
        header.extra.insert("later".into(), json!({"z": 1, "a": 2}));
        let row = HeaderColumns::of(&header);
        assert_eq!(row.extra, r#"{"later":{"z":1,"a":2}}"#);
        assert_eq!(row.into_header().unwrap(), header);
    }

    #[test]
    fn an_event_with_every_envelope_key_survives_its_row() {
        let mut event = SessionEvent::new("x/y", 4, -1, json!({"b": [1, 2.5], "a": null}));
        event.surface_op = Some(SurfaceOp::Replace { start: 1, end: 2 });
        event.source_event_seqs = Some(vec![1, 2]);
        event.ignorable = Some(false);
        let row = EventColumns::of(&event);
        assert_eq!(row.data, r#"{"b":[1,2.5],"a":null}"#);
        assert_eq!(row.into_event().unwrap(), event);
    }

    #[test]
    fn bad_rows_are_refused_naming_the_session_or_the_seq_and_column() {
        let mut header =
            HeaderColumns::of(&SessionHeader::new("s".into(), 1, SessionMeta::default()));
        header.seed_length = Some(-1);
        let error = header.clone().into_header().unwrap_err();
        assert!(error.reason.contains("\"s\": header seedLength"), "{error}");
        header.seed_length = None;
        header.extra = "[1]".into();
        let error = header.into_header().unwrap_err();
        assert!(error.reason.contains("extra fields"), "{error}");

        let mut event = EventColumns::of(&SessionEvent::new("t", 2, 0, json!(1)));
        event.surface_op = Some("\"sideways\"".into());
        let error = event.into_event().unwrap_err();
        assert_eq!(error.reason, "event at seq 2: column surface_op is invalid");
    }

    #[test]
    fn every_released_version_is_stored_and_a_later_one_refused_naming_upgrade() {
        let mut header = SessionHeader::new("v".into(), 1, SessionMeta::default());
        for version in READABLE_VERSIONS {
            header.version = version;
            assert!(check_stored_version("db", &header).is_ok(), "v{version}");
        }
        header.version = 4;
        let error = check_stored_version("db", &header).unwrap_err();
        assert_eq!(error.code(), "VERSION_UNSUPPORTED");
        assert!(error.to_string().contains("upgrade"), "{error}");
        assert!(error.to_string().contains("v0, v1, v2, v3"), "{error}");
    }

    #[test]
    fn a_v2_or_v3_header_keeps_is_seeded_and_an_unset_one_is_stored_unseeded() {
        for version in [FormatVersion::V2, FormatVersion::V3] {
            let meta = SessionMeta::default().version(version);
            let mut header = SessionHeader::new("s".into(), 1, meta);
            header.is_seeded = Some(true);
            let row = HeaderColumns::of(&header);
            assert_eq!(row.is_seeded, Some(true));
            assert_eq!(row.into_header().unwrap(), header);
            header.is_seeded = None;
            assert_eq!(HeaderColumns::of(&header).is_seeded, Some(false));
        }
        let v1 = SessionHeader::new(
            "s".into(),
            1,
            SessionMeta::default().version(FormatVersion::V1),
        );
        assert_eq!(HeaderColumns::of(&v1).is_seeded, None);
    }

    #[test]
    fn a_header_field_its_version_has_no_place_for_is_refused() {
        let at =
            |version| SessionHeader::new("s".into(), 1, SessionMeta::default().version(version));
        let mut v3 = at(FormatVersion::V3);
        v3.seed_length = Some(2);
        let error = check_header_fields("db", &v3).unwrap_err();
        assert_eq!(error.code(), "HEADER_INVALID");
        assert!(error.to_string().contains("seedLength"), "{error}");
        let mut v1 = at(FormatVersion::V1);
        v1.is_seeded = Some(false);
        assert!(check_header_fields("db", &v1)
            .unwrap_err()
            .to_string()
            .contains("isSeeded"));
        v1.is_seeded = None;
        v1.extra.insert("later".into(), json!(1));
        let error = check_header_fields("db", &v1).unwrap_err();
        assert!(
            error.to_string().contains("unexpected member \"later\""),
            "{error}"
        );
        let mut v0 = at(FormatVersion::V0);
        v0.extra.insert("later".into(), json!(1));
        v0.seed_length = Some(1);
        assert!(check_header_fields("db", &v0).is_ok());
        assert!(check_header_fields("db", &at(FormatVersion::V2)).is_ok());
    }
}
