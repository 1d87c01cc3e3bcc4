"""The storage contract: a small, dumb object store plus one compare-and-swap reference.

Everything else (encryption, deduplication, generations, history) belongs to core and is
written once. A backend implements `Backend`; core wraps it once in `GuardedBackend` for the
cross-cutting duties (deadlines, key validation, size limits) so plugins need not repeat them.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import re
import time
from collections.abc import Iterable, Iterator

from roam_core import deadline as _deadline
from roam_core.errors import BackendError, ObjectNotFound
from roam_core.types import Capabilities

#: Keys are relative, `/`-separated, made of this alphabet. Core only ever writes such keys;
#: a backend MAY reject anything else with `BackendError` and MUST NOT corrupt it silently.
KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$")
REF_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

log = logging.getLogger(__name__)

#: One row of `roam doctor`: (check name, ok, detail).
DoctorCheck = tuple[str, bool, str]
#: Named out here because inside a `Backend`, `list` is the method.
DoctorChecks = list[DoctorCheck]


def validate_key(key: str) -> str:
    """Return `key` when it is a well-formed object key, else raise `BackendError`."""
    if not isinstance(key, str) or len(key) > 512 or not KEY_PATTERN.match(key):
        raise BackendError(f"invalid object key {key!r}")
    return key


def validate_ref(name: str) -> str:
    """Return `name` when it is a well-formed ref name, else raise `BackendError`."""
    if not isinstance(name, str) or len(name) > 64 or not REF_PATTERN.match(name):
        raise BackendError(f"invalid ref name {name!r}")
    return name


class Backend(abc.ABC):
    """A storage backend. Duties are spelled out per method; the conformance suite checks them.

    Implementations need not be thread-safe across instances, but one instance MUST tolerate
    calls from several threads (core uploads in parallel on remote backends).
    """

    capabilities: Capabilities = Capabilities()

    @abc.abstractmethod
    def get(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        """Return the object's bytes, or `length` bytes from `offset` (fewer at the end).

        MUST raise `ObjectNotFound` for a missing key. A range that starts past the end
        returns b"".
        """

    @abc.abstractmethod
    def put_new(self, key: str, data: bytes) -> None:
        """Create the object once. MUST raise `ObjectExists` if the key is already there.

        The write is all-or-nothing: a reader never sees a partial object. Objects are
        immutable: nothing overwrites one, and only `delete` (prune, key rotation) removes one.
        """

    @abc.abstractmethod
    def list(self, prefix: str = "") -> Iterator[str]:
        """Yield every key that starts with `prefix`, each exactly once, in any order."""

    @abc.abstractmethod
    def read_ref(self, name: str) -> tuple[bytes, str] | None:
        """Return the ref's bytes and an opaque version token, or None when it does not exist."""

    @abc.abstractmethod
    def swap_ref(self, name: str, data: bytes, expected_version: str | None) -> str:
        """Atomically replace the ref if it is still at `expected_version`; return the new version.

        `expected_version=None` means "the ref must not exist yet". When N writers race with
        the same expected version exactly one MUST win; the others MUST raise `RefConflict`
        and leave the ref as the winner wrote it.
        """

    @abc.abstractmethod
    def identity(self) -> str:
        """The remote's name, stable across devices, with every credential stripped."""

    def delete(self, keys: Iterable[str]) -> None:
        """Remove these objects. Idempotent: a key that is already gone is not an error.

        Only a backend that declares `capabilities.deletes` is asked; the default refuses.
        When it returns, every key is gone for every reader (durably: a crash does not bring
        one back), and a later `put_new` of the same key MUST succeed. It never touches a
        ref. A backend MAY batch (S3 deletes up to 1,000 keys per request); `keys` may be
        a long iterator, consumed once.
        """
        raise BackendError(f"{type(self).__name__} cannot delete objects")

    def flush(self) -> None:
        """Make every object this instance has created durable, before anything names them.

        Core calls it after storing a pack and before storing the index that names it, and
        `swap_ref` MUST imply it: nothing a ref points to may be lost to a crash. A backend
        whose `put_new` is durable when it returns keeps this default, which does nothing.
        """
        return None

    def ping(self) -> None:
        """Check the remote answers; raise a `BackendError` with the real error if not."""
        self.read_ref("HEAD")

    def close(self) -> None:
        """Release connections and local resources. Idempotent."""
        return None

    def create_remote(self) -> None:
        """Create the remote container (bucket, branch, directory) if it does not exist.

        Called by `roam init --create-remote` only. MUST be idempotent and MUST NOT touch an
        existing store's objects or ref. The default does nothing.
        """
        return None

    def doctor(self) -> DoctorChecks:
        """Backend-specific health checks as (check name, ok, detail) rows for `roam doctor`.

        Examples: the git binary is installed, the credentials may list and write, size
        guidance. MUST NOT raise for an expected failure: report it as a failed row.
        """
        return []

    def exists(self, key: str) -> bool:
        """Whether an object exists. Backends may override with a cheaper probe."""
        try:
            self.get(key, 0, 1)
        except ObjectNotFound:
            return False
        return True


