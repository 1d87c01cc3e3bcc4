"""A hostile storage provider: objects lost or damaged, and older HEADs served again.

Everything here works behind roam's back, on the storage itself (files of a local store, the
bucket through boto3, commits on the bare git repository, the memory store's dict), the way
a provider incident or an attacker with write access would.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import urllib.parse
from pathlib import Path

from campaign.harness import Store

from roam_core.testing.memory import named_store


def keys(store: Store, prefix: str) -> list[str]:
    """The object keys under `prefix`, as the backend lists them."""
    if store.kind == "memory":
        return sorted(k for k in named_store(store.settings["memory_store"]).objects
                      if k.startswith(prefix))
    if store.kind == "local":
        root = Path(store.settings["local_dir"]) / "objects"
        return sorted(p.relative_to(root).as_posix() for p in (root / prefix).rglob("*")
                      if p.is_file())
    if store.kind == "s3":
        base = f"{store.settings['s3_prefix']}/objects/"
        pages = _s3(store).get_paginator("list_objects_v2").paginate(
            Bucket=store.settings["s3_bucket"], Prefix=base + prefix)
        return sorted(item["Key"][len(base):] for page in pages
                      for item in page.get("Contents", []))
    files = _git(store, "ls-tree", "-r", "--name-only", _branch(store)).splitlines()
    return sorted(name for name in files if name.startswith(prefix))


def lose(store: Store, key: str) -> None:
    """The provider loses one object."""
    _change(store, key, None)


def damage(store: Store, key: str) -> None:
    """The provider serves one object with a byte flipped in its middle."""
    data = bytearray(read(store, key))
    data[len(data) // 2] ^= 0x01
    _change(store, key, bytes(data))


def read(store: Store, key: str) -> bytes:
    if store.kind == "memory":
        return named_store(store.settings["memory_store"]).objects[key]
    if store.kind == "local":
        return (Path(store.settings["local_dir"]) / "objects" / key).read_bytes()
    if store.kind == "s3":
        return bytes(_s3(store).get_object(Bucket=store.settings["s3_bucket"],
                                           Key=_s3_key(store, key))["Body"].read())
    return _git_bytes(store, "cat-file", "blob", f"{_branch(store)}:{key}")


def head_state(store: Store) -> object:
    """Whatever lets `replay_head` serve today's HEAD again later."""
    if store.kind == "memory":
        return named_store(store.settings["memory_store"]).refs["HEAD"]
    if store.kind == "local":
        return (Path(store.settings["local_dir"]) / "refs" / "HEAD").read_bytes()
    if store.kind == "s3":
        return _s3(store).get_object(Bucket=store.settings["s3_bucket"],
                                     Key=f"{store.settings['s3_prefix']}/refs/HEAD")["Body"].read()
    return _git(store, "rev-parse", _branch(store))


def replay_head(store: Store, saved: object) -> None:
    """The provider serves an older, authentic HEAD (as `head_state` saw it) again."""
    if store.kind == "memory":
        memory = named_store(store.settings["memory_store"])
        with memory.lock:
            data, _version = saved  # type: ignore[misc]
            memory.refs["HEAD"] = (data, memory.refs["HEAD"][1] + 1)
    elif store.kind == "local":
        (Path(store.settings["local_dir"]) / "refs" / "HEAD").write_bytes(saved)  # type: ignore[arg-type]
    elif store.kind == "s3":
        _s3(store).put_object(Bucket=store.settings["s3_bucket"],
                              Key=f"{store.settings['s3_prefix']}/refs/HEAD", Body=saved)
    else:
        # keep the objects the newer commits added (only HEAD goes back), as a replaying
        # provider that does not want to be caught would
        tip = _git(store, "rev-parse", _branch(store))
        old_head = _git(store, "rev-parse", f"{saved}:.roam/refs/HEAD")
        _commit(store, tip, {".roam/refs/HEAD": old_head})


def damage_head(store: Store) -> None:
    """The provider serves HEAD with its last byte flipped."""
    if store.kind == "git":
        tip = _git(store, "rev-parse", _branch(store))
        data = bytearray(_git_bytes(store, "cat-file", "blob", f"{tip}:.roam/refs/HEAD"))
        data[-1] ^= 0x01
        blob = _git(store, "hash-object", "-w", "--stdin", data=bytes(data))
        _commit(store, tip, {".roam/refs/HEAD": blob})
        return
    saved = head_state(store)
    if store.kind == "memory":
        data, version = saved  # type: ignore[misc]
        flipped = bytearray(data)
        flipped[-1] ^= 0x01
        replay_head(store, (bytes(flipped), version))
        return
    flipped = bytearray(saved)  # type: ignore[arg-type]
    flipped[-1] ^= 0x01
    replay_head(store, bytes(flipped))


