// `dsh acp` driven by the official ACP TypeScript client, one test per scenario of issue 15,
// each compared with its transcript snapshot. Run by `.ci/run` (`npm ci && npm test` here,
// after `cargo build -p dsh-host --examples`).

import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";
import {
  acp,
  agent,
  dsh,
  dshJson,
  echo,
  initialize,
  rejection,
  root,
  snapshot,
  store,
} from "./harness.mjs";

const EXAMPLE = path.join(root, "examples/session.jsonl");
const EXAMPLE_ID = "0193f3a0-6c1e-7d2a-9b4f-5e8d1c2a3b4c";
const EXAMPLE_CWD = "/home/dev/project";
const { session: S } = acp.methods.agent;

/** A store holding the shipped two-turn session (turn/ends at seqs 20 and 26). */
function storeWithExample() {
  const dir = store();
  dshJson(dir, "import", EXAMPLE);
  return dir;
}

/** A store holding the shipped session cut inside its second turn, as a crash leaves it. */
function storeWithOpenTurn() {
  const dir = store();
  const [header, ...events] = readFileSync(EXAMPLE, "utf8").trim().split("\n");
  const kept = events.filter((line) => {
    const event = JSON.parse(line);
    return (event.seq ?? event.seq0) <= 22; // packed chunk rows start at seq0
  }); // to turn 2's user/message
  const file = path.join(store(), "open-turn.jsonl");
  writeFileSync(file, [header, ...kept].join("\n") + "\n");
  dshJson(dir, "import", file);
  return dir;
}

test("handshake with the fork plugin advertises session/fork", async () => {
  const dir = store();
  const run = agent(dsh, ["--store", dir, "acp"]);
  const init = await run.run((a) => initialize(a));
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.deepEqual(Object.keys(init.agentCapabilities.sessionCapabilities).sort(), [
    "close",
    "delete",
    "fork",
    "list",
    "resume",
  ]);
  snapshot("handshake-fork", run.transcript);
});

test("handshake without the fork plugin: no fork capability, session/fork is method not found", async () => {
  const dir = storeWithExample();
  const run = agent(dsh, ["--store", dir, "--disable", "dsh-session-fork", "acp"]);
  await run.run(async (a) => {
    const init = await initialize(a);
    assert.equal(init.agentCapabilities.sessionCapabilities.fork, undefined);
    assert.ok(init.agentCapabilities.sessionCapabilities.list);
    const error = await rejection(a.request(S.fork, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD }));
    assert.equal(error.code, -32601);
  });
  snapshot("handshake-no-fork", run.transcript);
});

test("new and prompt with the example runner stream the answer and store the turn", async () => {
  const dir = store();
  const run = agent(echo, ["--store", dir]);
  const sessionId = await run.run(async (a) => {
    await initialize(a);
    const { sessionId } = await a.request(S.new, { cwd: "/work/demo", mcpServers: [] });
    const done = await a.request(S.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "hello dsh" }],
    });
    assert.equal(done.stopReason, "end_turn");
    // A turn cancelled while it runs ends `cancelled`.
    const waiting = a.request(S.prompt, { sessionId, prompt: [{ type: "text", text: "/sleep 30000" }] });
    await sleep(200);
    await a.notify(S.cancel, { sessionId });
    assert.equal((await waiting).stopReason, "cancelled");
    return sessionId;
  });
  const answers = run.updates.filter((u) => u.update.sessionUpdate === "agent_message_chunk");
  assert.deepEqual(
    answers.map((u) => u.update.content.text),
    ["echo: hello dsh"],
  );
  const shown = dshJson(dir, "show", sessionId);
  assert.equal(shown.turns, 2);
  assert.equal(shown.openTurn, false);
  const history = dshJson(dir, "history", sessionId);
  assert.deepEqual(
    history.map((m) => [m.role, m.content[0].text]),
    [
      ["user", "hello dsh"],
      ["assistant", "echo: hello dsh"],
      ["user", "/sleep 30000"],
    ],
  );
  snapshot("new-prompt", run.transcript);
});

