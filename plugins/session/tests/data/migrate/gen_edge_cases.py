"""Regenerates edge-cases.jsonl (run from this folder): ORACLE=<a temp copy of
shared/tools/dsh-formats after its setup.sh> python3 gen_edge_cases.py. Each case is written to
$WORK (default: a temp dir) and migrated by dsh's own edges through edges.mjs (copied into
$ORACLE), per target version."""
import json, subprocess, copy, sys, os, shutil, tempfile
ORACLE = os.environ["ORACLE"]
WORK = os.environ.get("WORK") or tempfile.mkdtemp()
HERE = os.path.dirname(os.path.abspath(__file__))
shutil.copy(os.path.join(HERE, "edges.mjs"), ORACLE)
def ev(t,data,**kw):
    d={"type":t,"seq":None,"time":None,"data":data}; d.update(kw); return d
SRC={"kind":"model","provider":"p","model":"m"}
def hdr(system="A", reason="initial", tools=[] , **extra):
    h={"config":{"provider":"p","model":"m"}}
    if system is not None: h["system"]=system
    if tools is not None: h["tools"]=tools
    h.update(extra)
    return {"header":h,"reason":reason}
def user(i,text="hi",source=None): return ev("user/message",{"id":i,"role":"user","content":[{"type":"text","text":text}],"source":source or {"kind":"user"}},surfaceOp="append")
def chunk(turn,step,c): return ev("assistant/chunk",{"turn":turn,"step":step,"chunk":c})
def text(t,i=0): return {"type":"text-delta","index":i,"text":t}
def amsg(turn,step,i,text,sources=None):
    e=ev("assistant/message",{"turn":turn,"step":step,"message":{"id":i,"role":"assistant","content":[{"type":"text","text":text}],"source":SRC}},surfaceOp="append")
    if sources is not None: e["sourceEventSeqs"]=sources
    return e
def head(turn=1): return [ev("turn/start",{"turn":turn}), ev("step/start",{"turn":turn,"step":1}), ev("request/header",hdr())]
def tail(turn=1,kind="completed"): return [ev("step/end",{"turn":turn,"step":1}), ev("turn/end",{"turn":turn,"reason":{"kind":kind}})]
H0={"type":"session","version":0,"id":"s1","createdAt":5,"cwd":"/w","delegationDepth":0}
def number(events, t0=10):
    out=[]
    for i,e in enumerate(events):
        e=copy.deepcopy(e); e["seq"]=i
        if e["time"] is None: e["time"]=t0+i
        # move seq/time to the front order
        out.append({k:e[k] for k in ["type","seq","time","data"]} | {k:v for k,v in e.items() if k not in ("type","seq","time","data")})
    return out
cases=[]
def case(name, events, header=None, targets=None, raw=False):
    h=copy.deepcopy(header or H0)
    evs=events if raw else number(events)
    v=h.get("version",0) if isinstance(h.get("version"),int) else 0
    cases.append((name,h,evs,targets or [t for t in (1,2,3) if t>v or (t==v and t>=2)]))