def drop_head(store: Store) -> None:
    """The provider loses HEAD itself."""
    if store.kind == "memory":
        named_store(store.settings["memory_store"]).refs.pop("HEAD")
    elif store.kind == "local":
        (Path(store.settings["local_dir"]) / "refs" / "HEAD").unlink()
    elif store.kind == "s3":
        _s3(store).delete_object(Bucket=store.settings["s3_bucket"],
                                 Key=f"{store.settings['s3_prefix']}/refs/HEAD")
    else:
        _commit(store, _git(store, "rev-parse", _branch(store)), {".roam/refs/HEAD": None})


# -- per backend ----------------------------------------------------------------------------

def _change(store: Store, key: str, data: bytes | None) -> None:
    if store.kind == "memory":
        objects = named_store(store.settings["memory_store"]).objects
        if data is None:
            objects.pop(key)
        else:
            objects[key] = data
    elif store.kind == "local":
        path = Path(store.settings["local_dir"]) / "objects" / key
        path.unlink()
        if data is not None:
            path.write_bytes(data)
    elif store.kind == "s3":
        client, bucket = _s3(store), store.settings["s3_bucket"]
        if data is None:
            client.delete_object(Bucket=bucket, Key=_s3_key(store, key))
        else:
            client.put_object(Bucket=bucket, Key=_s3_key(store, key), Body=data)
    else:
        blob = None if data is None else _git(store, "hash-object", "-w", "--stdin", data=data)
        _commit(store, _git(store, "rev-parse", _branch(store)), {key: blob})


def _s3(store: Store):  # type: ignore[no-untyped-def]
    import boto3

    return boto3.client("s3", endpoint_url=store.settings["s3_endpoint_url"],
                        region_name=store.settings["s3_region"],
                        aws_access_key_id=store.secrets["ROAM_S3_ACCESS_KEY_ID"],
                        aws_secret_access_key=store.secrets["ROAM_S3_SECRET_ACCESS_KEY"])


def _s3_key(store: Store, key: str) -> str:
    return f"{store.settings['s3_prefix']}/objects/{key}"


def _repo(store: Store) -> Path:
    return Path(urllib.parse.unquote(urllib.parse.urlparse(store.settings["git_remote"]).path))


def _git(store: Store, *args: str, data: bytes | None = None,
         env: dict[str, str] | None = None) -> str:
    return _git_bytes(store, *args, data=data, env=env).decode().strip()


def _git_bytes(store: Store, *args: str, data: bytes | None = None,
               env: dict[str, str] | None = None) -> bytes:
    return subprocess.run(["git", f"--git-dir={_repo(store)}", *args], input=data, check=True,
                          capture_output=True, timeout=60,
                          env={**os.environ, **(env or {})}).stdout


def _branch(store: Store) -> str:
    return _git(store, "for-each-ref", "--format=%(refname)", "refs/heads/").splitlines()[0]


def _commit(store: Store, parent: str, changes: dict[str, str | None]) -> None:
    """A new commit on the branch: `parent`'s tree with `changes` (path → blob, None: removed)."""
    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index"), "GIT_AUTHOR_NAME": "provider",
               "GIT_AUTHOR_EMAIL": "p@example.invalid", "GIT_COMMITTER_NAME": "provider",
               "GIT_COMMITTER_EMAIL": "p@example.invalid"}
        _git(store, "read-tree", parent, env=env)
        # index-info needs no work tree (a bare repository has none): mode 0 removes a path
        zero = "0" * 40
        lines = "".join(f"0 {zero}\t{path}\n" if blob is None else f"100644 {blob}\t{path}\n"
                        for path, blob in changes.items())
        _git(store, "update-index", "--index-info", data=lines.encode(), env=env)
        tree = _git(store, "write-tree", env=env)
        commit = _git(store, "commit-tree", tree, "-p", parent, "-m", "provider", env=env)
        _git(store, "update-ref", _branch(store), commit)
