"""Reading layers from a real PostgreSQL/PostGIS server (CI starts one; see .ci/run)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
import shapely
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from layers.crs import measuring_crs
from layers.errors import LayerError
from layers.read import CURVES_AS_SEGMENTS, LayerSource, find_layers, load_layers, parse_source, read_source
from layers.sample import sample_town

pytestmark = pytest.mark.postgres
TARGET = measuring_crs("EPSG:2260")


@pytest.fixture(scope="module")
def town_schema(pg_url):
    """The sample town written to its own schema, as a county GIS office would load it."""
    schema = f"town_{uuid.uuid4().hex[:8]}"
    town = sample_town(300)
    engine = create_engine(pg_url, poolclass=NullPool)
    with engine.begin() as con:
        con.execute(text(f"CREATE SCHEMA {schema}"))
        for name in ("parcels", "buildings", "streets", "mains"):
            _write_table(con, f"{schema}.{name}", town[name])
    yield schema, town
    with engine.begin() as con:
        con.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    engine.dispose()


def _write_table(con, table: str, frame) -> None:
    cols = [c for c in frame.columns if c != "geometry"]
    types = {c: "double precision" if frame[c].dtype.kind in "fi" else "text" for c in cols}
    geom_type = frame.geometry.geom_type.iloc[0]
    con.execute(
        text(
            f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in types.items())}, "
            f"geom geometry({geom_type}, 2260))"
        )
    )
    rows = frame[cols].astype(object).where(frame[cols].notna(), None).to_dict("records")
    for row, wkb in zip(rows, shapely.to_wkb(frame.geometry.values, hex=True), strict=True):
        row["geom_wkb"] = wkb
    placeholders = ", ".join(f":{c}" for c in cols)
    con.execute(
        text(
            f"INSERT INTO {table} ({', '.join(cols)}, geom) VALUES ({placeholders}, "
            "ST_GeomFromWKB(decode(:geom_wkb, 'hex'), 2260))"
        ),
        rows,
    )


def test_layers_read_from_postgis_give_the_same_answer(pg_url, town_schema):
    schema, town = town_schema
    sources = {
        kind: parse_source(kind, f"{pg_url}#{schema}.{kind}") for kind in ("parcels", "buildings", "streets", "mains")
    }
    layers = load_layers(sources, target_crs=TARGET)
    assert len(layers.parcels) == 300 and layers.parcels.crs == TARGET
    profile = load_profile("fort-plain")
    from_db = analyze_mandates(
        layers.parcels, layers.mains, streets=layers.streets, buildings=layers.buildings, profile=profile
    ).summary["counts"]
    parcels = town["parcels"].assign(connected=town["parcels"]["connected"] == "Y")
    direct = analyze_mandates(
        parcels, town["mains"], streets=town["streets"], buildings=town["buildings"], profile=profile
    ).summary["counts"]
    assert from_db == direct


def test_tables_found_by_name(pg_url, town_schema):
    schema, _ = town_schema
    found = find_layers(pg_url)
    assert found["parcels"].layer.endswith("parcels")
    assert {f"{schema}.parcels", f"{schema}.mains"} <= {s for s in _tables(pg_url)}


def _tables(url):
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as con:
        rows = con.execute(text("SELECT f_table_schema, f_table_name FROM geometry_columns")).all()
    engine.dispose()
    return [f"{s}.{t}" for s, t in rows]


def test_arcs_in_a_postgis_table_are_made_straight_in_the_database(pg_url):
    """A table loaded from ArcGIS holds a cul-de-sac's lot as a CURVEPOLYGON: GEOS cannot read it, and the layer
    was refused whole. PostGIS makes each arc straight segments of 0.1 degree, and the report says so."""
    schema = f"curves_{uuid.uuid4().hex[:8]}"
    engine = create_engine(pg_url, poolclass=NullPool)
    arc = "655900 1008000, 656000 1008100, 656100 1008000, 656000 1007900, 655900 1008000"
    circle = f"CURVEPOLYGON(CIRCULARSTRING({arc}))"  # 100 ft radius
    with engine.begin() as con:
        con.execute(text(f"CREATE SCHEMA {schema}"))
        con.execute(text(f'CREATE TABLE {schema}.parcels (parcel_id text, "Owner ""Name""" text, geom geometry)'))
        con.execute(
            text(
                f"INSERT INTO {schema}.parcels VALUES ('CUL-DE-SAC', 'A', ST_GeomFromText(:c, 2260)), "
                "('SQUARE', 'B', ST_MakeEnvelope(656300, 1008000, 656400, 1008100, 2260))"
            ),
            {"c": circle},
        )
    try:
        for source in (
            parse_source("parcels", f"{pg_url}#{schema}.parcels"),
            LayerSource("parcels", pg_url, f"{schema}.parcels", where=("parcel_id", "CUL-DE-SAC")),
        ):
            frame = read_source(source)
            lots = frame.set_index("parcel_id").geometry
            assert lots["CUL-DE-SAC"].geom_type == "Polygon"
            assert lots["CUL-DE-SAC"].area == pytest.approx(np.pi * 100**2, rel=1e-5)
            assert list(frame.columns) == ["parcel_id", 'Owner "Name"', "geom"]
            assert frame.attrs["read_warnings"] == (CURVES_AS_SEGMENTS,)
        assert lots.index.tolist() == ["CUL-DE-SAC"]  # the subset read kept its filter
    finally:
        with engine.begin() as con:
            con.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


def test_bad_table_names_are_refused(pg_url):
    from layers.read import read_source

    with pytest.raises(LayerError, match="is not a table name"):
        read_source(parse_source("parcels", f"{pg_url}#parcels; DROP TABLE x"))
    with pytest.raises(LayerError, match="has no geometry column"):
        read_source(parse_source("parcels", f"{pg_url}#public.no_such_table"))


def test_wrong_password_is_a_clear_error_without_the_password(pg_url):
    bad = pg_url.replace("sewerplan:sewerplan@", "sewerplan:hunter2@")
    with pytest.raises(LayerError) as info:
        find_layers(bad)
    assert "hunter2" not in str(info.value) and "Cannot list the tables" in str(info.value)


def test_listing_a_databases_layers_holds_while_another_session_drops_tables(pg_url, town_schema):
    """A publish or a run drops and creates tables while planners read: listing the layers must not fail then
    (PostGIS's geometry_columns view did, with 'could not open relation with OID')."""
    import threading

    schema, _ = town_schema
    churn = f"churn_{uuid.uuid4().hex[:8]}"
    stop, errors = threading.Event(), []
    engine = create_engine(pg_url, poolclass=NullPool)
    with engine.begin() as con:
        con.execute(text(f"CREATE SCHEMA {churn}"))

    def drop_and_create():
        try:
            with engine.connect() as con:
                while not stop.is_set():
                    with con.begin():
                        for k in range(20):
                            con.execute(text(f"CREATE TABLE {churn}.t{k} (id int, geom geometry(Point, 2260))"))
                    with con.begin():
                        con.execute(text(", ".join(f"{churn}.t{k}" for k in range(20)).join(("DROP TABLE ", ""))))
        except Exception as exc:  # the churn itself failing would make the test prove nothing
            errors.append(exc)

    worker = threading.Thread(target=drop_and_create)
    worker.start()
    try:
        for _ in range(40):
            found = find_layers(f"{pg_url}#{schema}")
            assert {"parcels", "mains"} <= set(found)
    finally:
        stop.set()
        worker.join()
        with engine.begin() as con:
            con.execute(text(f"DROP SCHEMA {churn} CASCADE"))
        engine.dispose()
    assert errors == []
