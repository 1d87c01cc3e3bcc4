"""The manifest: path → file entry, and its validation against hostile input."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from roam_core.errors import IntegrityError

#: A file's content is a list of blob references: (blob id, pack key, offset, length).
BlobRef = tuple[str, str, int, int]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HEX64 = re.compile(r"[0-9a-f]{64}")
#: What a name in a tree never holds: a folder separator, a backslash, a control character.
_UNSAFE_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")
#: Names that are no segment of a path.
_DOTS = frozenset(("", ".", ".."))


def is_hex64(value: object) -> bool:
    """Whether `value` is 64 lower-case hex digits: a digest or an object id, nothing else."""
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None
MAX_PATH = 4096
#: Each file mode as one shared int (a mode read from JSON or computed is an object each).
MODES: dict[int, int] = {}


def synced_mode(mode: int) -> int:
    """What of a file's mode travels: the owner's executable bit, as git keeps it.

    Entries written before this rule may hold any 0o777 mode; they compare by this too,
    so a mode that differs only in bits roam does not sync is never a change.
    """
    return 0o755 if mode & 0o100 else 0o644
#: folders a path may pass through: a tree nests at most this deep below the root tree
MAX_FOLDERS = 64


def over_limits(paths: Iterable[str]) -> list[tuple[str, str]]:
    """The paths no reader of the format could open, each with the whole message saying why.

    One row per too-deep folder; the message names the path, so push can raise it as it is.
    """
    found: dict[str, str] = {}
    for rel in paths:
        if rel.count("/") > MAX_FOLDERS:
            top = "/".join(rel.split("/")[:MAX_FOLDERS + 1])
            found.setdefault(f"{top}/...", f"{top}/... nests deeper than {MAX_FOLDERS} folders, "
                                           "more than roam's format holds; move it or add a "
                                           "local: rule for it")
        elif len(rel) > MAX_PATH:
            found.setdefault(f"{rel[:80]}...", f"{rel[:80]}... is a path of {len(rel)} "
                                               f"characters, over the format's {MAX_PATH}; "
                                               "shorten it or add a local: rule for it")
    return sorted(found.items())


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file of a generation.

    Slotted and without the JSON it was read from (once kept to rewrite state.json fast):
    a push holds one per path of the base and of the new generation, a pull one per path
    of the remote, so every field is paid 100,000 times (issue 22).
    """

    path: str
    size: int
    mode: int
    sha256: str
    scope: str
    blobs: tuple[BlobRef, ...]

    def same_content(self, other: FileEntry | None) -> bool:
        return other is not None and other.sha256 == self.sha256 \
            and synced_mode(other.mode) == synced_mode(self.mode)

    def as_json(self) -> dict[str, Any]:
        """The entry as JSON."""
        return {"size": self.size, "mode": self.mode, "sha256": self.sha256, "scope": self.scope,
                "blobs": [list(ref) for ref in self.blobs]}

    @classmethod
    def from_json(cls, path: str, data: Mapping[str, Any], what: str) -> FileEntry:
        try:
            # pack keys and scopes repeat across thousands of entries: one string each
            raw = data["blobs"]
            if len(raw) == 1:  # most files: no generator (100,000 of them on a pull)
                first = raw[0]
                blobs: tuple[BlobRef, ...] = ((str(first[0]), sys.intern(str(first[1])),
                                               int(first[2]), int(first[3])),)
                negative = blobs[0][2] < 0 or blobs[0][3] < 0
            else:
                blobs = tuple((str(b[0]), sys.intern(str(b[1])), int(b[2]), int(b[3]))
                              for b in raw)
                negative = any(ref[2] < 0 or ref[3] < 0 for ref in blobs)
            mode = int(data["mode"])
            # a few modes repeat 100,000 times: one int object each (512 at most)
            mode = MODES.setdefault(mode, mode) if 0 <= mode <= 0o777 else mode
            entry = cls(path, int(data["size"]), mode, str(data["sha256"]),
                        sys.intern(str(data.get("scope", "shared"))), blobs)
        except (KeyError, TypeError, ValueError, IndexError, OverflowError):  # int(inf)
            raise IntegrityError(f"integrity error: {what} has a malformed entry") from None
        if entry.size < 0 or not is_hex64(entry.sha256) or entry.mode & ~0o777:
            raise IntegrityError(f"integrity error: {what} has a malformed entry for {path!r}")
        if negative:
            raise IntegrityError(f"integrity error: {what} has a malformed blob reference")
        return entry


Manifest = dict[str, FileEntry]

