"""A push's compact records (issue 22): what comes back out is exactly what went in.

`Outgoing` holds the files a push sends as columns and makes each record afresh when read;
`NewManifest` holds the files sent as rows and makes each entry afresh. Both must answer as
the objects they replace would: the same fields, in the same order, whatever does not fit
the columns kept whole.
"""

from __future__ import annotations

import hashlib

from roam_core.engine.outgoing import NewManifest, Outgoing
from roam_core.engine.scan import LocalFile
from roam_core.store.manifest import FileEntry

HOME = "/home/user/.hermes/"


def _hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _files() -> list[LocalFile]:
    plain = [LocalFile(f"skills/s{n}/SKILL.md", HOME, 100 + n, 0o644,
                       [100 + n, 1_700_000_000_000_000_000 + n, 2**40 + n, 7 + n])
             for n in range(5)]
    config = LocalFile("config.yaml", HOME, 10, 0o600, [10, 1, 2, 3], is_config=True)
    archived = LocalFile("archive/sessions/desk/a.jsonl", "/tmp/staged/a.jsonl", 5, 0o644,
                         [5, 1, 2, 3])
    known = LocalFile("memories/MEMORY.md", HOME, 9, 0o644, [9, 1, 2, 3], cached=_hex("m"))
    huge_inode = LocalFile("notes.md", HOME, 3, 0o644, [3, 1, 2**64 - 1, 3])
    return [config, *plain[:2], archived, known, huge_inode, *plain[2:]]


def test_outgoing_gives_back_every_record_in_order() -> None:
    files = _files()
    outgoing = Outgoing(files)
    assert len(outgoing) == len(files)
    for original, again in zip(files, outgoing, strict=True):
        assert (again.rel, again.location, again.size, again.mode, again.signature,
                again.is_config) == (original.rel, original.location, original.size,
                                     original.mode, original.signature, original.is_config)
    assert outgoing[-1].rel == files[-1].rel
    # the scan reads the plain files (not the config's projection), in order
    plain = outgoing.plain()
    assert list(plain) == [(f.rel, f.location, f.size) for f in files if not f.is_config]
    assert plain[len(plain) - 1] == (files[-1].rel, files[-1].location, files[-1].size)


def test_outgoing_keeps_what_packing_gave() -> None:
    files = _files()
    outgoing = Outgoing(files)
    given = {}
    for index, item in enumerate(outgoing):
        if index == 2:
            continue  # vanished before it was read: no result
        blobs = (_hex(f"b{index}"),) if index % 3 else (_hex(f"b{index}"), "not-hex-id")
        given[item.rel] = (_hex(item.rel), item.size + 1, blobs, item.mode)
        outgoing.packed(index, *given[item.rel][:3])
    results = [(rel, sha, size, blobs, mode) for rel, sha, size, blobs, mode in
               outgoing.results()]
    assert results == [(rel, *values) for rel, values in given.items()]


def _entry(rel: str, blobs: int = 1, scope: str = "shared") -> FileEntry:
    refs = tuple((_hex(f"{rel}{n}"), f"packs/ab/{_hex(rel)}", 17 * n, 5000 + n)
                 for n in range(blobs))
    return FileEntry(rel, 123, 0o644, _hex(rel), scope, refs)


def test_a_new_manifest_answers_as_the_dictionary_it_replaces() -> None:
    kept = {"a/kept.md": _entry("a/kept.md"), "z/carried.md": _entry("z/carried.md")}
    expected = dict(kept)
    new = NewManifest(dict(kept))
    sent = [_entry("b/one.md"), _entry("b/two.md", blobs=3), _entry("c/three.md"),
            _entry("c/four.md")]  # out of path order: found all the same
    for entry in sent:
        new.add(entry)
        expected[entry.path] = entry
    assert len(new) == len(expected)
    assert set(new) == set(expected)
    assert all(new[rel] == entry for rel, entry in expected.items())
    assert dict(new.items()) == expected
    assert "b/one.md" in new and "b/none.md" not in new and 3 not in new
    assert new.get("b/none.md") is None
    assert new["a/kept.md"] is kept["a/kept.md"]  # the reference's objects, as they were


def test_a_new_manifest_in_path_order_searches_without_a_table() -> None:
    new = NewManifest({})
    names = [f"skills/s{n:03d}/SKILL.md" for n in range(200)]
    for rel in names:
        new.add(_entry(rel))
    assert new._index is None
    assert [new[rel].path for rel in names] == names
    assert list(new) == names
    assert "skills/s200/SKILL.md" not in new
