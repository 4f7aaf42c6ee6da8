"""Differential cases: mutants of the rc.8 corpus sessions (one change each, seqs kept dense)
with dsh's verdicts per target version, in the edge-cases.jsonl format, for
`DSH_MIGRATE_CASES=OUT cargo test -p dsh-session --test migrate_cases -- --ignored`.
ORACLE=<temp copy of shared/tools/dsh-formats after setup.sh> SHARED=<shared> [SEED=1] [PER_FILE=3]
[SOURCE=rc8|v1|v2|v3|cases: the rc.8 files, the converted corpus files of that version, or
the inputs of edge-cases.jsonl]
[CHANGES=1: changes per mutant]
python3 gen_mutants.py OUT. Not committed output: it is large and random."""
import json, os, random, shutil, subprocess, sys, tempfile, copy
ORACLE = os.environ["ORACLE"]; SHARED = os.environ["SHARED"]
rng = random.Random(int(os.environ.get("SEED", "1"))); PER_FILE = int(os.environ.get("PER_FILE", "3"))
HERE = os.path.dirname(os.path.abspath(__file__)); WORK = tempfile.mkdtemp()
shutil.copy(os.path.join(HERE, "edges.mjs"), ORACLE)

def expand(rows):
    out = []
    for r in rows:
        t = r.get("type")
        if t in ("text-chunks", "reasoning-chunks", "tool-call-chunks"):
            d = r["data"]; members = d["args"] if t == "tool-call-chunks" else d["texts"]; time = r["time0"]
            for i, m in enumerate(members):
                if i > 0: time += d["dt"][i - 1]
                if t == "tool-call-chunks":
                    c = {"type": "tool-call-delta", "index": d["index"], "id": d["id"]}
                    if "name" in d: c["name"] = d["name"]
                    c["argumentsDelta"] = m
                else:
                    c = {"type": "text-delta" if t == "text-chunks" else "reasoning-delta", "index": d["index"], "text": m}
                out.append({"type": "assistant/chunk", "seq": r["seq0"] + i, "time": time, "data": {"turn": d["turn"], "step": d["step"], "chunk": c}})
        else:
            out.append(r)
    return out

def renumber(events, removed_at=None, inserted_at=None):
    # keep seqs dense; references are left as they were (a mutation may break them on purpose)
    for i, e in enumerate(events): e["seq"] = i
    return events

def leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items(): yield from leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value): yield from leaves(v, path + (i,))
    else:
        yield path, value

def set_at(value, path, new):
    for p in path[:-1]: value = value[p]
    value[path[-1]] = new

TYPES = ["turn/start", "turn/end", "step/start", "step/end", "user/message", "assistant/message",
         "tool/result", "tool/call", "session/end-seed", "request/header", "x/unknown"]

def mutate_header(header):
    header = copy.deepcopy(header); key = rng.choice(list(header) + ["seedLength", "isSeeded", "origin", "zz"])
    choice = rng.choice(["drop", "set"])
    if choice == "drop": header.pop(key, None)
    else: header[key] = rng.choice(["", "code", "subagent", 0, 1, 3, -1, True, None, "/abs", "rel"])
    return header

def mutate(events):
    events = copy.deepcopy(events)
    kind = rng.choice(["drop", "swap", "leaf", "member", "extra", "dup", "envelope", "type"])
    i = rng.randrange(len(events))
    if kind == "drop": del events[i]
    elif kind == "swap" and i + 1 < len(events): events[i], events[i + 1] = events[i + 1], events[i]
    elif kind == "dup": events.insert(i, copy.deepcopy(events[i]))
    elif kind == "leaf":
        ls = [p for p, _ in leaves(events[i]["data"])]
        if ls: set_at(events[i]["data"], rng.choice(ls), rng.choice(["", 0, -1, None, True, "x", 7]))
    elif kind == "member":
        d = events[i]["data"]
        if isinstance(d, dict) and d: del d[rng.choice(list(d))]
    elif kind == "extra" and isinstance(events[i].get("data"), dict): events[i]["data"]["zz"] = 1
    elif kind == "envelope":
        e = events[i]; key = rng.choice(["surfaceOp", "sourceEventSeqs", "ignorable", "time", "zz"])
        e[key] = rng.choice(["append", {"op": "replace", "start": 0, "end": max(i - 1, 0)}, [0], [[0, max(i - 1, 0)]],
                             [], True, False, None, 1.5, -3])
        if rng.random() < 0.3: e.pop(key, None)
    elif kind == "type": events[i]["type"] = rng.choice(TYPES)
    return kind, renumber(events)

SOURCE = os.environ.get("SOURCE", "rc8")
if SOURCE in ("rc8", "cases"):
    folder = os.path.join(SHARED, "corpus/dsh-rc8"); suffix = ".jsonl"; version = 0
else:
    folder = os.path.join(SHARED, "corpus/dsh-formats/files"); suffix = f".session.{SOURCE}.jsonl"; version = int(SOURCE[1:])
def sources():
    if SOURCE == "cases":
        for line in open(os.path.join(HERE, "edge-cases.jsonl")):
            case = json.loads(line)
            yield case["name"], case["header"], case["events"]
        return
    for name in sorted(os.listdir(folder)):
        if not name.endswith(suffix): continue
        text = open(os.path.join(folder, name)).read().replace('"tools":"{{tools}}"', '"tools":[]')
        lines = [l for l in text.split("\n") if l]
        yield name, json.loads(lines[0]), expand([json.loads(l) for l in lines[1:]])

out = []
for name, header, events in sources():
    if not events: continue
    for n in range(PER_FILE):
        kind, mutant = mutate(events)
        for _ in range(int(os.environ.get("CHANGES", "1")) - 1):
            if not mutant:
                break
            more, mutant = mutate(mutant)
            kind += "+" + more
        mutant_header = header
        if rng.random() < 0.15:
            kind, mutant, mutant_header = "header", events, mutate_header(header)
        path = os.path.join(WORK, f"{name}.{n}.jsonl")
        open(path, "w").write("\n".join(json.dumps(x, separators=(",", ":"), ensure_ascii=False) for x in [mutant_header] + mutant) + "\n")
        expect = {}
        stored = mutant_header.get("version")
        base = header.get("version") if isinstance(header.get("version"), int) else version
        stored = stored if isinstance(stored, int) and not isinstance(stored, bool) and 0 <= stored <= 3 else base
        for t in [t for t in (1, 2, 3) if t > stored or (t == stored and t >= 2)]:
            r = subprocess.run(["node", os.path.join(ORACLE, "edges.mjs"), path, str(t)], capture_output=True, text=True, cwd=ORACLE)
            expect[str(t)] = json.loads(r.stdout)
        out.append({"name": f"{name}#{n}:{kind}", "header": mutant_header, "events": mutant, "expect": expect})
    print(name, file=sys.stderr)
with open(sys.argv[1], "w") as f:
    for o in out: f.write(json.dumps(o, separators=(",", ":"), ensure_ascii=False) + "\n")
