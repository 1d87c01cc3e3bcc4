"""The store's lease: one deleter at a time, and the marks every pusher honours.

`LEASE` is a second compare-and-swap ref next to HEAD, sealed under the HEAD sub-key (kind `L`)
so only the fleet can write it. It says who may delete objects now (a device, what for, until
when) and which mark records are pending: objects a prune found unreferenced and will delete
once the grace period has passed. A pusher reads it once per push and never references a blob
in a marked pack, so whatever a prune deletes, no push that started after the mark relies on,
and every push that started before it has ended (published or given up) by its deadline,
which the grace period exceeds. The argument is in docs/decisions.md ("Prune and concurrent
pushes"). `roam key rotate` takes the same lease to delete old objects.

A lease expires by itself (a deleter that crashed blocks nobody for long); a long deleter
renews it between bounded steps. Releasing keeps the marks: they outlive the deleter.
"""

from __future__ import annotations

import contextlib
import datetime
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from roam_core import crypto
from roam_core.errors import ConflictError, IntegrityError, RefConflict, UserError
from roam_core.store.objects import LEASE_REF, canonical, mark_key, parse_json
from roam_core.store.repository import Repository

#: How long a lease holds without renewal: a crashed deleter blocks others at most this long.
LEASE_SECONDS = 600.0
#: A push running longer than this looks at the marks again before it swaps HEAD: a prune
#: may have marked its own early objects. Shorter pushes end well inside any grace period.
RECHECK_AFTER = 1800.0
#: Compare-and-swaps tried before giving up when the ref moved under an unchanged lease.
SWAP_ATTEMPTS = 5


class LeaseHeld(ConflictError):
    """Another device holds the lease (exit 2: try again later)."""


@dataclass(frozen=True)
class LeaseRecord:
    """What LEASE says. `holder` None: free. `marks`: ids of pending mark records."""

    holder: str | None = None
    name: str = ""
    purpose: str = ""
    started: str = ""
    expires: float = 0.0
    marks: tuple[str, ...] = ()
    version: str | None = None

    def active(self, now: float | None = None) -> bool:
        """Whether a device holds it now (an expired lease is free)."""
        return self.holder is not None and (time.time() if now is None else now) < self.expires

    def as_json(self) -> dict[str, Any]:
        return {"v": 1, "holder": self.holder, "name": self.name, "purpose": self.purpose,
                "started": self.started, "expires": self.expires, "marks": list(self.marks)}

    @classmethod
    def from_json(cls, data: dict[str, Any], version: str | None) -> LeaseRecord:
        try:
            holder = data.get("holder")
            marks = data.get("marks") or []
            if not isinstance(marks, list) or not all(isinstance(m, str) for m in marks):
                raise TypeError
            return cls(None if holder is None else str(holder), str(data.get("name", "")),
                       str(data.get("purpose", "")), str(data.get("started", "")),
                       float(data.get("expires", 0.0)), tuple(marks), version)
        except (TypeError, ValueError, OverflowError):
            raise IntegrityError("integrity error: LEASE is malformed") from None

    def describe(self) -> str:
        until = datetime.datetime.fromtimestamp(self.expires, datetime.UTC)
        return (f"{self.name or self.holder} holds the store's lease for {self.purpose} "
                f"until {until.replace(microsecond=0).isoformat()}")


def read_lease(repo: Repository) -> LeaseRecord:
    """The authenticated lease; a free, empty record when the store never had one."""
    found = repo.backend.read_ref(LEASE_REF)
    if found is None:
        return LeaseRecord()
    raw, version = found
    plain = crypto.open_sealed(repo.keys.head, crypto.KIND_LEASE, LEASE_REF, raw, "LEASE")
    return LeaseRecord.from_json(parse_json(plain, "LEASE"), version)


def _write(repo: Repository, record: LeaseRecord, expected: str | None) -> LeaseRecord:
    sealed = crypto.seal(repo.keys.head, crypto.KIND_LEASE, LEASE_REF,
                         canonical(record.as_json()))
    version = repo.backend.swap_ref(LEASE_REF, sealed, expected)
    return replace(record, version=version)


class Lease:
    """A lease this device holds; every change is a compare-and-swap of LEASE."""

    def __init__(self, repo: Repository, record: LeaseRecord, seconds: float) -> None:
        self.repo = repo
        self.record = record
        self.seconds = seconds

    def _swap(self, record: LeaseRecord) -> None:
        expected = self.record.version
        for _attempt in range(SWAP_ATTEMPTS):
            try:
                self.record = _write(self.repo, record, expected)
                return
            except RefConflict:
                # a version may move without the lease changing (a backend whose refs
                # share one version). Still ours, as we left it? Then swap again.
                now = read_lease(self.repo)
                if replace(now, version=None) != replace(self.record, version=None):
                    break
                expected = now.version
        raise LeaseHeld("the store's lease was taken by another device while this one "
                        "held it (it expired?); run the command again")

    def renew(self) -> None:
        """Extend the lease by its length from now; `LeaseHeld` if another device took it."""
        self._swap(replace(self.record, expires=time.time() + self.seconds))

    def set_marks(self, marks: Iterable[str]) -> None:
        """Publish the pending mark records (pushers read them from here)."""
        self._swap(replace(self.record, marks=tuple(sorted(set(marks))),
                           expires=time.time() + self.seconds))

    def release(self) -> None:
        """Free the lease, keeping its marks."""
        self._swap(replace(self.record, holder=None, name="", purpose="", started="",
                           expires=0.0))


