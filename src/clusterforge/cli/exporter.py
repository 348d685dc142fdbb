"""`clusterforge exporter`: clusterforge's metrics, served on /metrics or written for node-exporter."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterforge.errors import ClusterforgeError, ExitCode


class ExporterUsage(ClusterforgeError):
    exit_code = ExitCode.BAD_INPUT


def exporter(
    listen: Annotated[
        str | None, typer.Option(help="serve /metrics on ADDR:PORT (e.g. 127.0.0.1:9464) until stopped")
    ] = None,
    textfile_dir: Annotated[
        Path | None,
        typer.Option(help="write DIR/clusterforge.prom once (node-exporter textfile collector) and exit"),
    ] = None,
    node: Annotated[str | None, typer.Option(help="with --textfile-dir: only this node's series")] = None,
    db: Annotated[
        Path | None, typer.Option(help="records database (default: $CLUSTERFORGE_DB or the state folder)")
    ] = None,
) -> None:
    """clusterforge's verdicts, certificates, checks, burn-in scores and pool state as Prometheus metrics."""
    from clusterforge.metrics import exporter as ex

    if (listen is None) == (textfile_dir is None):
        raise ExporterUsage("exporter: give exactly one of --listen ADDR:PORT or --textfile-dir DIR")
    if textfile_dir is not None:
        typer.echo(ex.write_textfile(textfile_dir, ex.metrics_text(db, node)))
        return
    if node is not None:
        raise ExporterUsage("exporter: --node goes with --textfile-dir (the server serves every node)")
    assert listen is not None
    srv = ex.server(listen, db)
    typer.echo(f"serving {listen} /metrics", err=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
