"""The campaign's properties, checked against the store and the homes.

P1 every pushed version comes back byte-exact through `history` and `restore`, and a merge
never drops what this device added; P2 a quiet round converges every device's shared files
and config projection while host keys and secrets stay each device's own; P3 no object of
the store, decrypted, holds any planted canary; and `roam check --read-data` passes.
"""

from __future__ import annotations

import contextlib
from typing import Any

from campaign.driver import Campaign
from campaign.fleetrun import SHARED_POOL, Device, FleetRun
from campaign.harness import Home
from campaign.model import CONFIG, MEMORY, config_keys, entries, local_keys, sha, shared_keys
from campaign.storeview import generations, manifest_of, open_repository, plaintexts

from roam_core.store.repository import Repository


def repository(run: FleetRun) -> Repository:
    """The auditor's view of the store (opened once per campaign, trees cached)."""
    repo = getattr(run, "_repo", None)
    if repo is None:
        stack = contextlib.ExitStack()
        repo = stack.enter_context(open_repository(run.store, run.root / "auditor-view",
                                                   cache=True))
        run._repo, run._repo_stack = repo, stack  # type: ignore[attr-defined]
    return repo


def close_repository(run: FleetRun) -> None:
    stack = getattr(run, "_repo_stack", None)
    if stack is not None:
        stack.close()


def verify_generation(run: FleetRun, generation: int, predicted: dict[str, bytes]) -> None:
    """The store's HEAD is `generation` and its manifest is exactly what the model predicts."""
    repo = repository(run)
    head = repo.read_head()
    assert head is not None and head.generation == generation, (head, generation)
    snapshot = repo.load_snapshot(head.snapshot)
    _same_manifest(generation, {rel: e.sha256 for rel, e in manifest_of(repo, snapshot).items()},
                   predicted)


def _same_manifest(generation: int, stored: dict[str, str], model: dict[str, bytes]) -> None:
    expected = {rel: sha(data) for rel, data in model.items()}
    if stored != expected:
        wrong = sorted(r for r in set(stored) | set(expected) if stored.get(r) != expected.get(r))
        raise AssertionError(f"P1: generation {generation} holds other versions than were "
                             f"pushed, at {wrong}")


def check_memory(rel: str, base: bytes | None, local: bytes, remote: bytes,
                 post: bytes | None, overwrite: bool) -> None:
    """A merged memory file keeps every entry added here, and invents none."""
    assert post is not None, f"P1: the merge of {rel} deleted it"
    merged = set(entries(post))
    added_here = set(entries(local)) - set(entries(base))
    if not overwrite:
        lost = added_here - merged
        assert not lost, f"P1: merging {rel} dropped entries added on this device: {lost}"
    invented = merged - set(entries(local)) - set(entries(remote))
    assert not invented, f"merging {rel} made up entries: {invented}"


def check_config(dev: Device, pre: dict[str, bytes], post: dict[str, bytes],
                 expected_shared: dict[str, Any] | None) -> None:
    """Host keys and the secret are this device's own; shared keys are as the merge says."""
    before, after = config_keys(pre.get(CONFIG)), config_keys(post.get(CONFIG))
    assert local_keys(after) == local_keys(before), (
        f"P2: config host keys or secrets changed on {dev.model.name}: "
        f"{sorted(k for k in set(local_keys(after)) ^ set(local_keys(before)))}")
    for key, value in dev.model.host.items():
        assert after.get(key) == value, f"P2: host key {key} on {dev.model.name} is not its own"
    assert after.get("providers.openai.api_key") == f"sk-{dev.canary_config}", \
        f"P2: the config secret of {dev.model.name} is not its own"
    if expected_shared is None:
        assert post.get(CONFIG) == pre.get(CONFIG), "config.yaml changed without a remote one"
        return
    got = shared_keys(after)
    assert got == expected_shared, (
        f"config merge on {dev.model.name}: "
        f"{ {k: (got.get(k), expected_shared.get(k)) for k in set(got) | set(expected_shared) if got.get(k) != expected_shared.get(k)} }")  # noqa: E501


