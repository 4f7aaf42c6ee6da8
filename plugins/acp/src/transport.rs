//! The wire of a connection: one JSON-RPC message per line of UTF-8 text, both ways, read
//! with a bound on the line and written with a bound on what an error echoes.
//!
//! Reading holds at most `max_line_bytes` of a line (the `dsh-acp` config): a longer line is
//! read on and dropped piece by piece, never held, and becomes an `-32600` error with `data`
//! `{"code": "LIMIT_EXCEEDED", "message": ...}` (no id: none was read). A line that is not
//! UTF-8 is a `-32700` with `data.code` `INVALID_UTF8`, and a line that is not JSON a
//! `-32700` with `data.code` `INVALID_JSON`; either shows the line's first 64 characters,
//! then `…` and its length in bytes. Each is an error for that line only: the next line is
//! read as usual. A line's newline (and a `\r` before it) is not part of it; a last line
//! without a newline is a line.

use crate::echo::{bound_error, shown};
use agent_client_protocol::{
    Error as RpcError, ErrorCode, RawJsonRpcMessage, RawJsonRpcResponse, TransportFrame,
};
use futures::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use serde_json::json;
use std::io;

/// The capacity a line buffer keeps between lines; a longer line's buffer is freed after it.
const KEPT_LINE_CAPACITY: usize = 64 * 1024;

/// One line of the client's input.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// A line of at most the limit's bytes, without its newline.
    Text(&'a [u8]),
    /// A line over the limit, dropped as it was read: its length in bytes.
    TooLong {
        /// The line's length in bytes, without its newline.
        bytes: u64,
    },
}

/// Reads the client's input line by line, holding at most the limit of one line.
pub(crate) struct LineReader<R> {
    input: BufReader<R>,
    line: Vec<u8>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(input: R) -> LineReader<R> {
        LineReader {
            input: BufReader::new(input),
            line: Vec::new(),
        }
    }

    /// The next line, of at most `limit` bytes (else [`Line::TooLong`]); `None` at the end of
    /// the input.
    ///
    /// # Errors
    /// The input's read error.
    pub(crate) async fn next(&mut self, limit: usize) -> io::Result<Option<Line<'_>>> {
        self.line.clear();
        self.line.shrink_to(KEPT_LINE_CAPACITY);
        let mut bytes: u64 = 0;
        let mut over = false;
        loop {
            let available = self.input.fill_buf().await?;
            if available.is_empty() {
                if bytes == 0 {
                    return Ok(None);
                }
                break;
            }
            let newline = available.iter().position(|&byte| byte == b'\n');
            let piece = &available[..newline.unwrap_or(available.len())];
            bytes += piece.len() as u64;
            if !over && self.line.len() + piece.len() > limit {
                over = true;
                self.line = Vec::new();
            }
            if !over {
                self.line.extend_from_slice(piece);
            }
            let consumed = newline.map_or(available.len(), |at| at + 1);
            self.input.consume_unpin(consumed);
            if newline.is_some() {
                break;
            }
        }
        if over {
            return Ok(Some(Line::TooLong { bytes }));
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        Ok(Some(Line::Text(&self.line)))
    }
}

/// The frame the SDK gets for `line`: its message, or an error for that line alone.
/// `limit` is the line limit in force (named in the error of a line over it).
pub(crate) fn frame(line: Line<'_>, limit: usize) -> TransportFrame {
    let text = match line {
        Line::TooLong { bytes } => {
            let message = format!(
                "the line of {bytes} bytes is over the limit of {limit} bytes (config \
                 max_line_bytes of plugin dsh-acp); it was skipped"
            );
            return refused(
                RpcError::invalid_request()
                    .data(json!({"code": "LIMIT_EXCEEDED", "message": message})),
            );
        }
        Line::Text(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(error) => {
                let message = format!(
                    "the line is not UTF-8: invalid byte at offset {}",
                    error.valid_up_to()
                );
                let line = shown(&String::from_utf8_lossy(bytes));
                return refused(
                    RpcError::parse_error()
                        .data(json!({"code": "INVALID_UTF8", "message": message, "line": line})),
                );
            }
        },
    };
    match TransportFrame::parse_json(text) {
        TransportFrame::Malformed { error, .. } if error.code == ErrorCode::PARSE_ERROR => {
            // The SDK's parse error carries the whole line: say why, and show the line cut.
            let message = serde_json::from_str::<serde::de::IgnoredAny>(text)
                .err()
                .map_or_else(|| "not JSON".to_owned(), |error| error.to_string());
            refused(
                RpcError::parse_error()
                    .data(json!({"code": "INVALID_JSON", "message": message, "line": shown(text)})),
            )
        }
        frame => frame,
    }
}

/// A frame the SDK answers with `error` and no id.
fn refused(error: RpcError) -> TransportFrame {
    TransportFrame::Malformed {
        raw: String::new(),
        error,
    }
}

/// Writes the SDK's frames to the client as lines, buffered until [`LineWriter::flush`].
pub(crate) struct LineWriter<W: AsyncWrite> {
    output: BufWriter<W>,
}

impl<W: AsyncWrite + Unpin> LineWriter<W> {
    pub(crate) fn new(output: W) -> LineWriter<W> {
        LineWriter {
            output: BufWriter::new(output),
        }
    }

