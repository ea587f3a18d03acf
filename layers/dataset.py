"""The output folder of a batch run: one GeoParquet dataset partitioned by municipality, and its summary.

::

    results/
      municipality=Fort_Plain/part.parquet     parcel results of one municipality (hive partitioning)
      municipality=Wappinger/part.parquet
      _summary.csv, _summary.json              one row per municipality: profile, status, counts, run time, error
      _towns/Fort_Plain.json                   each municipality's record (what resume reads)
      _gpkg/Fort_Plain.gpkg                    per-municipality GeoPackages, on request
      _staged/Fort_Plain/parcels.parquet ...   statewide mode: the layers cut out for each municipality

Every name that is not the dataset starts with ``_``: Parquet readers (pyarrow, GeoPandas, Dask, DuckDB, Spark)
skip such files, so ``geopandas.read_parquet("results/")`` reads every municipality at once, with a
``municipality`` column from the folder names. After a run the partitions are given one schema (a column one
municipality lacks is added to it as nulls), so every reader sees the same columns in every part.
"""

from __future__ import annotations

import json
import shutil
from contextlib import suppress
from pathlib import Path

from layers.atomic import StoreBusyError, folder_for, writer_lock, written_whole
from layers.errors import LayerError

PARTITION_KEY = "municipality"
PART_FILE = "part.parquet"
STATUS_COLUMNS = ("connected", "mandated", "in_range_not_abutting", "out_of_range", "unoccupied", "no_public_sewer")
SUMMARY_COLUMNS = (
    "municipality",
    "partition",
    "profile",
    "status",
    "parcels",
    *STATUS_COLUMNS,
    "notices_due",
    "notice_deadline",
    "parcels_straddling",
    "run_time_s",
    "worker_peak_mb",
    "error",
)


def partition_path(out_dir: str | Path, partition: str) -> Path:
    return Path(out_dir) / f"{PARTITION_KEY}={partition}" / PART_FILE


def record_path(out_dir: str | Path, partition: str) -> Path:
    return Path(out_dir) / "_towns" / f"{partition}.json"


def gpkg_path(out_dir: str | Path, partition: str) -> Path:
    return Path(out_dir) / "_gpkg" / f"{partition}.gpkg"


def staged_folder(out_dir: str | Path, partition: str) -> Path:
    return Path(out_dir) / "_staged" / partition


def write_partition(out_dir: str | Path, partition: str, frame, *, crs=None) -> str:
    """Write one municipality's parcel results as its partition of the dataset.

    A column of the input named like the partition key is kept as ``input_municipality``: the key comes from the
    folder name, and a reader would otherwise meet two columns of one name.
    """
    from layers.write import with_connection_crs, write_geoparquet

    if PARTITION_KEY in frame.columns:
        frame = frame.rename(columns={PARTITION_KEY: f"input_{PARTITION_KEY}"})
    # connection_x/y stay in the municipality's measuring CRS whatever the dataset's: the column beside them says
    # which (Bellinge's in UTM metres beside Manchester's in New York feet, with nothing to tell them apart; a tester)
    return write_geoparquet(partition_path(out_dir, partition), with_connection_crs(frame), crs=crs)


def write_record(out_dir: str | Path, record: dict) -> None:
    """Save one municipality's record, atomically (a resumed batch trusts what it finds)."""
    path = record_path(out_dir, record["partition"])
    folder_for(path)
    with written_whole(path) as tmp:
        tmp.write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")


def read_record(out_dir: str | Path, partition: str) -> dict | None:
    path = record_path(out_dir, partition)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def is_done(out_dir: str | Path, partition: str, fingerprint: str, *, gpkg: bool = False) -> bool:
    """True when the municipality finished without error, with these inputs, and its results are on disk: with
    ``gpkg``, its GeoPackage too (``--resume --gpkg`` after a batch without ``--gpkg`` kept every town, silently
    writing none)."""
    record = read_record(out_dir, partition)
    return (
        record is not None
        and record.get("status") == "ok"
        and record.get("fingerprint") == fingerprint
        and partition_path(out_dir, partition).exists()
        and (not gpkg or gpkg_path(out_dir, partition).exists())
    )


