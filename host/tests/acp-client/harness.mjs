// The harness of the ACP client tests: `dsh acp` (or the echo-runner example, which is
// `dsh acp` plus a turn runner) as a child process, driven by the official TypeScript client
// (`client()` of @agentclientprotocol/sdk, the successor of `ClientSideConnection`), every
// message of the connection recorded as a transcript, and transcripts compared with the
// committed snapshots (`snapshots/NAME.jsonl`; `UPDATE_SNAPSHOTS=1` rewrites them).

import * as acp from "@agentclientprotocol/sdk/unstable";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, "../../..");
const target = process.env.CARGO_TARGET_DIR ?? path.join(root, "target");
/** The `dsh` binary (a debug build; `DSH_BIN` overrides). */
export const dsh = process.env.DSH_BIN ?? path.join(target, "debug/dsh");
/** `dsh acp` with the echo runner (`cargo build -p dsh-host --example acp_echo_runner`). */
export const echo = process.env.DSH_ECHO_BIN ?? path.join(target, "debug/examples/acp_echo_runner");

for (const bin of [dsh, echo]) {
  if (!existsSync(bin)) {
    throw new Error(`${bin} is missing: build it first (cargo build -p dsh-host --examples)`);
  }
}

/** A fresh store folder. */
export function store() {
  return mkdtempSync(path.join(tmpdir(), "dsh-acp-"));
}

/** Runs `dsh --store STORE --json ARGS...` and returns its JSON document. */
export function dshJson(storeDir, ...args) {
  const out = execFileSync(dsh, ["--store", storeDir, "--json", ...args], { encoding: "utf8" });
  return JSON.parse(out);
}

/**
 * Starts `bin` with `args` (e.g. `["--store", DIR, "acp"]`) and connects the ACP client to
 * it. Returns `{ transcript, run(op), stderr }`: `run` calls `op(agent)` with the client's
 * context for the agent and resolves with its result once the connection closed and the
 * child exited (status 0 expected).
 */
export function agent(bin, args, handlers = {}) {
  const child = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const base = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const transcript = [];
  const writer = base.writable.getWriter();
  const stream = {
    writable: new WritableStream({
      async write(message) {
        transcript.push({ send: message });
        await writer.write(message);
      },
      async close() {
        await writer.close();
      },
    }),
    readable: base.readable.pipeThrough(
      new TransformStream({
        transform(message, controller) {
          transcript.push({ recv: message });
          controller.enqueue(message);
        },
      }),
    ),
  };
  const updates = [];
  let app = acp.client({ name: "dsh-acp-tests" }).onNotification(
    acp.methods.client.session.update,
    ({ params }) => {
      updates.push(params);
    },
  );
  for (const [method, handler] of Object.entries(handlers)) {
    app = app.onRequest(method, handler);
  }
  return {
    transcript,
    updates,
    get stderr() {
      return stderr;
    },
    async run(op) {
      const result = await app.connectWith(stream, op);
      child.stdin.end();
      const code = await exited;
      assert.equal(code, 0, `the agent exited with status ${code}:\n${stderr}`);
      return result;
    },
  };
}

/** The client's `initialize`. */
export function initialize(agentCx) {
  return agentCx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "dsh-acp-tests", version: "1.0.0" },
  });
}

/** `promise`'s rejection (a RequestError), failing when it resolves. */
export async function rejection(promise) {
  try {
    const value = await promise;
    assert.fail(`expected an error, got ${JSON.stringify(value)}`);
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    return error;
  }
}

/**
 * The transcript as JSON lines with the ids and times normalised: session ids (UUIDs) become
 * `<session-N>`, derived message ids (UUID v5) `<message-N>` and JSON-RPC request ids `<id-N>`
 * in order of appearance, RFC 3339 times
 * `<time>`, epoch milliseconds `<ms>`.
 */
export function normalise(transcript) {
  const sessions = new Map();
  const messages = new Map();
  const ids = new Map();
  const label = (map, key, prefix) => {
    if (!map.has(key)) map.set(key, `<${prefix}-${map.size + 1}>`);
    return map.get(key);
  };
  return transcript
    .map((entry) => {
      const [dir, message] = Object.entries(entry)[0];
      const copy = { ...message };
      if ("id" in copy && copy.id !== null) copy.id = label(ids, JSON.stringify(copy.id), "id");
      return JSON.stringify({ [dir]: copy })
        .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) =>
          // UUID v5: a message id dsh derived from its event; any other: a session id
          id[14] === "5" ? label(messages, id, "message") : label(sessions, id, "session"),
        )
        .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, "<time>")
        .replace(/\b1\d{12}\b/g, "<ms>"); // epoch milliseconds (list cursors)
    })
    .join("\n")
    .concat("\n");
}

/** Compares the normalised transcript with `snapshots/NAME.jsonl` (or writes it). */
export function snapshot(name, transcript) {
  const file = path.join(here, "snapshots", `${name}.jsonl`);
  const actual = normalise(transcript);
  if (process.env.UPDATE_SNAPSHOTS === "1") {
    writeFileSync(file, actual);
    return;
  }
  assert.ok(existsSync(file), `no snapshot ${file}: run with UPDATE_SNAPSHOTS=1 and review it`);
  assert.equal(actual, readFileSync(file, "utf8"), `transcript ${name} differs from its snapshot`);
}

export { acp };