test("load replays the stored history as session updates, in order", async () => {
  const dir = storeWithExample();
  const run = agent(dsh, ["--store", dir, "acp"]);
  await run.run(async (a) => {
    await initialize(a);
    const loaded = await a.request(S.load, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD, mcpServers: [] });
    assert.deepEqual(loaded, {});
  });
  assert.ok(run.updates.every((u) => u.sessionId === EXAMPLE_ID));
  assert.deepEqual(replayed(run.updates), expected(dshJson(dir, "history", EXAMPLE_ID)));
  snapshot("load", run.transcript);
});

/** The replayed updates as history items: chunks of one kind in a row joined. */
function replayed(updates) {
  const items = [];
  for (const { update } of updates) {
    const kind = {
      user_message_chunk: "user",
      agent_message_chunk: "assistant",
      agent_thought_chunk: "reasoning",
    }[update.sessionUpdate];
    if (kind) {
      const last = items.at(-1);
      if (last?.kind === kind) last.text += update.content.text;
      else items.push({ kind, text: update.content.text });
    } else if (update.sessionUpdate === "tool_call") {
      items.push({ kind: "tool-call", id: update.toolCallId, title: update.title });
    } else if (update.sessionUpdate === "tool_call_update" && update.status === "completed") {
      const text = update.content.map((c) => c.content.text).join("");
      items.push({ kind: "tool-result", id: update.toolCallId, text });
    }
  }
  return items;
}

/** `dsh history --json` as the same items. */
function expected(history) {
  const items = [];
  for (const message of history) {
    for (const block of message.content) {
      if (block.type === "text") items.push({ kind: message.role, text: block.text });
      if (block.type === "reasoning") items.push({ kind: "reasoning", text: block.text });
      if (block.type === "tool-call") items.push({ kind: "tool-call", id: block.id, title: block.name });
      if (block.type === "tool-result") {
        const text = block.content.map((c) => c.text).join("");
        items.push({ kind: "tool-result", id: block.toolCallId, text });
      }
    }
  }
  return items;
}

test("list pages through the sessions with its cursor and filters by cwd", async () => {
  const dir = store();
  const config = path.join(dir, "dsh.json");
  writeFileSync(config, JSON.stringify({ plugins: { "dsh-acp": { config: { list_page_size: 2 } } } }));
  const run = agent(dsh, ["--store", dir, "--config", config, "acp"]);
  await run.run(async (a) => {
    await initialize(a);
    const created = [];
    for (const cwd of ["/p/a", "/p/b", "/p/a", "/p/b", "/p/a"]) {
      created.push({ cwd, ...(await a.request(S.new, { cwd, mcpServers: [] })) });
      await sleep(5); // distinct creation times: the order of the list is the creation order
    }
    const pages = [];
    let cursor;
    do {
      const page = await a.request(S.list, cursor ? { cursor } : {});
      pages.push(page.sessions.map((s) => s.sessionId));
      assert.ok(page.sessions.every((s) => s.updatedAt));
      cursor = page.nextCursor;
    } while (cursor);
    assert.deepEqual(pages.map((p) => p.length), [2, 2, 1]);
    assert.deepEqual(pages.flat(), created.map((c) => c.sessionId).reverse());
    const onlyB = await a.request(S.list, { cwd: "/p/b" });
    assert.deepEqual(
      onlyB.sessions.map((s) => s.sessionId),
      created.filter((c) => c.cwd === "/p/b").map((c) => c.sessionId).reverse(),
    );
    assert.equal(onlyB.nextCursor, undefined);
    const error = await rejection(a.request(S.list, { cursor: "not-a-cursor" }));
    assert.equal(error.data.code, "INVALID_CURSOR");
  });
  snapshot("list", run.transcript);
});