# --- v0 -> v1
ok_turn = head()+[user("u1"), chunk(1,1,text("He")), chunk(1,1,text("llo")), chunk(1,1,{"type":"finish","reason":{"kind":"stop"}}), amsg(1,1,"a1","Hello",[4,5,6])]+tail()
case("plain-turn", ok_turn)
case("header-delta", head()+[ev("request/header-delta",{"x":1})]+tail())
case("mode-set", head()+[ev("mode/set",{"mode":"x"})]+tail())
case("fallback-reason", [ev("turn/start",{"turn":1}),ev("step/start",{"turn":1,"step":1}),ev("request/header",hdr(reason="fallback"))]+tail())
case("descriptor-v2", [ev("subagent/descriptor",{"mode":"one-shot","version":2,"provider":"p"})]+ok_turn)
case("unknown-ignorable", head()+[ev("x/unknown",{},ignorable=True)]+tail())
case("tools-placeholder", [ev("turn/start",{"turn":1}),ev("step/start",{"turn":1,"step":1}),ev("request/header",hdr(tools="{{tools}}"))]+tail())
case("tools-not-object", [ev("turn/start",{"turn":1}),ev("step/start",{"turn":1,"step":1}),ev("request/header",hdr(tools=["x"]))]+tail())
case("tools-kept", [ev("turn/start",{"turn":1}),ev("step/start",{"turn":1,"step":1}),ev("request/header",hdr(tools=[{"name":"bash","description":"d","parameters":{}}],adapterDefaults={}))]+tail())
case("no-delegation-depth", ok_turn, header={k:v for k,v in H0.items() if k!="delegationDepth"})
case("no-version", ok_turn, header={k:v for k,v in H0.items() if k!="version"})
case("relative-cwd", ok_turn, header=H0|{"cwd":"w"})
case("extra-header-member", ok_turn, header=H0|{"title":"x"})
case("steering", head()+[ev("steering/message",{"turn":1,"content":[{"type":"text","text":"s"}],"source":{"kind":"user"}},surfaceOp="append")]+tail())
case("turn-start-trigger", [ev("turn/start",{"turn":1,"trigger":{"kind":"user"}}),ev("step/start",{"turn":1,"step":1}),ev("request/header",hdr())]+tail())
case("turn-end-disposed", head()+tail(kind="disposed"))
case("turn-end-legacy-error", head()+[ev("step/end",{"turn":1,"step":1}), ev("turn/end",{"turn":1,"reason":{"kind":"error","step":1,"message":"boom"}})])
case("message-prefix", [ev("turn/start",{"turn":1}),ev("step/start",{"turn":1,"step":1}),ev("request/header",hdr(messagePrefix=[]))]+tail())
case("legacy-user-message", head()+[ev("user/message",{"content":[{"type":"text","text":"x"}],"source":{"kind":"user"}},surfaceOp="append")]+tail())
case("legacy-assistant-message", head()+[user("u1"), ev("assistant/message",{"turn":1,"step":1,"content":[{"type":"text","text":"x"}],"provenance":{"provider":"p","model":"m"}},surfaceOp="append")]+tail())
case("legacy-tool-result", head()+[user("u1"), ev("assistant/message",{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"}],"source":SRC}},surfaceOp="append"), ev("tool/call",{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{}"}), ev("tool/result",{"turn":1,"step":1,"callId":"c1","content":[{"type":"text","text":"out"}],"isError":False},surfaceOp="append")]+tail())
case("compact-legacy", head()+[user("u1"), ev("compact/start",{"turn":1}), ev("compact/end",{"turn":1})]+tail())
# --- v1 -> v2
case("partial-provenance", head()+[user("u1"), chunk(1,1,text("a")), chunk(1,1,text("b")), amsg(1,1,"a1","ab",[5])]+tail())
case("uncited-attempt", head()+[user("u1"), chunk(1,1,text("a")), amsg(1,1,"a1","a")]+tail())
case("title-cites-chunk", head()+[user("u1"), chunk(1,1,text("a")), amsg(1,1,"a1","a",[4]), ev("session/title",{"title":"t","messageSeqs":[4],"source":{"kind":"fallback"}})]+tail())
case("title-remapped", head()+[user("u1"), chunk(1,1,text("a")), chunk(1,1,text("b")), amsg(1,1,"a1","ab",[4,5]), ev("session/title",{"title":"t","messageSeqs":[3,6],"source":{"kind":"fallback"}})]+tail())
case("attempt-then-retry", head()+[user("u1"), chunk(1,1,text("a")), chunk(1,1,{"type":"usage","usage":{"inputTokens":1,"outputTokens":1}}), ev("step/end",{"turn":1,"step":1}), ev("step/start",{"turn":1,"step":2}), chunk(1,2,text("b")), amsg(1,2,"a2","b",[8]), ev("step/end",{"turn":1,"step":2}), ev("turn/end",{"turn":1,"reason":{"kind":"completed"}})])
case("tool-call-chunks", head()+[user("u1"), chunk(1,1,{"type":"tool-call-delta","index":0,"id":"c1","name":"bash","argumentsDelta":"{\"a\""}), chunk(1,1,{"type":"tool-call-delta","index":0,"id":"c1","argumentsDelta":":1}"}), ev("assistant/message",{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{\"a\":1}"}],"source":SRC}},surfaceOp="append",sourceEventSeqs=[4,5])]+tail())
case("legacy-restart", [ev("turn/start",{"turn":1}), ev("step/start",{"turn":1,"step":1}), ev("request/header",hdr()), user("u1"), ev("step/end",{"turn":1,"step":1}), ev("agent/inbox/spliced",{"target":"next-turn","start":0,"inserted":[{"id":"u2","role":"user","content":[{"type":"text","text":"x"}],"source":{"kind":"user"}}]}), ev("turn/start",{"turn":2}), ev("step/start",{"turn":2,"step":1}), user("u2","x"), ev("step/end",{"turn":2,"step":1}), ev("turn/end",{"turn":2,"reason":{"kind":"completed"}})])
case("unclosed-turn", [ev("turn/start",{"turn":1}), ev("step/start",{"turn":1,"step":1}), ev("request/header",hdr()), user("u1"), ev("step/end",{"turn":1,"step":1}), ev("turn/start",{"turn":2})])
# (a legacy goal message needs a full goal snapshot: not covered here)
#case("goal-legacy", head()+[user("u1"), user("g1","goal text",{"kind":"goal","change":{"kind":"goal","version":1,"operation":"create","goal":{"id":"g","objective":"o"}}})]+tail())
case("seed-splits-attempt", head()+[user("u1"), chunk(1,1,text("a")), chunk(1,1,text("b")), amsg(1,1,"a1","ab",[4,5])]+tail(), header=H0|{"parentSession":"p","seedLength":5})
case("seeded-fork", ok_turn+[ev("session/end-seed",{})]+head(2)[0:2]+[user("u2"), ev("step/end",{"turn":2,"step":1}), ev("turn/end",{"turn":2,"reason":{"kind":"completed"}})], header=H0|{"parentSession":"p","seedLength":len(ok_turn)})
# --- v2 -> v3
case("surface-before-step", [ev("turn/start",{"turn":1}), user("u1"), ev("step/start",{"turn":1,"step":1}), ev("request/header",hdr())]+tail())
case("preset-code", ok_turn[:4]+[ev("agent-preset/selected",{"agentPreset":"code"})]+tail(), header=H0|{"agentPreset":"code"})
case("code-dispatch", head()+[user("u1"), ev("tool/code-dispatch-start",{"rootCallId":"r","parentCallId":"p","subCallId":"s","name":"n","arguments":{}}), ev("tool/code-dispatch",{"rootCallId":"r","parentCallId":"p","subCallId":"s","name":"n","arguments":{},"isError":False,"content":[{"type":"text","text":"o"}]})]+tail())
case("tools-code-mode-source", head()+[user("u1","x",{"kind":"plugin","plugin":"tools-code-mode"})]+tail())
case("prompt-outside-step", head()+[user("u1"), ev("step/end",{"turn":1,"step":1}), ev("request/header",hdr(system="B",reason="change")), ev("turn/end",{"turn":1,"reason":{"kind":"completed"}})])
case("prompt-changes", head()+[user("u1"), ev("request/header",hdr(system="B",reason="change")), ev("request/header",hdr(system="B",reason="change")), ev("request/header",hdr(system=None,reason="change"))]+tail())
case("video-content", head()+[ev("user/message",{"id":"u1","role":"user","content":[{"type":"video","url":"x"}],"source":{"kind":"user"}},surfaceOp="append")]+tail())
case("tool-error-not-flagged", head()+[user("u1"), ev("assistant/message",{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"}],"source":SRC}},surfaceOp="append"), ev("tool/call",{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{}"}), ev("tool/result",{"turn":1,"step":1,"message":{"id":"r1","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[],"isError":False}],"source":{"kind":"tool","callId":"c1"}},"error":{"name":"E","code":"X"}},surfaceOp="append")]+tail())
case("replace-and-ranges", head()+[user("u1"), user("u2"), user("u3"), ev("user/message",{"id":"u4","role":"user","content":[{"type":"text","text":"sum"}],"source":{"kind":"user"}},surfaceOp={"op":"replace","start":3,"end":5},sourceEventSeqs=[[3,5]])]+tail())
case("seq-gap", [e|{"seq":(e["seq"]+1 if e["seq"]>=2 else e["seq"])} for e in number(ok_turn)], raw=True)
# --- valid under dsh's restore rules too
case("title-remapped-valid", head()+[user("u1"), chunk(1,1,text("a")), chunk(1,1,text("b")), amsg(1,1,"a1","ab",[4,5]), ev("session/title",{"title":"t","messageSeqs":[3],"source":{"kind":"fallback"}})]+tail())
case("tool-call-chunks-valid", head()+[user("u1"), chunk(1,1,{"type":"tool-call-delta","index":0,"id":"c1","name":"bash","argumentsDelta":"{\"a\""}), chunk(1,1,{"type":"tool-call-delta","index":0,"id":"c1","argumentsDelta":":1}"}), ev("assistant/message",{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{\"a\":1}"}],"source":SRC}},surfaceOp="append",sourceEventSeqs=[4,5]), ev("tool/call",{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{\"a\":1}"}), ev("tool/result",{"turn":1,"step":1,"message":{"id":"r1","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"ok"}]}],"source":{"kind":"tool","callId":"c1"}}},surfaceOp="append"), ev("tool/result",{"turn":1,"step":1,"message":{"id":"r2","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"short"}]}],"source":{"kind":"tool","callId":"c1"}}},surfaceOp={"op":"replace","start":8,"end":8},sourceEventSeqs=[8])]+tail())
case("code-dispatch-valid", head()+[user("u1"), ev("tool/code-dispatch-start",{"rootCallId":"r","parentCallId":"r","subCallId":"s","name":"n","arguments":{"x":1}}), ev("tool/code-dispatch",{"rootCallId":"r","parentCallId":"r","subCallId":"s","name":"n","arguments":{"x":1},"isError":False,"content":[{"type":"text","text":"o"}]})]+tail())
case("compact-legacy-error", head()+[user("u1"), ev("compact/start",{"turn":1}), ev("compact/end",{"turn":1,"error":"failed"})]+tail())
case("compaction-crosses-turn", head()+[user("u1"), ev("compaction/start",{"compactionId":"c","turn":1}), ev("step/end",{"turn":1,"step":1}), ev("turn/end",{"turn":1,"reason":{"kind":"completed"}})])
case("step-out-of-order", [ev("turn/start",{"turn":1}), ev("step/start",{"turn":1,"step":2}), ev("request/header",hdr()), user("u1"), ev("step/end",{"turn":1,"step":2}), ev("turn/end",{"turn":1,"reason":{"kind":"completed"}})])
# --- generated system ids colliding with message ids (v2 -> v3)
import hashlib
def system_id(session, seq, kind):
    identity = json.dumps(["session-format-v2-to-v3", session, seq, kind], separators=(",", ":"))
    return "v2-to-v3-system-" + hashlib.sha256(identity.encode()).hexdigest()