class GuardedBackend(Backend):
    """Core's single wrapper around a plugin's backend: keys, deadlines and size limits."""

    def __init__(self, inner: Backend, name: str = "") -> None:
        self.inner = inner
        self.name = name or type(inner).__name__
        self.capabilities = inner.capabilities

    def _check(self) -> None:
        current = _deadline.current()
        if current is not None:
            current.check()

    @contextlib.contextmanager
    def _logged(self, call: str, detail: str = "") -> Iterator[None]:
        """`roam -v`: one line per remote request with its outcome and duration."""
        if not log.isEnabledFor(logging.INFO):
            yield
            return
        started = time.monotonic()
        outcome = "ok"
        try:
            yield
        except BaseException as failure:
            outcome = type(failure).__name__
            raise
        finally:
            took = (time.monotonic() - started) * 1000
            log.info("%s %s %s: %s in %.1f ms", self.name, call, detail, outcome, took)

    def get(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        validate_key(key)
        if offset < 0 or (length is not None and length < 0):
            raise BackendError(f"invalid range {offset}+{length} for {key}")
        self._check()
        with self._logged("get", key):
            return self.inner.get(key, offset, length)

    def put_new(self, key: str, data: bytes) -> None:
        validate_key(key)
        limit = self.capabilities.max_object_size
        if limit is not None and len(data) > limit:
            raise BackendError(f"object {key} is {len(data)} bytes, over the backend's {limit}")
        self._check()
        with self._logged("put_new", f"{key} ({len(data)} bytes)"):
            self.inner.put_new(key, bytes(data))

    def list(self, prefix: str = "") -> Iterator[str]:
        self._check()
        return self.inner.list(prefix)

    def read_ref(self, name: str) -> tuple[bytes, str] | None:
        validate_ref(name)
        self._check()
        with self._logged("read_ref", name):
            return self.inner.read_ref(name)

    def delete(self, keys: Iterable[str]) -> None:
        if not self.capabilities.deletes:
            raise BackendError(f"the {self.name} backend cannot delete objects, "
                               "so the store cannot be pruned or re-keyed")
        checked = [validate_key(key) for key in keys]
        self._check()
        with self._logged("delete", f"{len(checked)} key(s)"):
            self.inner.delete(checked)

    def swap_ref(self, name: str, data: bytes, expected_version: str | None) -> str:
        validate_ref(name)
        self._check()
        with self._logged("swap_ref", name):
            return self.inner.swap_ref(name, bytes(data), expected_version)

    def identity(self) -> str:
        return self.inner.identity()

    def flush(self) -> None:
        self._check()
        with self._logged("flush"):
            self.inner.flush()

    def ping(self) -> None:
        self._check()
        with self._logged("ping"):
            self.inner.ping()

    def close(self) -> None:
        self.inner.close()

    def create_remote(self) -> None:
        self._check()
        self.inner.create_remote()

    def doctor(self) -> DoctorChecks:
        return self.inner.doctor()

    def exists(self, key: str) -> bool:
        validate_key(key)
        self._check()
        with self._logged("exists", key):
            return self.inner.exists(key)