test("list answers the title of stored sessions, inherited by a fork child, and of open ones", async () => {
  const dir = storeWithExample();
  dshJson(dir, "fork", EXAMPLE_ID, "--id", "child");
  const run = agent(dsh, ["--store", dir, "acp"]);
  await run.run(async (a) => {
    await initialize(a);
    const fresh = await a.request(S.new, { cwd: EXAMPLE_CWD, mcpServers: [] });
    const { sessions } = await a.request(S.list, {});
    const titles = Object.fromEntries(sessions.map((s) => [s.sessionId, s.title ?? null]));
    assert.deepEqual(titles, {
      [EXAMPLE_ID]: "List the project files",
      child: "List the project files",
      [fresh.sessionId]: null,
    });
  });
  snapshot("list-titles", run.transcript);
});

test("fork at the end and at an earlier turn/end stores children with their lineage", async () => {
  const dir = storeWithExample();
  const run = agent(dsh, ["--store", dir, "acp"]);
  const [atEnd, atFirst] = await run.run(async (a) => {
    await initialize(a);
    const atEnd = await a.request(S.fork, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD });
    const atFirst = await a.request(S.fork, {
      sessionId: EXAMPLE_ID,
      cwd: EXAMPLE_CWD,
      _meta: { dsh: { atSeq: 20 } },
    });
    const notEnd = await rejection(
      a.request(S.fork, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD, _meta: { dsh: { atSeq: 22 } } }),
    );
    assert.equal(notEnd.code, -32602);
    assert.equal(notEnd.data.code, "OPEN_TURN");
    const noSuch = await rejection(
      a.request(S.fork, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD, _meta: { dsh: { atSeq: 99 } } }),
    );
    assert.equal(noSuch.data.code, "INVALID_BOUNDARY");
    const missing = await rejection(a.request(S.fork, { sessionId: "no-such-session", cwd: "/x" }));
    assert.equal(missing.code, -32002);
    assert.equal(missing.data.code, "SESSION_NOT_FOUND");
    return [atEnd, atFirst];
  });
  assert.deepEqual(atEnd._meta.dsh, { parentSession: EXAMPLE_ID, seedLength: 27 });
  assert.deepEqual(atFirst._meta.dsh, { parentSession: EXAMPLE_ID, seedLength: 21 });
  for (const [child, seedLength] of [[atEnd, 27], [atFirst, 21]]) {
    const shown = dshJson(dir, "show", child.sessionId);
    assert.equal(shown.header.parentSession, EXAMPLE_ID);
    assert.equal(shown.header.seedLength, seedLength);
    assert.equal(shown.header.cwd, EXAMPLE_CWD);
  }
  snapshot("fork", run.transcript);
});

test("fork inside an open turn is OPEN_TURN in the error data, and nothing is created", async () => {
  const dir = storeWithOpenTurn();
  const before = dshJson(dir, "sessions");
  const run = agent(dsh, ["--store", dir, "acp"]);
  await run.run(async (a) => {
    await initialize(a);
    const error = await rejection(a.request(S.fork, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD }));
    assert.equal(error.code, -32602);
    assert.equal(error.data.code, "OPEN_TURN");
  });
  assert.deepEqual(dshJson(dir, "sessions"), before);
  snapshot("fork-open-turn", run.transcript);
});

/** The message chunks of `updates` as `[sessionUpdate, messageId, text]`. */
function messageChunks(updates) {
  return updates
    .map(({ update }) => update)
    .filter((u) => u.sessionUpdate.endsWith("_chunk"))
    .map((u) => [u.sessionUpdate, u.messageId, u.content.text]);
}

test("message ids: every replayed chunk has one, the same in another process and in a fork child", async () => {
  const dir = storeWithExample();
  const first = agent(dsh, ["--store", dir, "acp"]);
  const child = await first.run(async (a) => {
    await initialize(a);
    await a.request(S.load, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD, mcpServers: [] });
    const forked = await a.request(S.fork, {
      sessionId: EXAMPLE_ID,
      cwd: EXAMPLE_CWD,
      _meta: { dsh: { atSeq: 20 } },
    });
    return forked.sessionId;
  });
  const parent = messageChunks(first.updates);
  assert.ok(parent.every(([, id]) => typeof id === "string" && id.length > 0));
  assert.deepEqual(
    [...new Set(parent.map(([, id]) => id))].length,
    5,
    "a user message, two streamed steps, a user message, an answer",
  );
  const second = agent(dsh, ["--store", dir, "acp"]);
  await second.run(async (a) => {
    await initialize(a);
    await a.request(S.load, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD, mcpServers: [] });
    await a.request(S.load, { sessionId: child, cwd: EXAMPLE_CWD, mcpServers: [] });
  });
  const again = messageChunks(second.updates.filter((u) => u.sessionId === EXAMPLE_ID));
  const inherited = messageChunks(second.updates.filter((u) => u.sessionId === child));
  assert.deepEqual(again, parent, "another process shows the same ids");
  assert.deepEqual(inherited, parent.slice(0, 7), "the child shows its parent's ids for turn 1");
  snapshot("message-ids", second.transcript);
});