def reseal(old: Repository, new: Repository) -> None:
    """Seal LEASE again under `new`'s key, as `old`'s key left it but with no marks.

    For `roam key rotate`, right after HEAD moved to the new key: every object a mark names
    is sealed under the old key and deleted by the rotation itself. Nothing to do when
    LEASE already opens under the new key, or the store never had one.
    """
    for _attempt in range(SWAP_ATTEMPTS):
        try:
            read_lease(new)
            return
        except IntegrityError:
            pass
        current = read_lease(old)
        if current.version is None:
            return
        try:
            _write(new, replace(current, marks=()), current.version)
            return
        except RefConflict:
            continue  # the holder renewed (or the ref's version moved): look again
    raise LeaseHeld("the store's lease kept changing while it was sealed under the new key; "
                    "run the command again")


def acquire(repo: Repository, device_id: str, name: str, purpose: str,
            seconds: float = LEASE_SECONDS) -> Lease:
    """Take the lease for `purpose`; `LeaseHeld` (exit 2) when another device holds it."""
    for _attempt in range(SWAP_ATTEMPTS):
        current = read_lease(repo)
        if current.active() and current.holder != device_id:
            raise LeaseHeld(f"{current.describe()}; try again later")
        started = datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()
        wanted = replace(current, holder=device_id, name=name, purpose=purpose,
                         started=started, expires=time.time() + seconds)
        try:
            return Lease(repo, _write(repo, wanted, current.version), seconds)
        except RefConflict:
            continue  # someone moved the ref: look again
    raise LeaseHeld("another device took the store's lease just now; try again later")


@contextlib.contextmanager
def held(repo: Repository, device_id: str, name: str, purpose: str,
         seconds: float = LEASE_SECONDS) -> Iterator[Lease]:
    """Hold the lease for the block; released at its end (an expiry covers a crash)."""
    lease = acquire(repo, device_id, name, purpose, seconds)
    try:
        yield lease
    finally:
        with contextlib.suppress(LeaseHeld):
            lease.release()


# -- marks -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mark:
    """Objects found unreferenced at `time` (epoch seconds) by device `device`."""

    mark_id: str
    time: float
    device: str
    keys: tuple[str, ...]


def write_mark(repo: Repository, device: str, keys: list[str], now: float | None = None) -> str:
    """Store one mark record (not yet published in LEASE); return its id."""
    value = {"v": 1, "time": time.time() if now is None else now, "device": device,
             "keys": sorted(keys)}
    return repo.write_record(crypto.KIND_MARK, value, mark_key)


def load_mark(repo: Repository, mark_id: str) -> Mark:
    data = repo.read_record(crypto.KIND_MARK, mark_id, mark_key(mark_id), "marks")
    keys = data.get("keys")
    try:
        if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
            raise TypeError
        return Mark(mark_id, float(data["time"]), str(data.get("device", "")), tuple(keys))
    except (KeyError, TypeError, ValueError, OverflowError):
        raise IntegrityError(f"integrity error: mark {mark_id} is malformed") from None


def marked_keys(repo: Repository, record: LeaseRecord | None = None) -> frozenset[str]:
    """Every object key a pending mark names: a pusher never relies on one of them."""
    record = read_lease(repo) if record is None else record
    keys: set[str] = set()
    for mark_id in record.marks:
        keys.update(load_mark(repo, mark_id).keys)
    return frozenset(keys)


def refuse_if_marked(repo: Repository, needs: Iterable[Iterable[str]]) -> None:
    """Before a long push swaps HEAD: refuse unless every object it relies on is safe.

    Each need lists the keys of its copies (a blob's pack as its entry names it, and every
    pack an index places it in: a repack moves blobs). A copy is safe when no mark names it
    now and it is still stored; one safe copy is enough. An object no mark names now can
    only be deleted a whole grace period after a later mark, long after this swap; one a
    mark names might go at any moment, and one a sweep took is gone. Marks are read first,
    stored objects listed after, so a sweep in between is caught by one or the other.
    """
    repo.backend.read_ref("HEAD")  # a fresh look at the remote (git: LEASE comes with it)
    wanted = [set(need) for need in needs]
    marked = marked_keys(repo)
    prefixes = sorted({key.partition("/")[0] + "/" for need in wanted for key in need})
    safe = {key for prefix in prefixes for key in repo.backend.list(prefix)} - marked
    hit = sum(1 for need in wanted if not need & safe)
    if hit:
        raise UserError(f"a prune marked or deleted {hit} object(s) this push relies on "
                        "while it ran; run roam push again")
