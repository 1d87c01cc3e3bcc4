"""Issue 26: `redact_memories: true` pushes a memory entry holding a secret as a redacted copy.

The push succeeds with a warning naming the entry, the store holds the redacted copy only,
this device keeps the original, and the original survives later pulls: of the redacted
version itself, and of the other device's next change to the same file.
"""

from __future__ import annotations

from pathlib import Path

from test_canary import _plaintexts

from fleet import Device, new_key

TOKEN = "ghp_Fake0123456789abcdefghijklmnopqrstu"
MEMORY = "memories/MEMORY.md"
ORIGINAL = f"likes tea\n§\nthe deploy token is {TOKEN}\n§\nlives in Oslo"


def _pair(tmp_path: Path) -> tuple[Device, Device, Path]:
    store = tmp_path / "store"
    store.mkdir()
    settings = {"backend": "local", "local_dir": str(store)}
    key = new_key()
    a, b = Device(tmp_path / "a", "a", settings, key), Device(tmp_path / "b", "b", settings, key)
    a.write("SOUL.md", "soul\n")
    assert a.roam("init").code == 0
    return a, b, store


def test_off_by_default_a_memory_secret_stops_the_push(tmp_path: Path) -> None:
    a, _b, _store = _pair(tmp_path)
    a.write(MEMORY, ORIGINAL)
    stopped = a.roam("push")
    assert stopped.code == 1 and f"{MEMORY}:3 github-token" in stopped.err


def test_a_redacted_copy_travels_and_the_original_survives_pulls(tmp_path: Path) -> None:
    a, b, store = _pair(tmp_path)
    assert a.roam("config", "set", "redact_memories", "true").code == 0
    a.write(MEMORY, ORIGINAL)
    pushed = a.roam("push")
    assert pushed.code == 0, pushed.err
    assert f"{MEMORY}: entry 2 (\"the deploy token is [REDACTED]\") pushed as a redacted copy" \
        in pushed.out
    assert TOKEN not in pushed.out + pushed.err
    everything = b"\n".join(_plaintexts(store, a.key))
    assert TOKEN.encode() not in everything
    assert b"the deploy token is [REDACTED]" in everything and b"lives in Oslo" in everything
    assert a.read(MEMORY) == ORIGINAL
    again = a.roam("push")  # the same redacted copy is not published again
    assert again.code == 0 and "nothing to push" in again.out, again.out

    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    assert b.read(MEMORY) == "likes tea\n§\nthe deploy token is [REDACTED]\n§\nlives in Oslo"
    assert a.roam("pull", "--apply").code == 0  # the redacted version, pulled back: no change
    assert a.read(MEMORY) == ORIGINAL

    b.write(MEMORY, b.read(MEMORY) + "\n§\nprefers short answers")
    assert b.roam("push").code == 0
    pulled = a.roam("pull", "--apply")
    assert pulled.code == 0, pulled.out + pulled.err
    assert a.read(MEMORY) == ORIGINAL + "\n§\nprefers short answers"