test("fork at a message: through an assistant message, before a user message's turn, and the errors", async () => {
  const dir = storeWithExample();
  const run = agent(dsh, ["--store", dir, "acp"]);
  const before = dshJson(dir, "sessions").length;
  const air = (fork) => ({ jetbrains: { air: { fork } } });
  const request = (meta) => ({ sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD, _meta: meta });
  const [init, through, beforeTurn] = await run.run(async (a) => {
    const init = await initialize(a);
    await a.request(S.load, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD, mcpServers: [] });
    const answer = messageChunks(run.updates).find(([kind]) => kind === "agent_message_chunk")[1];
    const through = await a.request(S.fork, request(air({ version: 1, messageId: answer })));
    const beforeTurn = await a.request(S.fork, request(air({ version: 1, messageId: "msg-user-2" })));
    const version = await rejection(a.request(S.fork, request(air({ version: 2, messageId: answer }))));
    assert.equal(version.code, -32602);
    assert.equal(version.data.code, "FORK_VERSION_UNSUPPORTED");
    assert.match(version.message, /^Unsupported jetbrains\.air\.fork version/);
    const unknown = await rejection(a.request(S.fork, request(air({ version: 1, messageId: "no-such" }))));
    assert.equal(unknown.code, -32602);
    assert.equal(unknown.data.code, "MESSAGE_NOT_FOUND");
    assert.match(unknown.message, /no-such/);
    assert.ok(unknown.message.includes(EXAMPLE_ID));
    return [init, through, beforeTurn];
  });
  assert.deepEqual(init.agentCapabilities._meta, { jetbrains: { air: { fork: { version: 1, inclusive: true } } } });
  assert.equal(through._meta.dsh.seedLength, 21);
  assert.equal(beforeTurn._meta.dsh.seedLength, 21);
  assert.deepEqual(beforeTurn._meta.dsh.prompt, [{ type: "text", text: "Thanks. What does README.md say?" }]);
  assert.equal(dshJson(dir, "sessions").length, before + 2, "two children, none for the errors");
  snapshot("fork-message", run.transcript);
});

test("resume after a crash closes the interrupted turn durably, without replay", async () => {
  const dir = storeWithOpenTurn();
  assert.equal(dshJson(dir, "show", EXAMPLE_ID).openTurn, true);
  const run = agent(dsh, ["--store", dir, "acp"]);
  await run.run(async (a) => {
    await initialize(a);
    assert.deepEqual(
      await a.request(S.resume, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD, mcpServers: [] }),
      {},
    );
    // The closed session can be forked at its end now.
    const child = await a.request(S.fork, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD });
    assert.equal(child._meta.dsh.seedLength, 24);
  });
  assert.equal(run.updates.length, 0);
  const shown = dshJson(dir, "show", EXAMPLE_ID);
  assert.equal(shown.openTurn, false);
  assert.equal(shown.lastType, "turn/end");
  assert.equal(shown.events, 24);
  snapshot("resume", run.transcript);
});

