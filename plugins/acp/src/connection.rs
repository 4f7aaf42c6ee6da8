//! One connection's life: its wire ([`crate::transport`]) between the client and the SDK's
//! protocol handling (with the handlers of `handlers.rs`), the turns it runs, and how it ends.
//!
//! A connection ends at the end of the client's input, at a read or a write error, at a
//! failure of the protocol handling, or when the `dsh-acp` plugin goes. Whichever way it
//! ends, it then
//! 1. cancels each turn it runs and waits for the turn's `session/prompt` to finish: the
//!    runner closes its turn, or, when the runner has not returned `stop_timeout_ms` after the
//!    cancellation, it is dropped and `dsh-acp` closes the turn as dsh closes a turn a crash
//!    interrupted; either way the session is flushed. What the SDK sends meanwhile (the
//!    cancelled prompts' answers) is still written while the output works;
//! 2. closes the SDK's input and waits up to `stop_timeout_ms` for the last answers to be
//!    written;
//! 3. returns: `Ok` for the end of the input or the plugin going, `CONNECTION_FAILED` for a
//!    read, write or protocol failure.

use crate::error::AcpError;
use crate::handlers::builder;
use crate::pace::Written;
use crate::shared::Shared;
use crate::transport::{frame, LineReader, LineWriter};
use crate::turns::ConnectionTurns;
use agent_client_protocol::{Channel, TransportFrame};
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender};
use futures::io::{AsyncRead, AsyncWrite};
use futures::StreamExt;
use std::io;
use std::pin::pin;
use std::sync::Arc;

/// Why a connection ended.
#[derive(Debug)]
enum End {
    /// The end of the client's input.
    Input,
    /// The client's input failed.
    InputFailed(io::Error),
    /// The output to the client failed.
    OutputFailed(io::Error),
    /// The protocol handling ended by itself (its result, if it failed).
    Protocol(Option<agent_client_protocol::Error>),
    /// The `dsh-acp` plugin went.
    Gone,
}

impl End {
    fn into_result(self) -> Result<(), AcpError> {
        let message = match self {
            End::Input | End::Gone | End::Protocol(None) => return Ok(()),
            End::InputFailed(error) => format!("reading the client's input failed: {error}"),
            End::OutputFailed(error) => format!("writing to the client failed: {error}"),
            End::Protocol(Some(error)) => error.to_string(),
        };
        Err(AcpError::Connection { message })
    }
}

/// Serves one connection over `input` and `output` (module documentation).
pub(crate) async fn serve<R, W>(shared: Arc<Shared>, input: R, output: W) -> Result<(), AcpError>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    let turns = Arc::new(ConnectionTurns::default());
    let written = Arc::new(Written::default());
    let (sdk_side, our_side) = Channel::duplex();
    let (mut from_sdk, to_sdk) = our_side.into_parts();
    let mut protocol =
        pin!(builder(shared.clone(), turns.clone(), written.clone()).connect_to(sdk_side));
    let mut protocol_done = false;
    let mut writer = LineWriter::new(output);
    let mut write = pin!(write_lines(&mut from_sdk, &mut writer, &written));
    let mut write_done = false;
    let mut reader = LineReader::new(input);
    let end = {
        let mut read = pin!(read_lines(&mut reader, &to_sdk, &shared));
        tokio::select! {
            end = &mut read => end,
            result = &mut write => {
                write_done = true;
                match result {
                    Ok(()) => End::Protocol(None),
                    Err(error) => End::OutputFailed(error),
                }
            }
            result = &mut protocol => {
                protocol_done = true;
                End::Protocol(result.err())
            }
            () = shared.gone.cancelled() => End::Gone,
        }
    };
    tracing::debug!(?end, "the connection ends: stopping its turns");
    {
        let mut stopped = pin!(turns.stop());
        loop {
            tokio::select! {
                () = &mut stopped => break,
                result = &mut write, if !write_done => {
                    write_done = true;
                    if let Err(error) = result {
                        tracing::debug!(%error, "the last answers could not be written");
                    }
                }
                _ = &mut protocol, if !protocol_done => protocol_done = true,
            }
        }
    }
    drop(to_sdk);
    let last_answers = async {
        while !(protocol_done && write_done) {
            tokio::select! {
                result = &mut write, if !write_done => {
                    write_done = true;
                    if let Err(error) = result {
                        tracing::debug!(%error, "the last answers could not be written");
                    }
                }
                _ = &mut protocol, if !protocol_done => protocol_done = true,
            }
        }
    };
    if tokio::time::timeout(shared.stop_timeout(), last_answers)
        .await
        .is_err()
    {
        tracing::warn!("the last answers were not written in time: the client does not read them");
    }
    end.into_result()
}

/// Reads the client's lines and hands each to the SDK until the input ends or fails.
async fn read_lines<R: AsyncRead + Unpin>(
    reader: &mut LineReader<R>,
    to_sdk: &UnboundedSender<TransportFrame>,
    shared: &Shared,
) -> End {
    loop {
        let limit = shared.max_line_bytes();
        match reader.next(limit).await {
            Ok(Some(line)) => {
                if to_sdk.unbounded_send(frame(line, limit)).is_err() {
                    return End::Protocol(None);
                }
            }
            Ok(None) => return End::Input,
            Err(error) => return End::InputFailed(error),
        }
    }
}

/// Writes what the SDK sends until it stops sending, flushing whenever nothing more waits.
async fn write_lines<W: AsyncWrite + Unpin>(
    from_sdk: &mut UnboundedReceiver<TransportFrame>,
    writer: &mut LineWriter<W>,
    written: &Written,
) -> io::Result<()> {
    while let Some(frame) = from_sdk.next().await {
        writer.write(&frame).await?;
        let mut frames = 1;
        while let Ok(frame) = from_sdk.try_recv() {
            writer.write(&frame).await?;
            frames += 1;
        }
        writer.flush().await?;
        written.add(frames);
    }
    writer.flush().await
}
