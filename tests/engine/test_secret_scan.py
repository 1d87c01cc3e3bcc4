"""Issue 26: secret-shaped content never leaves unnoticed; credential files never leave at all.

A canary of every push rule of docs/security.md's table is planted in a shared skill file and
in config.yaml; the push stops before uploading anything and names each one; after the
files are fixed the push goes through and every object of the store, decrypted, holds no
canary. A false-positive corpus (hashes, UUIDs, base64 images, documented example keys, code)
pushes clean. One finding allowed by its fingerprint travels.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from pathlib import Path

import yaml
from test_canary import _plaintexts

from fleet import Device, new_key
from roam_core.secretscan.rules import RULES

PUSH_RULES = [rule for rule in RULES if not rule.mirror_only]
SKILL = "skills/notes/SKILL.md"


def _device(tmp_path: Path) -> tuple[Device, Path]:
    store = tmp_path / "store"
    store.mkdir()
    dev = Device(tmp_path / "a", "a", {"backend": "local", "local_dir": str(store)}, new_key())
    dev.write("SOUL.md", "the shared persona\n")
    dev.write(SKILL, "---\nname: notes\n---\nordinary skill text\n")
    assert dev.roam("init").code == 0
    return dev, store


def _secret(rule) -> str:
    start, end = next(iter(rule.secrets(rule.example, strict=True)))
    return rule.example[start:end]


def test_every_rule_stops_the_push_and_nothing_reaches_the_store(tmp_path: Path) -> None:
    dev, store = _device(tmp_path)
    body = "\n".join(f"line for {rule.name}: {rule.example}" for rule in PUSH_RULES)
    dev.write("skills/canary/SKILL.md", f"---\nname: canary\n---\n{body}\n")
    dev.write("memories/MEMORY.md",
              "user pasted GITHUB_TOKEN=ghp_Fake0123456789abcdefghijklmnopqrstu\n")
    objects_before = sorted(p for p in store.rglob("*") if p.is_file())

    stopped = dev.roam("push")
    assert stopped.code == 1, stopped.out + stopped.err
    for rule in PUSH_RULES:
        assert f" {rule.name} (" in stopped.err, (rule.name, stopped.err)
        assert _secret(rule) not in stopped.err + stopped.out, rule.name
    assert "memories/MEMORY.md:1 github-token" in stopped.err
    assert sorted(p for p in store.rglob("*") if p.is_file()) == objects_before

    dry = dev.roam("push", "--dry-run")
    assert dry.code == 1 and "secret-looking" in dry.out
    assert all(_secret(rule) not in dry.out for rule in PUSH_RULES)

    # The same canaries in config.yaml under innocent names: stripped or stopped, never sent.
    config = yaml.safe_load(dev.read("config.yaml"))
    config["notes"] = {f"n{index}": rule.example for index, rule in enumerate(PUSH_RULES)}
    config["mcp_servers"] = {"gh": {"command": "srv",
                                    "args": ["--token", "Zx81kPq2Lm0vRt7YwE3sNc"]}}
    dev.write("config.yaml", yaml.safe_dump(config))
    dev.write("skills/canary/SKILL.md", "---\nname: canary\n---\nclean now\n")
    dev.write("memories/MEMORY.md", "likes tea\n")
    pushed = dev.roam("push")
    assert pushed.code in (0, 1), pushed.err
    if pushed.code == 1:  # the projection kept something secret-looking: it said so
        assert "config.yaml:" in pushed.err
        print(pushed.err)
        del config["notes"]
        dev.write("config.yaml", yaml.safe_dump(config))
        final = dev.roam("push")
        assert final.code == 0, final.err
    everything = b"\n".join(_plaintexts(store, dev.key))
    assert b"clean now" in everything, "the decryption found nothing: it proves nothing"
    for rule in PUSH_RULES:
        assert _secret(rule).encode() not in everything, rule.name
    assert b"Zx81kPq2Lm0vRt7YwE3sNc" not in everything


def test_literal_env_values_are_findings_and_an_allowed_fingerprint_travels(
        tmp_path: Path) -> None:
    dev, store = _device(tmp_path)
    dev.write(".env", "WEATHER=qZ7vN2pLx9Rt4WmK8sHd\nTERMINAL_ENV=local\n")
    dev.write("memories/MEMORY.md", "weather key qZ7vN2pLx9Rt4WmK8sHd\nenv local\n")
    stopped = dev.roam("push", "--json")
    assert stopped.code == 1
    [finding] = json.loads(stopped.out)["secret_findings"]
    assert finding["path"] == "memories/MEMORY.md" and finding["line"] == 1
    assert "qZ7vN2pLx9Rt4WmK8sHd" not in stopped.out
    assert finding["fingerprint"] not in "qZ7vN2pLx9Rt4WmK8sHd"
    dev.write("roam/secrets-allow.yaml",
              yaml.safe_dump([{"fingerprint": finding["fingerprint"], "why": "test"}]))
    assert dev.roam("push").code == 0
    assert b"qZ7vN2pLx9Rt4WmK8sHd" in b"\n".join(_plaintexts(store, dev.key))
    # The same value in another file is a new finding.
    dev.write("skills/notes/SKILL.md", "---\nname: notes\n---\nqZ7vN2pLx9Rt4WmK8sHd\n")
    assert dev.roam("push").code == 1


def test_a_pooled_scan_stops_the_push_like_the_serial_one(tmp_path: Path, monkeypatch) -> None:
    from roam_core.secretscan import pool

    monkeypatch.setattr(pool, "POOL_MIN_BYTES", 0)  # every push large enough for the pool
    monkeypatch.setattr(pool, "usable_cores", lambda: 2)
    monkeypatch.setattr(pool, "busy_cores", lambda: 0.0)
    dev, store = _device(tmp_path)
    dev.write(".env", "WEATHER=qZ7vN2pLx9Rt4WmK8sHd\n")
    for index in range(12):
        dev.write(f"skills/s{index}/SKILL.md", f"---\nname: s{index}\n---\nplain {index}\n")
    dev.write("skills/s7/SKILL.md", "---\nname: s7\n---\nkey qZ7vN2pLx9Rt4WmK8sHd\n")
    dev.write("memories/MEMORY.md", "GITHUB_TOKEN=ghp_Fake0123456789abcdefghijklmnopqrstu\n")
    objects_before = sorted(p for p in store.rglob("*") if p.is_file())
    stopped = dev.roam("push", "--json")
    assert stopped.code == 1, stopped.err
    report = json.loads(stopped.out)
    assert [(f["path"], f["line"], f["rule"]) for f in report["secret_findings"]] == [
        ("memories/MEMORY.md", 1, "github-token"), ("skills/s7/SKILL.md", 4, "literal-secret")]
    assert "qZ7vN2pLx9Rt4WmK8sHd" not in stopped.out + stopped.err
    assert sorted(p for p in store.rglob("*") if p.is_file()) == objects_before
    dev.write("skills/s7/SKILL.md", "---\nname: s7\n---\nclean\n")
    dev.write("memories/MEMORY.md", "likes tea\n")
    assert dev.roam("push").code == 0


def test_false_positive_corpus_pushes_clean(tmp_path: Path) -> None:
    dev, _store = _device(tmp_path)
    image = base64.b64encode(bytes(range(256)) * 64).decode()
    dev.write("skills/aws/SKILL.md", (
        "---\nname: aws\n---\n# Using the AWS CLI\n"
        "The docs use `AKIAIOSFODNN7EXAMPLE` and `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`.\n"
        "```bash\nexport AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY}\n"
        "aws s3 ls --profile \"$PROFILE\"\n```\n"
        f"commit {hashlib.sha1(b'x').hexdigest()} and sha256 {hashlib.sha256(b'y').hexdigest()}\n"
        f"request id {uuid.uuid4()} / {uuid.uuid4().hex}\n"
        f"![diagram](data:image/png;base64,{image})\n"
        "```python\nclient = OpenAI(api_key=os.environ['OPENAI_API_KEY'])\n"
        "password = getpass.getpass()\ntoken_count = 1024  # max_tokens: 4096\n```\n"
        "Connect with `postgres://user:${PGPASSWORD}@db/app` or `redis://localhost:6379/0`.\n"
        "Authorization: Bearer <your-token>\napi_key: <your-api-key>\n"))
    dev.write("memories/MEMORY.md",
              "User prefers tea.\n§\nThe model anthropic/claude-sonnet-4-20250514 is default.\n"
              "§\nProject lives in ~/code/roam; run `make test` before pushing.\n")
    dev.write("skills/py/helpers.py",
              "def resolve_access_key_from_environment_variables():\n"
              "    return os.getenv('ACCESS_KEY')\n"
              "HASHES = ['d41d8cd98f00b204e9800998ecf8427e', 'e3b0c44298fc1c149afbf4c8996fb924']\n")
    pushed = dev.roam("push")
    assert pushed.code == 0, pushed.err


def test_no_change_push_scans_nothing(tmp_path: Path) -> None:
    dev, _store = _device(tmp_path)
    first = json.loads(dev.roam("push", "--json").out)
    assert first["secret_scan_files"] >= 2
    # the scan's processor time is reported beside its wall time (bench/scan_cost.py)
    assert 0 < first["secret_scan_cpu_seconds"] <= first["secret_scan_seconds"] + 0.05
    again = dev.roam("push", "--json")
    assert json.loads(again.out)["nothing_to_push"] is True
    assert json.loads(again.out)["secret_scan_files"] == 0


def test_a_credential_file_shared_on_purpose_warns_on_every_push(tmp_path: Path) -> None:
    dev, store = _device(tmp_path)
    dev.write("skills/deploy/secrets.yaml", "region: eu\n")
    assert dev.roam("push").code == 0
    assert b"region: eu" not in b"\n".join(_plaintexts(store, dev.key))
    assert dev.roam("config", "set", "never_list_exceptions",
                    "[skills/deploy/secrets.yaml]").code == 0
    first = dev.roam("push")
    assert first.code == 0 and "credential file skills/deploy/secrets.yaml" in first.out
    assert b"region: eu" in b"\n".join(_plaintexts(store, dev.key))
    dev.write("SOUL.md", "changed\n")
    assert "credential file skills/deploy/secrets.yaml" in dev.roam("push").out


def test_a_file_over_32_mib_is_scanned_past_its_32nd_mib_and_across_chunks(
        tmp_path: Path) -> None:
    from roam_core.secretscan import scan

    chunk = getattr(scan, "CHUNK", 8 << 20)  # (the code before streaming had no chunks)
    dev, store = _device(tmp_path)
    token = "ghp_Fake0123456789abcdefghijklmnopqrstu"
    line = b"an ordinary line of a long log the agent keeps\n"
    filler = line * (chunk // len(line))
    cut = chunk - 20  # the first token straddles the first chunk's end
    data = filler[:cut] + f" {token}\n".encode()
    data += line * ((34 << 20) // len(line) - data.count(b"\n"))
    data += f"again {token}\n".encode()
    assert len(data) > 34 << 20
    (dev.root / "skills/logs").mkdir(parents=True)
    (dev.root / "skills/logs/run.log").write_bytes(data)
    objects_before = sorted(p for p in store.rglob("*") if p.is_file())
    stopped = dev.roam("push", "--json")
    assert stopped.code == 1, stopped.err
    found = [(f["path"], f["line"], f["rule"]) for f in json.loads(stopped.out)["secret_findings"]]
    assert found == [("skills/logs/run.log", data[:cut].count(b"\n") + 1, "github-token"),
                     ("skills/logs/run.log", data.count(b"\n"), "github-token")]
    assert token not in stopped.out
    assert sorted(p for p in store.rglob("*") if p.is_file()) == objects_before