    /// Writes `frame` as one line (an error answer bounded by [`bound_error`]). A message
    /// that cannot be serialized is logged and skipped.
    ///
    /// # Errors
    /// The output's write error.
    pub(crate) async fn write(&mut self, frame: &TransportFrame) -> io::Result<()> {
        let line = match encode(frame) {
            Ok(line) => line,
            Err(error) => {
                tracing::error!(%error, "a message to the client could not be serialized; skipped");
                return Ok(());
            }
        };
        self.output.write_all(line.as_bytes()).await?;
        self.output.write_all(b"\n").await
    }

    /// Writes what is buffered and flushes the output.
    ///
    /// # Errors
    /// The output's write error.
    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        self.output.flush().await
    }
}

/// The line of `frame`: its JSON text on one line, an error answer bounded.
fn encode(frame: &TransportFrame) -> Result<String, serde_json::Error> {
    match frame {
        TransportFrame::Single(
            message @ RawJsonRpcMessage::Response(RawJsonRpcResponse::Error { .. }),
        ) => {
            let mut value = serde_json::to_value(message)?;
            if let Some(error) = value.get_mut("error") {
                bound_error(error);
            }
            serde_json::to_string(&value)
        }
        TransportFrame::Single(message) => serde_json::to_string(message),
        // A relayed malformed value (the agent relays none): as the SDK writes it, on one
        // line.
        TransportFrame::Malformed { raw, .. } if raw.contains(['\r', '\n']) => {
            serde_json::to_string(raw)
        }
        TransportFrame::Malformed { raw, .. } => Ok(raw.clone()),
        _ => Ok(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    /// Every line of `input` read with `limit`, as owned values.
    async fn lines(input: &[u8], limit: usize) -> Vec<Result<Vec<u8>, u64>> {
        let mut reader = LineReader::new(input);
        let mut out = Vec::new();
        while let Some(line) = reader.next(limit).await.expect("reads") {
            out.push(match line {
                Line::Text(bytes) => Ok(bytes.to_vec()),
                Line::TooLong { bytes } => Err(bytes),
            });
        }
        out
    }

    #[tokio::test]
    async fn lines_are_split_at_newlines_and_a_last_line_needs_none() {
        assert_eq!(
            lines(b"a\r\n\nbc\nlast", 10).await,
            [
                Ok(b"a".to_vec()),
                Ok(vec![]),
                Ok(b"bc".to_vec()),
                Ok(b"last".to_vec())
            ]
        );
        assert!(lines(b"", 10).await.is_empty());
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_dropped_and_the_next_one_read() {
        let mut input = vec![b'x'; 100_000];
        input.extend_from_slice(b"\nok\n");
        input.extend_from_slice(&[b'y'; 11]);
        assert_eq!(
            lines(&input, 10).await,
            [Err(100_000), Ok(b"ok".to_vec()), Err(11)]
        );
        assert_eq!(lines(&[b'z'; 10], 10).await, [Ok(vec![b'z'; 10])]);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_never_held() {
        // A reader that yields 64 MiB of one line in 64 KiB pieces: the line buffer stays
        // within the limit while the line is dropped.
        let piece = vec![b'x'; 64 * 1024];
        let pieces = std::iter::repeat_n(piece, 1024).chain([b"\n".to_vec()]);
        let stream = futures::stream::iter(pieces.map(Ok::<_, io::Error>));
        let mut reader = LineReader::new(stream.into_async_read());
        let line = reader.next(1 << 20).await.expect("reads");
        assert_eq!(line, Some(Line::TooLong { bytes: 64 << 20 }));
        assert!(
            reader.line.capacity() <= 1 << 20,
            "{}",
            reader.line.capacity()
        );
    }

    #[test]
    fn bad_lines_are_errors_that_show_64_characters() {
        let data = |frame: TransportFrame| match frame {
            TransportFrame::Malformed { error, .. } => (error.code, error.data.expect("data")),
            other => panic!("expected an error, got {other:?}"),
        };
        let (code, data_) = data(frame(Line::TooLong { bytes: 99 }, 10));
        assert_eq!(
            (code, &data_["code"]),
            (ErrorCode::INVALID_REQUEST, &json!("LIMIT_EXCEEDED"))
        );
        assert!(data_["message"].as_str().unwrap().contains("99 bytes"));
        let (code, data_) = data(frame(Line::Text(b"{\"a\xff\"}"), 10));
        assert_eq!(
            (code, &data_["code"]),
            (ErrorCode::PARSE_ERROR, &json!("INVALID_UTF8"))
        );
        assert_eq!(data_["line"], "{\"a\u{fffd}\"}");
        let long = format!("{{{}", "y".repeat(1000));
        let (code, data_) = data(frame(Line::Text(long.as_bytes()), 2000));
        assert_eq!(
            (code, &data_["code"]),
            (ErrorCode::PARSE_ERROR, &json!("INVALID_JSON"))
        );
        assert_eq!(data_["line"], json!(shown(&long)));
        assert!(matches!(
            frame(Line::Text(br#"{"jsonrpc":"2.0","method":"m"}"#), 100),
            TransportFrame::Single(_)
        ));
    }
}
