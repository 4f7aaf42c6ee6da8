// edges.mjs FILE TARGET — decode FILE with its version's codec (strict), run the edges up to
// TARGET stage by stage, then (targets 2 and 3) the checks dsh's restore runs on the result
// (restoreReleasedV2Artifact / restoreReleasedV3Artifact), print {"header":..,"events":[..]} or {"error":..}.
import { readFileSync } from 'node:fs'
import { SessionFormatEventCollector, SessionFormatUnsupportedMigrationError, inspectSessionFormatVersion } from '@deepseek-ai/dsh-session-format'
import { releasedV0SessionFormatCodec, releasedV1SessionFormatCodec, sessionFormatV0ToV1 } from '@deepseek-ai/dsh-session-format-v0-to-v1'
import { releasedV2SessionFormatCodec, sessionFormatV1ToV2, restoreReleasedV2Artifact } from '@deepseek-ai/dsh-session-format-v1-to-v2'
import { releasedV3SessionFormatCodec, sessionFormatV2ToV3, restoreReleasedV3Artifact } from '@deepseek-ai/dsh-session-format-v2-to-v3'
const [file, t] = process.argv.slice(2)
const target = Number(t)
const codecs = [releasedV0SessionFormatCodec, releasedV1SessionFormatCodec, releasedV2SessionFormatCodec, releasedV3SessionFormatCodec]
const migrations = [sessionFormatV0ToV1, sessionFormatV1ToV2, sessionFormatV2ToV3]
function refusal(m, e, subject = 'Session') {
  if (e instanceof SessionFormatUnsupportedMigrationError) return e
  return new SessionFormatUnsupportedMigrationError(`${m.name} refuses this format v${m.fromVersion} ${subject}: ${e.message}`)
}
const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l !== '')
const headerValue = JSON.parse(lines[0])
try {
  const v = inspectSessionFormatVersion(headerValue)
  const dec = codecs[v].createDecoder(headerValue, 'strict')
  // Every edge's header first, as the chain does (readHeader / createStream).
  const headers = [dec.header]
  for (let from = v; from < target; from++) {
    const m = migrations[from]
    let th
    try { th = m.migrateHeader(headers.at(-1)); m.validateTargetHeader(th) } catch (e) { throw refusal(m, e, 'Session header') }
    headers.push(th)
  }
  // The stages chained as CompiledSessionFormatMigrationStream chains them: each decoded row
  // goes through every stage before the next row is decoded.
  const collector = new SessionFormatEventCollector()
  const stages = []
  let stageCut = dec.headerInheritedEventCount
  for (let from = v; from < target; from++) {
    const m = migrations[from]
    let stage
    try {
      stage = m.createStage({ sourceHeader: headers[from - v], targetHeader: headers[from - v + 1],
        sourceInheritedEventCount: stageCut, sourceKind: from === v ? 'decoded' : 'transformed' })
    } catch (e) { throw refusal(m, e) }
    // The next stage's source cut is this one's predeclared target cut (the published v1->v2
    // stage declares none; the v2->v3 stage then compares nothing).
    stageCut = stage.headerInheritedEventCount
    stages.push({ m, stage })
  }
  const contexts = []
  let downstream = collector
  for (const { m, stage } of [...stages].reverse()) {
    const output = downstream
    const ctx = {
      emitEvent(e) { try { stage.transformEvent(e, output) } catch (err) { throw refusal(m, err) } },
      emitRun(r) { try { stage.transformRun(r, output) } catch (err) { throw refusal(m, err) } },
      finish() { try { return stage.finish(output) } catch (err) { throw refusal(m, err) } },
    }
    contexts.unshift(ctx)
    downstream = ctx
  }
  for (const l of lines.slice(1)) dec.decodeRow(JSON.parse(l), downstream)
  let cut = dec.finish(downstream)
  for (const ctx of contexts) cut = ctx.finish()
  const header = headers.at(-1)
  const events = collector.values
  if (target === 2) restoreReleasedV2Artifact({ header, inheritedEventCount: cut, events }, undefined)
  if (target === 3) restoreReleasedV3Artifact({ header, inheritedEventCount: cut, events }, undefined)
  const enc = target >= 2 ? codecs[target] : null
  const h = enc ? enc.encodeHeader(header, cut) : { ...headerValue, version: target }
  const rows = enc ? events.map((e) => enc.encodeEvent(e)) : events
  console.log(JSON.stringify({ header: h, events: rows }))
} catch (e) {
  console.log(JSON.stringify({ error: e.message, class: e.name }))
}
