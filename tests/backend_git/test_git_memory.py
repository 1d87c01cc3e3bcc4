"""A whole pack never sits in memory on roam's side of the git backend (issue 22: ≤ 200 MiB).

The large home's store is one 375 MiB pack in the mirror. Read through a memory map, every
page of it a pull touched stayed in roam's resident set (623 MiB at the pull's peak, 255 MiB
of it roam's own); and git's `pack-objects` maps the packs of a push in windows of 1 GiB by
default, so the push's peak was the pack's size (379 MiB). Both are file pages, but they are
what a user's `top` and the benchmark's peak RSS show. Each test measures a fresh process
(`run_measured`, its own peak and its children's) reading or pushing an 80 MiB pack, against
the same process doing everything but the reads or the push.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from roam_backend_git.backend import GitBackend
from roam_backend_git.staging import StagingPack
from roam_core.testing.rss import run_measured
from support.git_remotes import bare_repo, file_url

BLOBS = 20
BLOB_SIZE = 4 * 1024 * 1024  # 80 MiB of pack in all
#: What the reads or the push may add to the peak: a few blobs' worth, far from the pack.
ALLOWED_MIB = 40


def _staged_pack(mirror: Path) -> list[str]:
    subprocess.run(["git", "init", "--bare", "--quiet", "--template=", str(mirror)],
                   check=True)
    staging = StagingPack(mirror / "objects" / "pack")
    shas = [staging.add(os.urandom(BLOB_SIZE)) for _ in range(BLOBS)]
    staging.finish()
    return shas


def _peak_mib(script: str, *args: str) -> float:
    measured = run_measured([sys.executable, "-c", textwrap.dedent(script), *args],
                            stdout=subprocess.DEVNULL, stderr=None)
    assert measured.code == 0
    return measured.peak_mib


READ = """
    import sys
    from pathlib import Path
    from roam_backend_git.packread import PackReader

    reader = PackReader(Path(sys.argv[1]) / "objects" / "pack")
    for sha in sys.argv[3:] if sys.argv[2] == "read" else ():
        data = reader.read(sha)
        assert data is not None and len(data) == 4 * 1024 * 1024
        del data
    reader.close()
"""


def test_reading_every_blob_of_a_pack_does_not_keep_the_pack_resident(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror.git"
    shas = _staged_pack(mirror)
    base = _peak_mib(READ, str(mirror), "none", *shas)
    peak = _peak_mib(READ, str(mirror), "read", *shas)
    assert peak - base < ALLOWED_MIB, (
        f"reading {BLOBS * BLOB_SIZE >> 20} MiB of blobs raised the peak from {base:.0f} "
        f"to {peak:.0f} MiB: the pack stays resident")


PUSH = """
    import sys
    from pathlib import Path
    from roam_backend_git.config import parse_settings
    from roam_backend_git.env import child_env
    from roam_backend_git.mirror import Mirror
    from roam_backend_git.runner import GitRunner

    mirror_dir, remote, commit, mode = sys.argv[1:5]
    settings = parse_settings({"git_remote": remote}, Path(mirror_dir))
    runner = GitRunner(Path(mirror_dir), child_env(), str, transport="file")
    mirror = Mirror(Path(mirror_dir), settings, runner)
    if mode == "push":
        assert mirror.push(commit, None).accepted
"""


def test_pushing_a_large_pack_does_not_map_it_whole(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror.git"
    shas = _staged_pack(mirror)
    remote = bare_repo(tmp_path / "remote")
    records = "".join(f"100644 blob {sha}\tk/{n}\0" for n, sha in enumerate(shas)).encode()
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "index"), "GIT_DIR": str(mirror)}
    subprocess.run(["git", "update-index", "--add", "-z", "--index-info"], input=records,
                   env=env, check=True)
    tree = subprocess.run(["git", "write-tree"], env=env, check=True,
                          capture_output=True).stdout.decode().strip()
    commit = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree",
                             tree, "-m", "m"], env=env, check=True,
                            capture_output=True).stdout.decode().strip()
    base = _peak_mib(PUSH, str(mirror), file_url(remote), commit, "none")
    peak = _peak_mib(PUSH, str(mirror), file_url(remote), commit, "push")
    assert subprocess.run(["git", f"--git-dir={remote}", "cat-file", "-e", f"{commit}^{{tree}}"],
                          check=False).returncode == 0
    assert peak - base < ALLOWED_MIB, (
        f"pushing {BLOBS * BLOB_SIZE >> 20} MiB of blobs raised the peak from {base:.0f} to "
        f"{peak:.0f} MiB: git maps the whole pack")



SPANS = """
    import sys
    from pathlib import Path
    from roam_backend_git.backend import GitBackend
    from roam_backend_git.config import parse_settings

    def high_water() -> float:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0]) / 1024

    home, remote, size = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    backend = GitBackend(parse_settings({"git_remote": remote}, home), home / "mirror")
    keys = backend.list("packs/")  # fetches the store
    before = high_water()
    step = size // 3
    for key in keys:
        # a pull reads each pack object in spans, in file order
        for start in range(7, size, step):
            assert len(backend.get(key, start, step)) == min(step, size - start)
    print(before, high_water())
    backend.close()
"""


def test_ranged_reads_of_every_pack_object_keep_no_whole_objects(
        tmp_path: Path, open_backend: Callable[..., GitBackend]) -> None:
    # whole objects were cached for the next ranges (96 MiB of them at most); a pull reads
    # each pack object once, in spans, so the cache only held memory. roam's own process is
    # measured: a file:// remote's git processes are its children.
    repo = bare_repo(tmp_path / "remote")
    for name, value in (("receive.unpackLimit", "1"), ("pack.window", "0")):
        # as a host keeps a push as a pack: 20 loose objects would be deflated for each fetch
        subprocess.run(["git", f"--git-dir={repo}", "config", name, value], check=True)
    writer = open_backend(file_url(repo))
    for number in range(BLOBS):
        writer.put_new(f"packs/{number:02}", os.urandom(BLOB_SIZE))
    writer.swap_ref("HEAD", b"gen-1", None)
    writer.close()
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(SPANS), str(tmp_path / "b"),
                          file_url(repo), str(BLOB_SIZE)], capture_output=True, text=True,
                         check=True).stdout
    before, after = map(float, out.split())
    assert after - before < ALLOWED_MIB, (
        f"ranged reads of {BLOBS * BLOB_SIZE >> 20} MiB of pack objects raised roam's peak "
        f"from {before:.0f} to {after:.0f} MiB")
