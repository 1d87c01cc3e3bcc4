"""Opening what an operation needs: the home, settings, key, backend, store and scope."""

from __future__ import annotations

import functools
import importlib.metadata
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roam_core import crypto, secrets
from roam_core.deadline import Deadline
from roam_core.engine.state import LocalState, load_state
from roam_core.errors import UserError
from roam_core.home import Home
from roam_core.manager import get_manager
from roam_core.settings import CoreSettings, load_settings, number, optional_number
from roam_core.storage import Backend, GuardedBackend
from roam_core.store.repository import Repository
from roam_core.types import PluginContext

if TYPE_CHECKING:
    from roam_core.scope.model import ScopeModel


def hermes_version() -> str | None:
    """The installed hermes-agent's version, if any (metadata only: Hermes is not imported)."""
    try:
        return importlib.metadata.version("hermes-agent")
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass
class Session:
    """One operation's view of a home. Expensive parts open on first use."""

    home: Home
    deadline: Deadline
    settings: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, home: Home, operation: str) -> Session:
        settings = load_settings(home.root)
        # unset, a transfer's deadline is sized to its work once planned (`Deadline.size_to`)
        budget = optional_number(settings, "operation_timeout_seconds")
        return cls(home, Deadline.for_operation(operation, budget), settings)

    @property
    def root(self) -> Path:
        return self.home.root

    @property
    def state_dir(self) -> Path:
        return self.home.state_dir

    @property
    def device(self) -> str:
        """This device's name: chosen at init, changed by `roam devices rename`."""
        state = self.state()
        return state.device if state is not None else self.default_name

    @property
    def default_name(self) -> str:
        """The name `roam init` proposes: the device_name setting, else the host name."""
        name = self.core.device_name or socket.gethostname() or "device"
        return str(name)

    @property
    def device_id(self) -> str:
        """This device's id (empty before `roam init`)."""
        state = self.state()
        return state.id if state is not None else ""

    @property
    def max_file_size(self) -> int:
        return int(number(self.settings, "max_file_mb") * 1024 * 1024)

    @functools.cached_property
    def keys(self) -> crypto.Keys:
        raw = secrets.get_secret(crypto.KEY_ENV, self.root)
        return crypto.Keys.derive(crypto.parse_key(raw))

    @functools.cached_property
    def backend(self) -> Backend:
        name = self.core.backend
        plugin = get_manager().backend(name)
        context = PluginContext(home=self.root, state_dir=self.state_dir,
                                secret=secrets.reader(self.root), deadline=self.deadline)
        return GuardedBackend(plugin.factory(self.settings, context), name)

    @functools.cached_property
    def repo(self) -> Repository:
        return Repository(self.backend, self.keys, self.state_dir / "cache",
                          max_file_size=self.max_file_size)

    @functools.cached_property
    def core(self) -> CoreSettings:
        """Roam's own settings as a typed record (plugins' settings stay in `settings`)."""
        return CoreSettings.build(self.settings)

    @functools.cached_property
    def scope(self) -> ScopeModel:
        """The scope model of the root home: every provider's rules and rules.yaml.

        Imported here, not at the top: `roam --version` and the read-only verbs that never
        classify a path should not pay for the scope model's import.
        """
        from roam_core.scope import load_scope

        return load_scope(self.root, get_manager(), self.settings)

    def state(self) -> LocalState | None:
        return load_state(self.state_dir)

    def require_state(self) -> LocalState:
        state = self.state()
        if state is None:
            raise UserError(f"{self.root} is not set up for roam yet: not initialised — run "
                            "roam init")
        return state

    def close(self) -> None:
        if "repo" in self.__dict__:
            self.repo.close()  # its object cache written (a pull's, in a thread meanwhile)
        if "backend" in self.__dict__:
            self.backend.close()
