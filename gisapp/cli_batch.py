"""``sewerplan batch``: many municipalities in one run, each as its own task on a Dask cluster."""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from gisapp.batch import dask_client, refuse_over_a_batch, run_batch
from gisapp.cli_common import user_errors
from layers.manifest import read_manifest

MAX_ROWS_SHOWN = 60


@click.command()
@click.option(
    "--manifest",
    "manifest_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="TOML file listing the municipalities (profile, data, mapping, settings) or a statewide layer.",
)
@click.option("--out", "out_dir", required=True, metavar="FOLDER", help="Folder for the results dataset and summary.")
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Dask scheduler, e.g. tcp://host:8786; default: a LocalCluster sized to this machine.",
)
@click.option("--workers", type=click.IntRange(1), help="LocalCluster worker processes (default: one per core).")
@click.option(
    "--memory-limit",
    metavar="SIZE",
    help="Memory per LocalCluster worker, e.g. 4GB (default: the machine's memory shared equally).",
)
@click.option("--gpkg", is_flag=True, help="Also write one GeoPackage per municipality, as analyze --out does.")
@click.option("--resume", is_flag=True, help="Run only the municipalities that failed, are missing or changed.")
@click.option("--overwrite", is_flag=True, help="Delete a previous batch's results in --out first.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document.")
@user_errors
def batch(manifest_path, out_dir, scheduler, workers, memory_limit, gpkg, resume, overwrite, as_json):
    """Analyse many municipalities, each under its own ordinance, in one run on Dask."""
    if scheduler and (workers or memory_limit):
        raise click.UsageError("--workers and --memory-limit size a LocalCluster; a --scheduler has its own workers.")
    if resume and overwrite:
        raise click.UsageError("Give --resume or --overwrite, not both.")
    manifest = read_manifest(manifest_path)
    refuse_over_a_batch(out_dir, resume=resume, overwrite=overwrite, how=("give --resume", "--overwrite"))
    console = Console(stderr=True, quiet=as_json)
    with dask_client(scheduler, workers=workers, memory_limit=memory_limit) as cluster:
        console.print(f"{len(manifest.towns)} municipalities on {cluster.description}", highlight=False)
        if cluster.dashboard:
            console.print(f"Dask dashboard: {cluster.dashboard}", highlight=False)
        with _Bar(console) as bar:
            result = run_batch(
                manifest,
                out_dir,
                client=cluster.client,
                cluster_description=cluster.description,
                gpkg=gpkg,
                threads=cluster.threads,
                resume=resume,
                overwrite=overwrite,
                on_start=bar.start,
                on_done=bar.done,
            )
    if as_json:
        click.echo(json.dumps(result.batch | {"municipalities": result.rows}, indent=2, default=str))
    else:
        _print(result, out_dir)
    if result.failed:
        sys.exit(1)


class _Bar:
    """Municipalities done out of those to run, on stderr (silent when stderr is not a terminal or with --json)."""

    def __init__(self, console: Console):
        self.console = console
        self.progress = None
        self.task = None

    def __enter__(self):
        if not self.console.quiet and self.console.is_terminal:
            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
        return self

    def start(self, todo: int, kept: int) -> None:
        if kept:
            self.console.print(f"Resuming: {kept} municipalities already done, {todo} to run.", highlight=False)
        if self.progress is not None:
            self.task = self.progress.add_task("analysing", total=todo)

    def done(self, record: dict) -> None:
        if record["status"] != "ok":
            self.console.print(f"[red]failed[/red]: {record['municipality']}: {record['error']}", highlight=False)
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, advance=1, description=f"{record['municipality']} {record['status']}")

    def __exit__(self, *exc):
        if self.progress is not None:
            self.progress.stop()


def _print(result, out_dir: str) -> None:
    out = Console()
    rows = result.rows
    table = Table(title=f"{len(rows)} municipalities: {result.batch['ok']} ok, {result.batch['failed']} failed")
    for col in ("municipality", "profile", "status", "parcels", "mandated", "notices due", "run s"):
        table.add_column(col, justify="right" if col in ("parcels", "mandated", "notices due", "run s") else "left")
    shown = rows if len(rows) <= MAX_ROWS_SHOWN else [r for r in rows if r.get("status") != "ok"]
    for r in shown:
        table.add_row(
            r["municipality"],
            str(r.get("profile") or ""),
            r.get("status", ""),
            f"{r['parcels']:,}" if r.get("parcels") is not None else "",
            f"{r['mandated']:,}" if r.get("mandated") is not None else "",
            f"{r['notices_due']:,}" if r.get("notices_due") is not None else "",
            f"{r['run_time_s']:.1f}" if r.get("run_time_s") is not None else "",
        )
    out.print(table)
    if len(rows) > MAX_ROWS_SHOWN:
        out.print(f"(only the failed are listed; every municipality is in {result.summary_csv})", highlight=False)
    for r in rows:
        if r.get("status") != "ok" and r.get("error"):
            out.print(f"{r['municipality']}: {r['error']}", highlight=False)
    out.print(
        f"Results: {out_dir} (GeoParquet, one partition per municipality, {result.batch['output_crs']}); "
        f"summary: {result.summary_csv}, {result.summary_json}.",
        highlight=False,
    )
    if result.failed:
        out.print("Fix the failed municipalities, then run again with --resume to run only those.", highlight=False)
