"""config.yaml as it travels: the shared projection, and the key-by-key merge on pull.

`shared_projection(text, host_keys=...)` is what a push sends for `config.yaml` and every
`profiles/*/config.yaml`; `merge_config(local, accepted_base, remote, ...)` is what a pull
writes back. Both read YAML the way Hermes does (PyYAML) and fail with a `ConfigError` that
names the file and line.
"""

from __future__ import annotations

from roam_core.config.merge import ConfigMerge, merge_config
from roam_core.config.projection import DEFAULT_HOST_KEYS, shared_projection
from roam_core.config.sensitive import has_home_path, is_secret_key, looks_like_credential

__all__ = [
    "DEFAULT_HOST_KEYS",
    "ConfigMerge",
    "has_home_path",
    "is_secret_key",
    "looks_like_credential",
    "merge_config",
    "shared_projection",
]