test("close disposes the session; closing it again is not found", async () => {
  const dir = store();
  const run = agent(echo, ["--store", dir]);
  const sessionId = await run.run(async (a) => {
    await initialize(a);
    const { sessionId } = await a.request(S.new, { cwd: "/work/close", mcpServers: [] });
    await a.request(S.prompt, { sessionId, prompt: [{ type: "text", text: "before close" }] });
    assert.deepEqual(await a.request(S.close, { sessionId }), {});
    // The SDK resolves a repeated close (-32002 on the wire, in the transcript).
    assert.deepEqual(await a.request(S.close, { sessionId }), {});
    const error = await rejection(a.request(S.prompt, { sessionId, prompt: [{ type: "text", text: "after" }] }));
    assert.equal(error.data.code, "SESSION_NOT_FOUND");
    return sessionId;
  });
  assert.equal(dshJson(dir, "show", sessionId).events, 6);
  snapshot("close", run.transcript);
});

test("delete removes a stored session, open or not; its fork child stays readable; a second delete is not found", async () => {
  const dir = storeWithExample();
  dshJson(dir, "fork", EXAMPLE_ID, "--id", "child");
  const run = agent(dsh, ["--store", dir, "acp"]);
  await run.run(async (a) => {
    const init = await initialize(a);
    assert.deepEqual(init.agentCapabilities.sessionCapabilities.delete, {});
    // Open in this connection: closed (written) first, then deleted.
    await a.request(S.load, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD, mcpServers: [] });
    run.transcript.length = 0; // the replay is load's snapshot
    assert.deepEqual(await a.request(S.delete, { sessionId: EXAMPLE_ID }), {});
    const { sessions } = await a.request(S.list, {});
    assert.deepEqual(sessions.map((s) => s.sessionId), ["child"]);
    // The SDK resolves a repeated delete, as a repeated close (-32002 on the wire, in the
    // transcript).
    assert.deepEqual(await a.request(S.delete, { sessionId: EXAMPLE_ID }), {});
    const gone = await rejection(a.request(S.load, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD, mcpServers: [] }));
    assert.equal(gone.data.code, "SESSION_NOT_FOUND");
    // The child, never opened, is deleted from the list alike.
    assert.deepEqual(await a.request(S.delete, { sessionId: "child" }), {});
  });
  assert.deepEqual(dshJson(dir, "sessions"), []);
  snapshot("delete", run.transcript);
});

test("the child of a deleted session loads as before", async () => {
  const dir = storeWithExample();
  dshJson(dir, "fork", EXAMPLE_ID, "--id", "child");
  const before = dshJson(dir, "history", "child");
  dshJson(dir, "delete", EXAMPLE_ID);
  const run = agent(dsh, ["--store", dir, "acp"]);
  await run.run(async (a) => {
    await initialize(a);
    await a.request(S.load, { sessionId: "child", cwd: EXAMPLE_CWD, mcpServers: [] });
  });
  assert.deepEqual(replayed(run.updates), expected(before));
});

test("a live config edit disabling the fork plugin removes session/fork without a restart", async () => {
  const dir = storeWithExample();
  const config = path.join(dir, "dsh.json");
  writeFileSync(config, JSON.stringify({ store: dir }));
  const run = agent(dsh, ["--config", config, "acp"]);
  await run.run(async (a) => {
    const forks = async () =>
      Boolean((await initialize(a)).agentCapabilities.sessionCapabilities.fork);
    assert.equal(await forks(), true);
    await a.request(S.fork, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD });
    writeFileSync(
      config,
      JSON.stringify({ store: dir, plugins: { "dsh-session-fork": { enabled: false } } }),
    );
    await until(async () => !(await forks()));
    run.transcript.length = 0; // the polls before the reload took effect are not snapshotted
    assert.equal(await forks(), false);
    const error = await rejection(a.request(S.fork, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD }));
    assert.equal(error.code, -32601);
    writeFileSync(config, JSON.stringify({ store: dir }));
    await until(forks);
    await a.request(S.fork, { sessionId: EXAMPLE_ID, cwd: EXAMPLE_CWD });
  });
  snapshot("live-config", run.transcript.slice(0, 4));
});

/** Waits for `condition` to hold, polling for up to 20 s. */
async function until(condition) {
  for (let i = 0; i < 200; i++) {
    if (await condition()) return;
    await sleep(100);
  }
  assert.fail("the config edit was not applied within 20 s");
}
