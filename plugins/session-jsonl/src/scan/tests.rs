//! The scanner's rules on whole files, plain and compressed, read in pieces of every size.

use super::*;
use crate::file_end::FileEnd;

const HEADER: &str = r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}"#;

fn event(seq: u64, kind: &str) -> String {
    format!(r#"{{"type":"{kind}","seq":{seq},"time":0,"data":{{}}}}"#)
}

fn file(lines: &[String], tail: &str) -> Vec<u8> {
    let mut text = format!("{HEADER}\n");
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(tail);
    text.into_bytes()
}

/// A plain file held in memory, read whole.
fn scan_plain(bytes: &[u8]) -> Result<Scanned, ReadError> {
    scan_bytes(bytes, false)
}

/// A plain file read `piece` bytes at a time: the scan and the file's end.
fn scan_by(bytes: &[u8], piece: usize) -> Result<(Scanned, FileEnd), ReadError> {
    let (scanned, end) = FileScan::open_within(bytes, false, piece, Limits::DEFAULT)?.collect()?;
    Ok((scanned, end.file_end))
}

/// A plain file read within `limits`.
fn scan_within(bytes: &[u8], limits: Limits) -> Result<Scanned, ReadError> {
    Ok(
        FileScan::open_within(bytes, false, READ_CHUNK_BYTES, limits)?
            .collect()?
            .0,
    )
}

/// A compressed file held in memory, read whole.
fn scan_compressed(bytes: &[u8]) -> Result<Scanned, ReadError> {
    scan_bytes(bytes, true)
}

fn corrupt(bytes: &[u8]) -> String {
    match scan_plain(bytes) {
        Err(ReadError::Corrupt(reason)) => reason,
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn a_file_read_in_pieces_scans_as_the_whole_text_does() {
    let turn_end =
        r#"{"type":"turn/end","seq":3,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
    let files = [
        file(&[event(0, "x"), event(1, "x")], ""),
        file(&[event(0, "x"), event(1, "x")], r#"{"type":"x","se"#),
        file(&[event(0, "x"), "{not json".into()], ""),
        file(
            &[
                event(0, "x"),
                "{not json".into(),
                event(2, "x"),
                turn_end.into(),
            ],
            "",
        ),
        file(&[event(0, "x"), event(5, "x")], ""),
        file(&[], ""),
        HEADER.as_bytes().to_vec(),
        Vec::new(),
        b"\n".to_vec(),
        format!("{}\n", "x".repeat(Limits::DEFAULT.header_line + 10)).into_bytes(),
    ];
    for bytes in &files {
        let whole = format!("{:?}", scan_plain(bytes));
        let pieces: &[usize] = if bytes.len() < 1 << 16 {
            &[1, 7, 64, 1 << 20]
        } else {
            &[4096, 1 << 20]
        };
        for &piece in pieces {
            let read = scan_by(bytes, piece);
            let end = read.as_ref().ok().map(|(_, end)| end.clone());
            assert_eq!(
                format!("{:?}", read.map(|(s, _)| s)),
                whole,
                "pieces of {piece}"
            );
            if let Some(end) = end {
                assert_eq!(end, FileEnd::of(bytes), "pieces of {piece}");
            }
        }
    }
}

#[test]
fn a_large_file_decoded_on_several_threads_scans_as_one_decoded_in_order() {
    let padding = "x".repeat(200);
    let mut lines: Vec<String> = (0..12_000)
        .map(|seq| format!(r#"{{"type":"x/log","seq":{seq},"time":0,"data":{{"p":"{padding}"}}}}"#))
        .collect();
    assert!(lines.iter().map(String::len).sum::<usize>() > 2 * crate::body::PARALLEL_DECODE_BYTES);
    let clean = scan_plain(&file(&lines, "")).expect("clean");
    assert_eq!(clean.events.len(), 12_000);
    assert!((0..12_000).all(|seq| clean.events[seq].has_seq(seq as u64)));
    // Damage deep in the last chunk, then a turn/end: the line number is the file's.
    lines[11_000] = "{not json".into();
    lines.push(event(12_000, "turn/end"));
    assert_eq!(
        corrupt(&file(&lines, "")),
        "unparsable committed event at line 11001"
    );
    // Without a later turn/end it is the torn tail, and what came before is kept.
    lines.pop();
    let torn = scan_plain(&file(&lines, "")).expect("a torn tail");
    assert_eq!(torn.events.len(), 11_000);
}

#[test]
fn a_clean_file_is_committed_to_its_end() {
    let bytes = file(&[event(0, "turn/start"), event(1, "turn/end")], "");
    let scanned = scan_plain(&bytes).expect("clean");
    assert_eq!(scanned.events.len(), 2);
    assert_eq!(scanned.committed, bytes.len() as u64);
    assert_eq!(scanned.dropped_tail, None);
}

#[test]
fn a_header_only_file_is_an_empty_session() {
    let bytes = file(&[], "");
    let scanned = scan_plain(&bytes).expect("clean");
    assert!(scanned.events.is_empty());
    assert_eq!(scanned.committed, bytes.len() as u64);
}

#[test]
fn lines_beyond_the_bounds_refuse_the_file_and_are_never_cut() {
    let long = format!(
        r#"{{"type":"x/long","seq":1,"time":0,"data":"{}"}}"#,
        "a".repeat(80)
    );
    let limits = Limits {
        header_line: HEADER.len(),
        line: long.len() - 1,
        frame: 1 << 20,
    };
    let text = file(
        &[event(0, "turn/start"), long.clone(), event(2, "turn/end")],
        "",
    );
    let refused = scan_within(&text, limits).expect_err("refused");
    assert!(
        matches!(&refused, ReadError::TooLarge(why) if why.starts_with("line 2 is longer than")),
        "{refused:?}"
    );
    // Even in the open last turn, where an unparsable line would be a torn tail.
    let open = file(&[event(0, "turn/start"), long.clone()], "");
    assert!(matches!(
        scan_within(&open, limits),
        Err(ReadError::TooLarge(_))
    ));
    let roomy = Limits {
        line: long.len(),
        ..limits
    };
    assert_eq!(scan_within(&text, roomy).expect("read").events.len(), 3);
    let header = Limits {
        header_line: HEADER.len() - 1,
        ..roomy
    };
    for bytes in [text.clone(), HEADER.as_bytes().to_vec()] {
        assert!(
            matches!(
                scan_within(&bytes, header),
                Err(ReadError::TooLarge(why)) if why.starts_with("the header line is longer")
            ),
            "{}",
            bytes.len()
        );
    }
}

#[test]
fn files_without_a_newline_have_no_header() {
    for bytes in [&b""[..], HEADER.as_bytes()] {
        assert!(matches!(
            scan_plain(bytes),
            Err(ReadError::Header(HeaderError::Damaged(reason))) if reason == "empty or header-less session log"
        ));
    }
}

#[test]
fn an_unterminated_final_line_is_a_torn_tail() {
    let bytes = file(&[event(0, "turn/start")], r#"{"type":"turn/e"#);
    let scanned = scan_plain(&bytes).expect("torn tail is tolerated");
    assert_eq!(scanned.events.len(), 1);
    assert_eq!(scanned.committed as usize, bytes.len() - 15);
    let tail = scanned.dropped_tail.expect("reported");
    assert!(tail.contains("line 2"), "{tail}");
    assert!(tail.contains("15 trailing bytes"), "{tail}");
}

#[test]
fn damage_without_a_later_turn_end_is_dropped_as_tail() {
    let bytes = file(
        &["{oops".into(), event(1, "step/start"), event(2, "step/end")],
        "",
    );
    let scanned = scan_plain(&bytes).expect("tolerated");
    assert!(scanned.events.is_empty());
    let tail = scanned.dropped_tail.expect("reported");
    assert!(tail.starts_with("line 1 is unparsable"), "{tail}");
}

#[test]
fn damage_before_a_turn_end_is_fatal() {
    let bytes = file(
        &[event(0, "turn/start"), "{oops".into(), event(2, "turn/end")],
        "",
    );
    assert_eq!(corrupt(&bytes), "unparsable committed event at line 2");
}

#[test]
fn a_malformed_row_counts_as_unparsable() {
    let row = r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[]}}"#;
    let bytes = file(
        &[event(0, "turn/start"), row.into(), event(2, "turn/end")],
        "",
    );
    assert_eq!(corrupt(&bytes), "unparsable committed event at line 2");
    let bytes = file(&[event(0, "turn/start"), row.into()], "");
    let tail = scan_plain(&bytes)
        .expect("tolerated")
        .dropped_tail
        .expect("reported");
    assert!(
        tail.contains("texts must be a non-empty string array"),
        "{tail}"
    );
}

#[test]
fn a_seq_gap_is_tail_unless_a_turn_end_follows_or_sits_in_it() {
    let gap = file(&[event(0, "turn/start"), event(2, "step/start")], "");
    let scanned = scan_plain(&gap).expect("tolerated");
    assert_eq!(scanned.events.len(), 1);
    let tail = scanned.dropped_tail.expect("reported");
    assert!(tail.contains("expected 1, got 2"), "{tail}");

    let later = file(
        &[
            event(0, "turn/start"),
            event(2, "step/start"),
            event(3, "turn/end"),
        ],
        "",
    );
    assert_eq!(
        corrupt(&later),
        "seq gap in committed region at line 2 (expected 1, got 2)"
    );
    let itself = file(&[event(0, "turn/start"), event(5, "turn/end")], "");
    assert_eq!(
        corrupt(&itself),
        "seq gap in committed region at line 2 (expected 1, got 5)"
    );
    let missing = file(&[r#"{"type":"turn/end","time":0,"data":{}}"#.into()], "");
    assert_eq!(
        corrupt(&missing),
        "seq gap in committed region at line 1 (expected 0, got undefined)"
    );
}

#[test]
fn a_gap_inside_a_row_drops_the_whole_row() {
    let row = r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0],"texts":["a","b"]}}"#;
    let bytes = file(&[row.into(), row.into()], "");
    let scanned = scan_plain(&bytes).expect("tolerated");
    assert_eq!(scanned.events.len(), 2);
    assert_eq!(scanned.committed as usize, HEADER.len() + 1 + row.len() + 1);
}

#[test]
fn a_null_record_is_fatal() {
    let bytes = file(&[event(0, "turn/start"), "null".into()], "");
    assert_eq!(
        corrupt(&bytes),
        "line 2 holds null where an event record belongs"
    );
}

#[test]
fn a_prefix_read_stops_early_unless_damage_is_pending() {
    let lines: Vec<String> = (0..5).map(|seq| event(seq, "x")).collect();
    let bytes = file(&lines, "torn");
    let scanned = scan_prefix(&mut &bytes[..], 2).expect("prefix");
    assert_eq!(scanned.events.len(), 2);
    assert_eq!(scanned.dropped_tail, None);
    let all = scan_prefix(&mut &bytes[..], 10).expect("prefix");
    assert_eq!(all.events.len(), 5);
    assert!(all.dropped_tail.is_some());

    let damaged = file(&[event(0, "x"), "{".into(), event(2, "turn/end")], "");
    assert!(matches!(
        scan_prefix(&mut &damaged[..], 1),
        Ok(s) if s.events.len() == 1
    ));
    assert!(matches!(
        scan_prefix(&mut &damaged[..], 2),
        Err(ReadError::Corrupt(_))
    ));
}

#[test]
fn a_line_nested_too_deep_is_fatal_even_as_the_last_line() {
    let deep = format!(
        r#"{{"type":"x","seq":1,"time":0,"data":{}{}}}"#,
        "[".repeat(crate::json::MAX_DEPTH),
        "]".repeat(crate::json::MAX_DEPTH)
    );
    let bytes = file(&[event(0, "x"), deep], "");
    let reason = corrupt(&bytes);
    assert!(
        reason.starts_with("line 2 cannot be read: its JSON nests"),
        "{reason}"
    );
}

#[test]
fn a_torn_final_frame_is_cut_at_its_start_and_its_complete_records_carried() {
    use crate::compressed::compress_frame;
    let mut bytes = compress_frame(format!("{HEADER}\n").as_bytes()).expect("frame");
    let lines = [0, 1, 2, 3].map(|seq| event(seq, "x"));
    bytes
        .extend(compress_frame(format!("{}\n{}\n", lines[0], lines[1]).as_bytes()).expect("frame"));
    let torn_start = bytes.len() as u64;
    let kept = format!("{}\n{}\n", lines[2], lines[3]);
    let torn = compress_frame(format!("{kept}{{\"type\":").as_bytes()).expect("frame");
    bytes.extend(&torn[..torn.len() - 4]);

    let scanned = scan_compressed(&bytes).expect("a torn tail is tolerated");
    assert_eq!(scanned.events.len(), 4);
    assert_eq!(scanned.committed, torn_start);
    assert_eq!(scanned.carry, kept.as_bytes());
    let tail = scanned.dropped_tail.expect("reported");
    assert!(
        tail.starts_with("line 5 has no terminating newline"),
        "{tail}"
    );
    assert!(
        tail.contains(&format!(
            "zstd frame 3 (bytes {torn_start}..) is incomplete"
        )),
        "{tail}"
    );
}

#[test]
fn an_issue_inside_a_complete_frame_carries_the_frame_s_committed_part() {
    use crate::compressed::compress_frame;
    let mut bytes = compress_frame(format!("{HEADER}\n").as_bytes()).expect("frame");
    let frame_start = bytes.len() as u64;
    let text = format!("{}\n{{oops\n{}\n", event(0, "x"), event(2, "x"));
    bytes.extend(compress_frame(text.as_bytes()).expect("frame"));
    let scanned = scan_compressed(&bytes).expect("tolerated");
    assert_eq!(scanned.events.len(), 1);
    assert_eq!(scanned.committed, frame_start);
    assert_eq!(scanned.carry, format!("{}\n", event(0, "x")).as_bytes());
}

#[test]
fn the_header_is_read_alone() {
    let bytes = file(&["garbage".into()], "");
    let header = read_header(&mut &bytes[..]).expect("header");
    assert_eq!(header.id.as_str(), "s");
    assert!(matches!(
        read_header(&mut &b"{}"[..]),
        Err(ReadError::Header(_))
    ));
}
