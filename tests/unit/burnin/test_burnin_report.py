"""The report from a records database: one self-contained HTML page (structure checked), and JSON."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from burnin_data import synthetic
from typer.testing import CliRunner

from clusterforge.burnin import report
from clusterforge.burnin.runner import plan_extract
from clusterforge.cli import app as main_app
from clusterforge.records.burnin import BurninDB

NODES = ["roce-01", "roce-02", "ib-01", "ib-02"]


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.stack: list[str] = []
        self.text: dict[str, list[str]] = {}
        self.row: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag == "tr" and "data-node" in a:
            self.row = a["data-node"]
            self.text[self.row] = [a.get("class", "")]

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self.row = None

    def handle_data(self, data: str) -> None:
        if self.row:
            self.text[self.row].append(data)


@pytest.fixture
def recorded(tmp_path: Path, lab_plan: dict[str, Any]) -> tuple[Path, str]:
    rows = synthetic(
        lab_plan,
        3,
        noisy=("ib-02",),
        factors={("roce-01", "nic", "rail3"): 0.7, ("ib-01", "gpu", "gpu0"): 0.6},
    )
    path = tmp_path / "records.db"
    with BurninDB(path) as db:
        bid = db.create(
            "lab", NODES, iterations=3, duration_s=None, options={}, plan=plan_extract(lab_plan, NODES)
        )
        db.add_session(bid, "s1")
        for it in (1, 2, 3):
            db.commit_iteration(
                bid, it, "s1", f"2030-01-01T00:0{it}:00Z", 30.0, [m for i, m in rows if i == it]
            )
    return path, bid


def test_html_is_one_self_contained_page_with_the_outliers(recorded: tuple[Path, str]) -> None:
    path, bid = recorded
    with BurninDB(path) as db:
        text = report.to_html(db, bid)
    page = Page()
    page.feed(text)
    tags = [t for t, _ in page.tags]
    assert (
        tags.count("html") == 1
        and tags.count("table") >= 2
        and ("table", {"class": "sortable", "id": "verdicts"}) in page.tags
    )
    for tag, a in page.tags:  # nothing is fetched: images are data URIs, links are anchors
        for attr in ("src", "href"):
            if attr in a:
                assert a[attr].startswith(("data:", "#")), (tag, a[attr][:80])
        assert tag not in ("link", "script") or "src" not in a
    imgs = [a["src"] for t, a in page.tags if t == "img"]
    assert len(imgs) >= 4 + 6  # a figure per node, a box plot per fleet
    for src in imgs:
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(page.text) == set(NODES)
    verdict = {n: v[0] for n, v in page.text.items()}
    assert verdict == {"roce-01": "fail", "ib-01": "fail", "roce-02": "pass", "ib-02": "pass"}
    assert "rail 3 NIC mlx5_3" in "".join(page.text["roce-01"])
    assert "GPU 0" in "".join(page.text["ib-01"])
    assert all(f'id="node-{n}"' in text for n in NODES)
    assert report.READY in text and "http://" not in text and "https://" not in text


def test_json_report(recorded: tuple[Path, str]) -> None:
    path, bid = recorded
    with BurninDB(path) as db:
        doc = json.loads(report.to_json(db, bid))
    assert doc["burnin_id"] == bid and [i["iteration"] for i in doc["iterations"]] == [1, 2, 3]
    assert {n: v["verdict"] for n, v in doc["verdicts"].items()} == {
        "roce-01": "fail",
        "roce-02": "pass",
        "ib-01": "fail",
        "ib-02": "pass",
    }
    assert doc["verdicts"]["roce-01"]["components"] == ["rail 3 NIC mlx5_3"]
    low = [u for u in doc["units"] if u["low"]]
    assert {(u["node"], u["component"]) for u in low if u["test"] == "ib_write_bw.loopback"} == {
        ("roce-01", "rail3")
    }
    assert doc["coverage"]["leaves"] == "16/16" and len(doc["pairs"]) == 16
    assert all(len(u["series"]) == 3 for u in doc["units"])


def test_report_cli(recorded: tuple[Path, str], tmp_path: Path) -> None:
    path, bid = recorded
    runner = CliRunner()
    out_html = tmp_path / "r.html"
    db = ["--db", str(path)]
    res = runner.invoke(main_app, ["report", "burnin", bid[:8], "--output", str(out_html), *db])
    assert res.exit_code == 0, res.output
    assert out_html.read_text().startswith("<!DOCTYPE html>")
    res = runner.invoke(main_app, ["report", "burnin", bid[:8], "--format", "json", *db])
    assert res.exit_code == 0 and json.loads(res.stdout)["burnin_id"] == bid
    res = runner.invoke(main_app, ["report", "burnin", "nope", "--format", "json", *db])
    assert res.exit_code == 2 and "no burn-in run" in res.output
    assert runner.invoke(main_app, ["report", "burnin", bid, "--format", "junit", *db]).exit_code == 2


def test_report_cli_old_options(recorded: tuple[Path, str], tmp_path: Path) -> None:
    """`--html FILE` / `--json FILE` work for one more release, each with a deprecation on stderr."""
    path, bid = recorded
    out_html, out_json = tmp_path / "r.html", tmp_path / "r.json"
    res = CliRunner().invoke(
        main_app,
        ["report", "burnin", bid[:8], "--html", str(out_html), "--json", str(out_json), "--db", str(path)],
    )
    assert res.exit_code == 0, res.output
    assert out_html.read_text().startswith("<!DOCTYPE html>")
    assert json.loads(out_json.read_text())["burnin_id"] == bid
    assert "--html is deprecated" in res.stderr and "--json is deprecated" in res.stderr