def check_converged(run: FleetRun) -> None:
    """After a quiet round every device holds the head generation for what it can see (P2)."""
    head = run.fleet.versions[run.fleet.head]
    projections = []
    for dev in run.devices:
        files = dev.home.files()
        for rel in (*SHARED_POOL, *MEMORY):
            if dev.model.visible(rel):
                assert files.get(rel) == head.get(rel), (
                    f"P2: {rel} on {dev.model.name} did not converge to generation "
                    f"{run.fleet.head}")
        flat = config_keys(files[CONFIG])
        projections.append(shared_keys(flat))
        assert projections[-1] == config_keys(head.get(CONFIG)), \
            f"P2: the config of {dev.model.name} did not converge"
        for key, value in dev.model.host.items():
            assert flat.get(key) == value, f"P2: {dev.model.name} lost its own {key}"
        assert flat.get("providers.openai.api_key") == f"sk-{dev.canary_config}", \
            f"P2: {dev.model.name} lost its own config secret"


def final_checks(run: FleetRun) -> None:
    """The end of a campaign: converge, then P1 through history/restore, P3, roam check."""
    run.quiet_round()  # type: ignore[attr-defined]
    auditor = Home(run.root / "auditor", "auditor", run.store, run.runner)
    assert auditor.roam("init").code == 0
    check_every_version(run, auditor)
    check_no_canary(run)
    for home in (auditor,) if run.store.kind in RESTORE_SAMPLE else (auditor, run.devices[0].home):
        result = home.roam("check", "--read-data", "--json")
        assert result.code == 0, f"roam check --read-data: {result.out} {result.err}"
        assert result.json()["head_generation"] == run.fleet.head


#: Versions restored through the CLI on the slower remote backends (all are still read back
#: byte-exact through the Repository API there); every version on memory and local.
RESTORE_SAMPLE = {"s3": 30, "git": 30}


def check_every_version(run: FleetRun, auditor: Home) -> None:
    """P1: every generation is in the store as pushed, every version comes back byte-exact."""
    repo = repository(run)
    stored = generations(repo)
    assert sorted(stored) == sorted(run.fleet.versions), \
        f"P1: generations are missing: store {sorted(stored)}, model {sorted(run.fleet.versions)}"
    first_seen: dict[tuple[str, bytes], tuple[int, Any]] = {}
    for generation, files in sorted(run.fleet.versions.items()):
        manifest = manifest_of(repo, stored[generation][1])
        _same_manifest(generation, {r: e.sha256 for r, e in manifest.items()}, files)
        for rel, data in files.items():
            first_seen.setdefault((rel, data), (generation, manifest[rel]))
    for (rel, data), (generation, entry) in first_seen.items():
        assert repo.read_content(entry) == data, f"P1: {rel}@{generation} reads back wrong"
    versions = sorted((g, rel, data) for (rel, data), (g, _e) in first_seen.items()
                      if rel != CONFIG)  # a config restores as a merge: compared above
    limit = RESTORE_SAMPLE.get(run.store.kind)
    if limit is not None and len(versions) > limit:
        versions = sorted(run.rng.sample(versions, limit))
    listed: dict[str, set[str]] = {}
    for generation, rel, data in versions:
        if rel not in listed:
            history = auditor.roam("history", rel, "--json")
            assert history.code == 0, history.err
            listed[rel] = {row["sha256"] for row in history.json()}
        assert sha(data) in listed[rel], f"P1: history {rel} does not list generation {generation}"
        restored = auditor.roam("restore", rel, "--generation", str(generation), "--apply")
        assert restored.code == 0, restored.err
        assert (auditor.root / rel).read_bytes() == data, \
            f"P1: restore {rel} --generation {generation} is not byte-exact"


def check_no_canary(run: FleetRun) -> None:
    """P3: no planted canary in any decrypted object, nor in any raw one."""
    repo = repository(run)
    tokens = [token.encode() for token in run.canaries]
    assert tokens
    seen = 0
    for key, plain in plaintexts(repo):
        seen += 1
        found = [t.decode() for t in tokens if t in plain]
        assert not found, f"P3: {key} holds planted secrets {found}"
    for key in repo.backend.list(""):
        raw = repo.backend.get(key)
        assert not any(t in raw for t in tokens), f"P3: raw object {key} holds a canary"
    assert seen > 3


def play(run: Campaign, steps: int) -> None:
    """Set the fleet up, take `steps` random steps, check everything; close the store after."""
    try:
        run.setup()
        run.run(steps)
        final_checks(run)
    finally:
        close_repository(run)
