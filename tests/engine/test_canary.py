"""Issue 5's canary: plant credentials everywhere a user might, push, decrypt the whole store."""

from __future__ import annotations

import json
from pathlib import Path

from fleet import Device, new_key
from roam_backend_local import LocalBackend
from roam_core import crypto
from roam_core.store.repository import Repository

CANARIES = {
    "env": "sk-proj-CANARYenv0123456789abcdefghijklmnop",
    "auth": "CANARY-auth-json-token-7f3a",
    "auth_rotated": "CANARY-auth-json-rotated-9c1d",
    "api_key": "CANARY-config-api-key-55aa",
    "token": "CANARY-config-token-66bb",
    "sk_value": "sk-CANARYvalue0123456789abcdefghijklmn",
    "home_path": "/home/alice/CANARY-private-dir",
    "profile_env": "CANARY-profile-dotenv-77cc",
}


def _plant(dev: Device) -> None:
    dev.write(".env", f"OPENAI_API_KEY={CANARIES['env']}\n")
    dev.write("auth.json", json.dumps({"pool": [{"token": CANARIES["auth"]}]}))
    dev.write("auth.json.1", json.dumps({"token": CANARIES["auth_rotated"]}))
    dev.write("profiles/work/.env", f"TOKEN={CANARIES['profile_env']}\n")
    dev.write("profiles/work/SOUL.md", "work persona\n")
    config = dev.read("config.yaml")
    dev.write("config.yaml", config + (
        "model:\n"
        "  default: big-model\n"
        f"  api_key: {CANARIES['api_key']}\n"
        "discord:\n"
        f"  token: {CANARIES['token']}\n"
        "custom_providers:\n"
        f"  - name: mine\n    key_hint: {CANARIES['sk_value']}\n"
        "paths:\n"
        f"  notes: {CANARIES['home_path']}\n"
        "tools:\n"
        f"  workdir: {CANARIES['home_path']}/x\n"
        "display:\n  skin: midnight\n"))
    dev.write("SOUL.md", "the shared persona\n")
    dev.write("memories/MEMORY.md", "likes tea\n")


def _plaintexts(store: Path, key: str) -> list[bytes]:
    repo = Repository(LocalBackend(store), crypto.Keys.derive(crypto.parse_key(key)))
    head = repo.read_head()
    found: list[bytes] = [json.dumps(head.as_json()).encode()]
    for index_key in repo.backend.list("index/"):
        for ref in repo.load_index(index_key.rpartition("/")[2]):
            found.append(repo.read_blob(ref))
    # trees on their own (format 1) and in tree packs (format 2)
    tree_ids = [key.rpartition("/")[2] for key in repo.backend.list("trees/")]
    assert tree_ids or repo.tree_places(), "no tree found: the canary would see nothing"
    for tree_id in [*tree_ids, *repo.tree_places()]:
        found.append(json.dumps(repo.load_tree(tree_id)).encode())
    for snapshot_key in repo.backend.list("snapshots/"):
        snapshot = repo.load_snapshot(snapshot_key.rpartition("/")[2])
        found.append(json.dumps(snapshot.as_json()).encode())
    return found


def test_no_planted_credential_reaches_any_object(tmp_path: Path) -> None:
    key = new_key()
    store = tmp_path / "store"
    store.mkdir()
    dev = Device(tmp_path / "a", "a", {"backend": "local", "local_dir": str(store)}, key)
    _plant(dev)
    assert dev.roam("init").code == 0
    pushed = dev.roam("push", "--json")
    assert pushed.code == 0, pushed.err
    plaintexts = _plaintexts(store, key)
    everything = b"\n".join(plaintexts)
    assert b"the shared persona" in everything, "the decryption found nothing: it proves nothing"
    assert b"big-model" in everything and b"midnight" in everything
    for name, canary in CANARIES.items():
        assert canary.encode() not in everything, f"{name} canary reached the store"
    raw = b"".join(p.read_bytes() for p in store.rglob("*") if p.is_file())
    for canary in CANARIES.values():
        assert canary.encode() not in raw
