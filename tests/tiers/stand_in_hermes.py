#!/usr/bin/env python3
"""A stand-in for `hermes sessions export --format md`, for the archive's edge cases.

The real exporter is exercised in test_tiers_hermes.py; this one exists to make the cases
real Hermes cannot be asked for on cue: an export that fails, one that hangs, and a record
of the environment and stdin roam gives its child. It reads `<HERMES_HOME>/stand-in.json`:
`{"sessions": [{"id", "ended_at", "body"}], "exit": N, "sleep": S}` and writes what the real
exporter writes: `<id>-session.md` (front matter, a fresh `exported_at`) plus manifest.jsonl.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

home = Path(os.environ["HERMES_HOME"])
spec = json.loads((home / "stand-in.json").read_text())
seen = {"argv": sys.argv[1:], "env": dict(os.environ), "stdin": sys.stdin.read(),
        "pid": os.getpid()}
(home / "stand-in-seen.json").write_text(json.dumps(seen))
if spec.get("sleep"):
    time.sleep(float(spec["sleep"]))
if spec.get("exit"):
    sys.exit(int(spec["exit"]))
out = Path(sys.argv[-1])
out.mkdir(parents=True, exist_ok=True)
stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{time.time_ns() % 10**6}Z"
for session in spec.get("sessions", []):
    path = out / f"{session['id']}-session.md"
    path.write_text(f'---\nsession_id: "{session["id"]}"\ntitle: "{session.get("title", "")}"\n'
                    f'ended_at: "{session["ended_at"]}"\nexported_at: "{stamp}"\n---\n\n'
                    f'# {session["id"]}\n\n{session["body"]}\n\n## Export verification\n\n'
                    f'- Exported at: `{stamp}`\n- SHA256 of exported body: `{stamp}`\n')
    with (out / "manifest.jsonl").open("a") as manifest:
        manifest.write(json.dumps({"session_id": session["id"], "path": str(path)}) + "\n")
print(f"Exported {len(spec.get('sessions', []))} session(s) to {out}")