def remove_results(out_dir: str | Path, partition: str) -> None:
    """Take a municipality's results out of the dataset (it failed: no stale parcels beside its error), and what a
    worker killed while writing them left (``layers.atomic``), so no folder of hidden files stays in the dataset."""
    part = partition_path(out_dir, partition)
    if part.parent.is_dir():
        with suppress(StoreBusyError):  # a worker the scheduler lost is writing it still: left to that worker
            with writer_lock(part, place=str(part)):  # clears the hidden files of a killed writer, as it is taken
                part.unlink(missing_ok=True)
            if not any(part.parent.iterdir()):
                part.parent.rmdir()
    gpkg_path(out_dir, partition).unlink(missing_ok=True)


def holds_batch(out_dir: str | Path) -> bool:
    """Whether the folder holds a batch's output (results, records or a summary)."""
    out = Path(out_dir)
    if not out.exists():
        return False
    return any(p.name.startswith(f"{PARTITION_KEY}=") or p.name in ("_towns", "_summary.json") for p in out.iterdir())


def clear_batch(out_dir: str | Path) -> None:
    """Delete a previous batch's output from the folder: only what a batch writes, nothing else in it."""
    out = Path(out_dir)
    for path in out.iterdir() if out.exists() else ():
        if path.is_dir() and (path.name.startswith(f"{PARTITION_KEY}=") or path.name in ("_towns", "_gpkg", "_staged")):
            shutil.rmtree(path)
        elif path.name in ("_summary.csv", "_summary.json"):
            path.unlink()


def write_summary(out_dir: str | Path, rows: list[dict], batch: dict) -> tuple[str, str]:
    """The summary table as CSV (one row per municipality) and JSON (the same rows, their problems, the run)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / "_summary.csv", out / "_summary.json"
    # As every CSV sewerplan writes (``layers.write.write_csv``): whole or not at all, formulas in a municipality's
    # typed name neutralised, and marked UTF-8 so that a spreadsheet reads "Village of O'Brien-Müller" as typed.
    import pandas as pd

    from layers.write import write_csv

    table = pd.DataFrame([{k: row.get(k) for k in SUMMARY_COLUMNS} for row in rows], columns=list(SUMMARY_COLUMNS))
    # Counts stay whole numbers beside a failed municipality's empty cells: a column with a gap was written as
    # floats, and a spreadsheet showed "476.0" parcels (a tester).
    counts = ["parcels", *STATUS_COLUMNS, "notices_due", "parcels_straddling"]
    table[counts] = table[counts].apply(lambda column: pd.to_numeric(column, errors="coerce").astype("Int64"))
    write_csv(csv_path, table)
    with written_whole(json_path) as where:
        where.write_text(json.dumps(batch | {"municipalities": rows}, indent=2, default=str), encoding="utf-8")
    return str(csv_path), str(json_path)


def unify_partitions(out_dir: str | Path, partitions: list[str]) -> int:
    """Give every partition file the same columns in the same order and types; returns how many were rewritten.

    Municipalities differ in their input attributes (one county's parcels carry columns another's lack) and in
    result columns (only a municipality with manholes gets ``control_manhole``). Readers of a dataset take the
    schema of one part, so a column missing from it would silently vanish. Each part that lacks a column gets it
    as nulls; nothing is dropped or converted that is not null.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = [partition_path(out_dir, p) for p in partitions if partition_path(out_dir, p).exists()]
    if len(files) < 2:
        return 0
    schemas = [pq.read_schema(f) for f in files]
    try:
        unified = pa.unify_schemas([s.remove_metadata() for s in schemas], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise LayerError(f"The municipalities' results cannot share one schema: {exc}") from exc
    rewritten = 0
    for path, schema in zip(files, schemas, strict=True):
        if schema.remove_metadata().equals(unified):
            continue
        table = pq.read_table(path)
        columns = [
            table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(len(table), f.type)
            for f in unified
        ]
        meta = {k: v for k, v in (schema.metadata or {}).items() if k != b"pandas"}
        out = pa.Table.from_arrays(columns, schema=unified.with_metadata(meta))
        with written_whole(path) as tmp:
            pq.write_table(out, tmp, row_group_size=65_536)
        rewritten += 1
    return rewritten