case("source-id-collides", [ev("turn/start",{"turn":1}), ev("step/start",{"turn":1,"step":1}), user(system_id("s1",1,"step/start")), ev("request/header",hdr())]+tail())
case("generated-id-collides", [ev("turn/start",{"turn":1}), ev("step/start",{"turn":1,"step":1}), user(system_id("s1",3,"request/header")), ev("request/header",hdr())]+tail())
# --- the chain streams: the first event any edge refuses is the one named
case("first-refusal-streams", head()+[user("u1"), chunk(1,1,text("a")), chunk(1,1,text("b")), amsg(1,1,"a1","ab",[5]), ev("tool/call",{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":{}})]+tail())
# --- payload semantics (E01 payload-validation)
goal={"id":"g","revision":1,"objective":"o","phase":"active","maxGoalRounds":3}
change={"kind":"goal/change","version":1,"operation":"create","goal":goal,"roundsStarted":0,"createdAt":1,"updatedAt":1}
state=json.dumps({"goal":goal,"roundsStarted":0,"createdAt":1,"updatedAt":1},separators=(',',':'))
case("goal-legacy-valid", head()+[user("u1"), user("g1","<goal_state>"+state+"</goal_state>",{"kind":"goal","goalId":"g","revision":1,"round":0,"change":change})]+tail())
case("goal-legacy-mismatch", head()+[user("u1"), user("g1","<goal_state>{}</goal_state>",{"kind":"goal","goalId":"g","revision":1,"round":0,"change":change})]+tail())
case("goal-source-incomplete", head()+[user("u1"), user("g1","x",{"kind":"goal","change":change})]+tail())
case("tool-call-arguments-object", head()+[user("u1"), ev("tool/call",{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":{}})]+tail())
case("tool-error-extra-member", head()+[user("u1"), ev("assistant/message",{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"}],"source":SRC}},surfaceOp="append"), ev("tool/call",{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{}"}), ev("tool/result",{"turn":1,"step":1,"message":{"id":"r1","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[],"isError":True}],"source":{"kind":"tool","callId":"c1"}},"error":{"code":"X","message":"m"}},surfaceOp="append")]+tail())
case("image-bad-media", head()+[ev("user/message",{"id":"u1","role":"user","content":[{"type":"image","attachment":{"attachmentId":"a","mediaType":"image/bmp","bytes":1,"width":1,"height":1}}],"source":{"kind":"user"}},surfaceOp="append")]+tail())
case("schedule-valid", head()+[user("u1"), ev("schedule/change",{"version":1,"operation":"create","schedule":{"id":"s","kind":"every","prompt":"p","everySeconds":300,"scheduledAt":"2026-01-31T10:00:00.000Z"}})]+tail())
case("schedule-bad-instant", head()+[user("u1"), ev("schedule/change",{"version":1,"operation":"dispatch","id":"s","acceptedAt":"2026-02-30T10:00:00.000Z"})]+tail())
case("retry-legacy-id", head()+[user("u1"), ev("llm/retry",{"turn":1,"step":1,"provider":"p","mode":"normal","policyKey":"k","retry":1,"maxRetries":3,"delayMs":10,"failure":{"message":"m","code":"c"}}), ev("llm/retry",{"turn":1,"step":1,"provider":"p","mode":"normal","policyKey":"k","retry":2,"maxRetries":3,"delayMs":10,"failure":{"message":"m","code":"c","status":503}})]+tail())
case("retry-exceeds", head()+[user("u1"), ev("llm/retry",{"retryId":"r","turn":1,"step":1,"provider":"p","mode":"normal","policyKey":"k","retry":4,"maxRetries":3,"delayMs":10,"failure":{"message":"m","code":"c"}})]+tail())
case("abort-hook", head()+[user("u1"), ev("step/end",{"turn":1,"step":1}), ev("turn/end",{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"hook","reason":"stop"}}})])
case("bad-chunk-type", head()+[user("u1"), chunk(1,1,{"type":"mystery"}), amsg(1,1,"a1","x",[4])]+tail())
case("title-llm-request", head()+[user("u1"), ev("session/title-llm-request",{"titleProvider":"p","messageSeqs":[3],"route":{"provider":"p","model":"m"},"system":"s","messages":[{"id":"m1","role":"system","content":[],"source":{"kind":"user"}}],"maxTokens":5})]+tail())
case("plugin-snapshot-source", head()+[user("u1","x",{"kind":"plugin","plugin":"sys","form":"snapshot","sections":[{"name":"a","text":"b"}]}), user("u2","y",{"kind":"plugin","plugin":"sys","form":"notice"})]+tail())
case("subagent-descriptor-continuable", [ev("subagent/descriptor",{"mode":"continuable","version":3,"provider":"p","label":"l","agentProvider":"p"})]+head()+tail())
H1={"type":"session","version":1,"id":"s1","createdAt":5,"cwd":"/w","delegationDepth":0}
case("v1-decoded", head()+[user("u1"), ev("session-log-deepseek/delivery-accepted",{"sessionId":"s1","throughSeq":3,"sessionFormatVersion":1}), chunk(1,1,text("a")), amsg(1,1,"a1","a",[5])]+tail(), header=H1)
case("v1-descriptor-v2-passes", [ev("subagent/descriptor",{"mode":"one-shot","version":2,"provider":"p"})]+head()+[user("u1")]+tail(), header=H1)
case("v1-unknown-type", head()+[user("u1"), ev("x/y",{},ignorable=True)]+tail(), header=H1)
# v2 inputs
H2={"type":"session","version":2,"id":"s2","createdAt":5,"cwd":"/w","isSeeded":False,"delegationDepth":0}
case("v2-delivery-claims-v3", head()+[user("u1"), ev("session-log-deepseek/delivery-accepted",{"sessionId":"s2","throughSeq":3,"sessionFormatVersion":3})]+tail(), header=H2)
case("v2-message-with-sources", head()+[user("u1"), ev("assistant/message",{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","content":[],"source":SRC},"stream":[]},surfaceOp="append",sourceEventSeqs=[3])]+tail(), header=H2)
case("v2-inherited-unseeded", head()+[user("u1"), ev("session/end-seed",{"inherited":True})]+tail(), header=H2)
case("v2-ptc-tag", head()+[user("u1"), ev("tool/ptc-dispatch",{"x":1})]+tail(), header=H2)

case("v2-seeded-without-marker", head()+[user("u1")]+tail(), header=H2|{"parentSession":"p","isSeeded":True})
case("v2-seeded-fork", head()+[user("u1")]+tail()+[ev("session/end-seed",{"inherited":True}), ev("turn/start",{"turn":2}), ev("step/start",{"turn":2,"step":1}), user("u2","again")]+[ev("step/end",{"turn":2,"step":1}), ev("turn/end",{"turn":2,"reason":{"kind":"completed"}})], header=H2|{"parentSession":"p","isSeeded":True})
H3={"type":"session","version":3,"id":"s3","createdAt":5,"cwd":"/w","isSeeded":False,"delegationDepth":0}
SYS={"id":"sys1","role":"system","source":{"kind":"plugin","plugin":"@deepseek-ai/dsh-system-prompt"},"content":[]}
v3_head=[ev("turn/start",{"turn":1}), ev("step/start",{"turn":1,"step":1}), ev("system/message",{"turn":1,"step":1,"message":SYS},surfaceOp="append")]
case("v3-current", v3_head+[ev("request/header",{"header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}), user("u1")]+tail(), header=H3)
case("v3-header-system", v3_head+[ev("request/header",hdr(tools=None)), user("u1")]+tail(), header=H3)
case("v3-code-dispatch-tag", v3_head+[user("u1"), ev("tool/code-dispatch-start",{"rootCallId":"r","parentCallId":"r","subCallId":"s","name":"n","arguments":{}})]+tail(), header=H3)
case("v3-empty-tools-kept", v3_head+[ev("request/header",{"header":{"config":{"provider":"p","model":"m"},"tools":[]},"reason":"initial"}), user("u1")]+tail(), header=H3)

out=[]
for name,h,evs,targets in cases:
    path=os.path.join(WORK, f"{name}.jsonl")
    open(path,"w").write("\n".join(json.dumps(x,separators=(',',':'),ensure_ascii=False) for x in [h]+evs)+"\n")
    expect={}
    for t in targets:
        r=subprocess.run(["node",os.path.join(ORACLE,"edges.mjs"),path,str(t)],capture_output=True,text=True,cwd=ORACLE)
        expect[str(t)]=json.loads(r.stdout)
    out.append({"name":name,"header":h,"events":evs,"expect":expect})
    print(name, {t:(e.get("error") or "ok") for t,e in expect.items()}, file=sys.stderr)
with open(os.path.join(HERE, "edge-cases.jsonl"),"w") as f:
    for o in out: f.write(json.dumps(o,separators=(',',':'),ensure_ascii=False)+"\n")
