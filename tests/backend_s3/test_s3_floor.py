"""Issue 19 (1) on S3: two endpoint names for one bucket are one store with one floor."""

from __future__ import annotations

from pathlib import Path

from campaign.harness import Home, Runner, Store, new_key
from campaign.hostile import head_state, replay_head

from support.s3_servers import S3Server

pytest_plugins = ("support.s3_servers",)


def test_an_endpoint_alias_keeps_the_floor(moto_s3: S3Server, tmp_path: Path) -> None:
    settings = moto_s3.settings(moto_s3.fresh_bucket())
    store = Store("s3", settings, moto_s3.env(), key=new_key())
    home = Home(tmp_path / "a", "a", store, Runner())
    home.write("SOUL.md", "soul v1\n")
    assert home.roam("init", "--create-remote").code == 0
    assert home.roam("push").code == 0
    old = head_state(store)
    home.write("SOUL.md", "soul v2\n")
    assert home.roam("push").code == 0
    alias = settings["s3_endpoint_url"].replace("127.0.0.1", "localhost")
    assert alias != settings["s3_endpoint_url"]
    config = home.root / "config.yaml"
    config.write_text(config.read_text().replace(settings["s3_endpoint_url"], alias))
    replay_head(store, old)  # the provider serves generation 1 again
    pulled = home.roam("pull", "--apply")
    assert pulled.code == 1 and "rollback refused" in pulled.err, pulled.out + pulled.err
    assert (home.root / "SOUL.md").read_text() == "soul v2\n"
