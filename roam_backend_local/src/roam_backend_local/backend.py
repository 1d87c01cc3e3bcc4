"""A storage backend in a directory, POSIX semantics: exclusive creates and flock'd CAS.

Layout under the root: `objects/<key>` (one file per object, created once by hard-linking a
fully written and fsynced temp file, so a reader never sees a partial object and a second
writer gets EEXIST), and `refs/<name>` whose first line is the version token, updated
under an exclusive `flock` on `refs/<name>.lock` after comparing that token. The folders
that received objects are synced by `flush`, which every ref swap does first.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from pathlib import Path

from roam_core.plugin import (
    Backend,
    BackendError,
    Capabilities,
    ObjectExists,
    ObjectNotFound,
    RefConflict,
    fsync_dir,
    validate_key,
    validate_ref,
)

_TEMP_PREFIX = ".tmp-"


def _write_temp(directory: Path, data: bytes) -> Path:
    temp = directory / f"{_TEMP_PREFIX}{secrets.token_hex(8)}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    os.close(fd)
    return temp


def _os_error(action: str, error: OSError) -> BackendError:
    return BackendError(f"local store: cannot {action}: {error.strerror or error}")


class LocalBackend(Backend):
    """The storage contract on a local or shared filesystem."""

    capabilities = Capabilities(deletes=True)

    #: Objects kept open for ranged reads: a pull reads thousands of blobs from a few packs.
    OPEN_PACKS = 8

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser().absolute()
        self.objects = self.root / "objects"
        self.refs = self.root / "refs"
        self._open: OrderedDict[str, int] = OrderedDict()
        self._open_lock = threading.Lock()
        #: folders whose new entries are not yet durable (see `flush`)
        self._unsynced: set[Path] = set()
        self._unsynced_lock = threading.Lock()
        self._folders: set[Path] = set()

    def _ensure(self, directory: Path) -> None:
        if directory in self._folders:
            return
        missing: list[Path] = []
        current = directory
        while not current.is_dir():
            missing.append(current)
            current = current.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise _os_error(f"create {directory}", error) from None
        with self._unsynced_lock:  # a new folder's own name must last too
            self._unsynced.update(folder.parent for folder in missing)
        self._folders.add(directory)

    def flush(self) -> None:
        """Sync the folders this instance added objects to since the last flush.

        Each object's bytes are synced before it is linked into place, so an object that
        exists is complete; its name becomes durable here, once per folder instead of once
        per object (a first push writes thousands of trees into 256 folders).
        """
        with self._unsynced_lock:
            folders, self._unsynced = self._unsynced, set()
        try:
            for folder in sorted(folders, key=lambda path: len(path.parts), reverse=True):
                fsync_dir(folder)
        except OSError as error:
            with self._unsynced_lock:
                self._unsynced.update(folders)
            raise _os_error("sync the store", error) from None

    def get(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        path = self.objects / validate_key(key)
        if length is not None:
            return self._ranged(key, path, offset, length)
        try:
            with path.open("rb") as handle:
                handle.seek(offset)
                return handle.read() if length is None else handle.read(length)
        except FileNotFoundError:
            raise ObjectNotFound(key) from None
        except OSError as error:
            raise _os_error(f"read {key}", error) from None

    def _ranged(self, key: str, path: Path, offset: int, length: int) -> bytes:
        # objects never change once written, so an open descriptor stays right; `pread`
        # needs no seek, so threads may share it
        try:
            with self._open_lock:
                fd = self._open.get(key)
                if fd is None:
                    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                    self._open[key] = fd
                    while len(self._open) > self.OPEN_PACKS:
                        os.close(self._open.popitem(last=False)[1])
                else:
                    self._open.move_to_end(key)
                chunks: list[bytes] = []
                while length > 0:
                    chunk = os.pread(fd, length, offset)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    offset += len(chunk)
                    length -= len(chunk)
                return b"".join(chunks)
        except FileNotFoundError:
            raise ObjectNotFound(key) from None
        except OSError as error:
            raise _os_error(f"read {key}", error) from None

    def close(self) -> None:
        with self._open_lock:
            while self._open:
                os.close(self._open.popitem()[1])

    def __del__(self) -> None:  # a backend dropped without close() keeps no descriptors
        with contextlib.suppress(Exception):
            self.close()

    def exists(self, key: str) -> bool:
        return (self.objects / validate_key(key)).is_file()

    def put_new(self, key: str, data: bytes) -> None:
        path = self.objects / validate_key(key)
        self._ensure(path.parent)
        try:
            try:
                temp = _write_temp(path.parent, data)
            except FileNotFoundError:  # the folder went away since we made it
                self._folders.discard(path.parent)
                self._ensure(path.parent)
                temp = _write_temp(path.parent, data)
            try:
                os.link(temp, path)
            finally:
                temp.unlink()
            with self._unsynced_lock:  # the name lasts at the next flush (or ref swap)
                self._unsynced.add(path.parent)
        except FileExistsError:
            raise ObjectExists(key) from None
        except OSError as error:
            if error.errno == errno.EEXIST:
                raise ObjectExists(key) from None
            raise _os_error(f"write {key}", error) from None

    def delete(self, keys: Iterable[str]) -> None:
        """Unlink each object, then sync each folder that lost a name (once per folder)."""
        touched: set[Path] = set()
        for key in keys:
            path = self.objects / validate_key(key)
            with self._open_lock:  # a descriptor kept for ranged reads must not outlive it
                fd = self._open.pop(key, None)
                if fd is not None:
                    os.close(fd)
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as error:
                raise _os_error(f"delete {key}", error) from None
            touched.add(path.parent)
        try:
            for folder in touched:
                fsync_dir(folder)
        except OSError as error:
            raise _os_error("sync the store", error) from None

    def list(self, prefix: str = "") -> Iterator[str]:
        if not self.objects.is_dir():
            return iter(())
        keys: list[str] = []
        base = len(str(self.objects)) + 1
        for directory, _dirs, files in os.walk(self.objects):
            for name in files:
                if name.startswith(_TEMP_PREFIX):
                    continue
                key = os.path.join(directory, name)[base:].replace(os.sep, "/")
                if key.startswith(prefix):
                    keys.append(key)
        return iter(sorted(keys))

    def _read_ref_file(self, path: Path) -> tuple[bytes, str] | None:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise _os_error(f"read ref {path.name}", error) from None
        version, newline, data = raw.partition(b"\n")
        if not newline:
            raise BackendError(f"local store: ref {path.name} is damaged")
        return data, version.decode("ascii", "replace")

    def read_ref(self, name: str) -> tuple[bytes, str] | None:
        return self._read_ref_file(self.refs / validate_ref(name))

    def swap_ref(self, name: str, data: bytes, expected_version: str | None) -> str:
        path = self.refs / validate_ref(name)
        self.flush()  # a ref never names an object a crash could still lose
        self._ensure(self.refs)
        try:
            lock_fd = os.open(self.refs / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            raise _os_error(f"lock ref {name}", error) from None
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            current = self._read_ref_file(path)
            current_version = None if current is None else current[1]
            if current_version != expected_version:
                raise RefConflict(f"ref {name} moved (expected {expected_version})")
            version = secrets.token_hex(16)
            temp = _write_temp(self.refs, version.encode("ascii") + b"\n" + data)
            os.replace(temp, path)
            fsync_dir(self.refs)
            return version
        except OSError as error:
            raise _os_error(f"write ref {name}", error) from None
        finally:
            os.close(lock_fd)

    def identity(self) -> str:
        return f"file://{self.root}"

    def create_remote(self) -> None:
        self._ensure(self.root)

    def ping(self) -> None:
        if not self.root.exists():
            raise BackendError(f"local store: {self.root} does not exist")
        if not os.access(self.root, os.W_OK):
            raise BackendError(f"local store: {self.root} is not writable")
        self.read_ref("HEAD")
