//! An ACP peer for the tests of `dsh acp`: the agent process (the `dsh` binary, or the
//! `acp_echo_runner` example, which is `dsh acp` plus a turn runner) with its stdin to write
//! and its stdout read line by line.

use super::Sandbox;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How long a test waits for a message or an exit before it fails (a guard against a hang,
/// not a measurement).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The `acp_echo_runner` example next to the `dsh` binary, or `None` (with a `skipped:` line)
/// when it was not built: `cargo test --workspace` builds it, a run of one test target does
/// not (`cargo build -p dsh-host --example acp_echo_runner` first).
pub fn echo_runner(test: &str) -> Option<PathBuf> {
    let dsh = PathBuf::from(env!("CARGO_BIN_EXE_dsh"));
    let example = dsh
        .parent()?
        .join("examples")
        .join(format!("acp_echo_runner{}", std::env::consts::EXE_SUFFIX));
    if example.is_file() {
        Some(example)
    } else {
        println!(
            "skipped: {test} needs {} (cargo build -p dsh-host --example acp_echo_runner)",
            example.display()
        );
        None
    }
}

/// A running agent process and the messages it wrote.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Set to make the reader close the agent's stdout after the next line it reads.
    hang_up: Arc<AtomicBool>,
}

impl Peer {
    /// `dsh --store STORE EXTRA acp`.
    pub fn dsh(sandbox: &Sandbox, extra: &[&str]) -> Peer {
        let mut command = sandbox.command();
        command
            .arg("--store")
            .arg(sandbox.store())
            .args(extra)
            .arg("acp");
        Peer::spawn(command)
    }

    /// The echo runner host at `binary` (see [`echo_runner`]): `BINARY --store STORE EXTRA`.
    pub fn echo(sandbox: &Sandbox, binary: &std::path::Path, extra: &[&str]) -> Peer {
        let mut command = Command::new(binary);
        command
            .current_dir(sandbox.root())
            .env_remove("DSH_STORE")
            .env_remove("DSH_LOG")
            .env("HOME", sandbox.home())
            .env("XDG_DATA_HOME", sandbox.xdg())
            .arg("--store")
            .arg(sandbox.store())
            .args(extra);
        Peer::spawn(command)
    }

    fn spawn(mut command: Command) -> Peer {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("the agent starts");
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = mpsc::channel();
        let hang_up = Arc::new(AtomicBool::new(false));
        let hanging = hang_up.clone();
        std::thread::spawn(move || {
            // Dropping the reader closes the agent's stdout: its next write fails.
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if hanging.load(Ordering::SeqCst) || send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Peer {
            child,
            stdin,
            lines,
            hang_up,
        }
    }

    /// Writes `bytes` to the agent's stdin.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to the agent");
        stdin.flush().expect("flush");
    }

    /// Writes `text` to the agent's stdin.
    pub fn write(&mut self, text: &str) {
        self.write_bytes(text.as_bytes());
    }

    /// Sends request `id` without waiting for its answer.
    pub fn send(&mut self, id: Value, method: &str, params: Value) {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write(&format!("{request}\n"));
    }

    /// Sends notification `method`.
    pub fn notify(&mut self, method: &str, params: Value) {
        let notification = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.write(&format!("{notification}\n"));
    }

    /// The next message the agent writes.
    pub fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the agent answers in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The next message the agent writes that satisfies `wanted` (those before it skipped).
    pub fn next_where(&self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = self.next();
            if wanted(&message) {
                return message;
            }
        }
    }

    /// The answer to request `id` (other messages before it skipped).
    pub fn answer(&self, id: &Value) -> Value {
        self.next_where(|message| message.get("id") == Some(id) && message.get("method").is_none())
    }

    /// Sends request `id` and returns its answer (notifications before it are skipped).
    pub fn call(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(id.clone(), method, params);
        self.answer(&id)
    }

    /// `initialize` (ACP v1) and its answer.
    pub fn initialize(&mut self) -> Value {
        self.call(
            json!(0),
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
    }

    /// `session/new` at `cwd`: the new session's id.
    pub fn new_session(&mut self, id: Value, cwd: &str) -> String {
        let answer = self.call(id, "session/new", json!({"cwd": cwd, "mcpServers": []}));
        answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("a session id in {answer}"))
            .to_owned()
    }

    /// Sends `session/prompt` `text` to `session` as request `id` and waits until the turn
    /// streams the echo runner's `waiting` chunk (`/wait`, `/hang`): the turn is running and
    /// its first step is durable.
    pub fn prompt_until_waiting(&mut self, id: Value, session: &str, text: &str) {
        self.send(
            id,
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        );
        self.next_where(|message| {
            message["params"]["update"]["content"]["text"] == "waiting"
                && message["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        });
    }

    /// Sends request `id` if the agent still reads its stdin; a write error is ignored.
    pub fn try_send(&mut self, id: Value, method: &str, params: Value) {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = stdin.write_all(format!("{request}\n").as_bytes());
            let _ = stdin.flush();
        }
    }

    /// Whether the agent has exited.
    pub fn has_exited(&mut self) -> bool {
        self.child.try_wait().expect("the agent's status").is_some()
    }

    /// Closes the agent's stdin (end of its input).
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Stops reading the agent's stdout: it is closed after the next line the agent writes,
    /// and every write after that one fails.
    pub fn stop_reading(&self) {
        self.hang_up.store(true, Ordering::SeqCst);
    }

    /// Kills the agent (`SIGKILL`: nothing of it runs after) and reaps it.
    pub fn kill(mut self) {
        self.child.kill().expect("the agent is killed");
        self.child.wait().expect("the agent is reaped");
    }

    /// Waits for the agent to exit (its stdin left as it is) and returns its status and
    /// stderr; fails the test past [`PATIENCE`].
    pub fn wait(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("the agent's status") {
                break status;
            }
            assert!(Instant::now() < deadline, "the agent did not exit in time");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut pipe, &mut stderr).expect("stderr");
        }
        (status, stderr)
    }

    /// Closes stdin and returns the exit status and stderr.
    pub fn finish(mut self) -> (i32, String) {
        self.close_stdin();
        let (status, stderr) = self.wait();
        (status.code().unwrap_or(-1), stderr)
    }

    /// The agent's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// The error code of an answer, and its `data.code` when it has one.
pub fn error(answer: &Value) -> (i64, Option<&str>) {
    let error = &answer["error"];
    assert!(error.is_object(), "expected an error, got {answer}");
    (
        error["code"].as_i64().expect("a numeric code"),
        error["data"]["code"].as_str(),
    )
}