#: A JSON string as `canonical` writes one (`ensure_ascii=False`): the quotes and escapes.
json_string = json.encoder.encode_basestring


def node_text(entry: FileEntry) -> str:
    """The file's node in its folder's tree as the text `canonical` writes for it.

    That is `{"t": "f", **entry.as_json()}` with sorted keys and no spaces: a tree is
    written as text, not as dicts through the encoder (~0.4 s at 100,000 files, on the
    push's path; issue 22). `tests/store/test_tree_text.py` holds the two to the letter.
    """
    return file_node_text(entry.size, entry.mode, entry.sha256, entry.scope, entry.blobs)


def file_node_text(size: int, mode: int, sha256: str, scope: str,
                   blobs: Iterable[BlobRef]) -> str:
    """`node_text` from an entry's fields (a push's new rows make no entry for it)."""
    refs = ",".join([f'[{json_string(blob)},{json_string(pack)},{int(offset)},{int(length)}]'
                     for blob, pack, offset, length in blobs])
    return (f'{{"blobs":[{refs}],"mode":{int(mode)},"scope":{json_string(scope)},'
            f'"sha256":{json_string(sha256)},"size":{int(size)},"t":"f"}}')


def folder_text(tree_id: str) -> str:
    """A subfolder's node in its parent's tree, `{"t": "d", "tree": tree_id}`, as text."""
    return f'{{"t":"d","tree":{json_string(tree_id)}}}'


def tree_text(nodes: Mapping[str, str], note: str | None = None) -> bytes:
    """A tree, `{"v": 1, "entries": ...}` (and its `note`), as the bytes `canonical` writes.

    Built from each name's node text (`node_text`, `folder_text`).
    """
    entries = ",".join([f"{json_string(name)}:{nodes[name]}" for name in sorted(nodes)])
    tail = "" if note is None else f',"note":{json_string(note)}'
    return f'{{"entries":{{{entries}}}{tail},"v":1}}'.encode()


def check_path(path: str, what: str = "manifest") -> str:
    """Refuse absolute paths, `..`, empty or odd segments and control characters."""
    if (not isinstance(path, str) or not path or len(path) > MAX_PATH or path.startswith("/")
            or "\\" in path or _CONTROL.search(path)):
        raise IntegrityError(f"integrity error: {what} holds an unsafe path {path!r}")
    for part in path.split("/"):
        if part in ("", ".", ".."):
            raise IntegrityError(f"integrity error: {what} holds an unsafe path {path!r}")
    return path


def check_name(name: str, folder: str, what: str) -> None:
    """Refuse a tree entry's name that is not one safe segment of a path (`check_path`).

    A manifest whose every name passes, read from its trees, needs no check of its whole
    paths but their length: they are unique, and none is both a file and a folder, by the
    trees' shape (`flattened_manifest`).
    """
    if name in _DOTS or _UNSAFE_NAME.search(name) is not None:
        raise IntegrityError(f"integrity error: {what} holds an unsafe path {folder + name!r}")


def flattened_manifest(entries: Iterable[FileEntry], max_size: int, what: str) -> Manifest:
    """A manifest of files read from trees whose every name passed `check_name`.

    Only the lengths and sizes are left to check: checking each whole path again, and each
    path's folders against the files, was ~10% of a pull's manifest load (issue 22).
    """
    manifest: Manifest = {}
    for entry in entries:
        if len(entry.path) > MAX_PATH:
            raise IntegrityError(f"integrity error: {what} holds an unsafe path {entry.path!r}")
        _check_size(entry, max_size, what)
        manifest[entry.path] = entry
    return manifest


def _check_size(entry: FileEntry, max_size: int, what: str) -> None:
    if entry.size > max_size:
        raise IntegrityError(
            f"integrity error: {what} lists {entry.path!r} at {entry.size} bytes, over the "
            f"limit of {max_size}"
        )


def check_manifest(entries: Iterable[FileEntry], max_size: int, what: str) -> Manifest:
    """Validate a manifest from the store: safe unique paths, sizes within the limit."""
    manifest: Manifest = {}
    for entry in entries:
        check_path(entry.path, what)
        if entry.path in manifest:
            raise IntegrityError(f"integrity error: {what} lists {entry.path!r} twice")
        _check_size(entry, max_size, what)
        manifest[entry.path] = entry
    paths = set(manifest)
    for path in paths:
        parent = path.rpartition("/")[0]
        while parent:
            if parent in paths:
                raise IntegrityError(f"integrity error: {what} has {parent!r} as file and folder")
            parent = parent.rpartition("/")[0]
    return manifest
