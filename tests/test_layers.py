"""Reading, validating and normalising input layers: formats, CRS, geometry, columns, values."""

from __future__ import annotations

import json
import struct
import threading
import warnings
import zipfile

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest
import shapely
from shapely.geometry import LineString, Point, Polygon, box

from analysis.errors import Fix
from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from layers.crs import check_and_reproject, check_layers_together, measuring_crs
from layers.errors import LayerError, LayerValidationError, redact_url
from layers.heard import quiet
from layers.read import (
    CURVES_AS_SEGMENTS,
    TEXT_AS_CP1252,
    LayerSource,
    find_layers,
    load_layers,
    parse_source,
    read_connected_ids,
    read_mapping,
    read_ogr,
    read_source,
)
from layers.schema import BUILDINGS, MAINS, MAX_LIVING_UNITS, PARCELS, SPECS, SUBDIVISIONS
from layers.validate import ColumnMapping, prepare_layer
from layers.write import write_results
from tests.conftest import CRS, frame, ny_frame

TARGET = measuring_crs("EPSG:2260")


def parcels_frame(crs=CRS, **extra):
    rows = [
        {"SBL": "1.1-1-1", "OWNER": "SMITH JOHN", "geometry": box(0, 25, 50, 125)},
        {"SBL": "1.1-1-2", "OWNER": "<b>O'BRIEN</b> & Co", "geometry": box(60, 25, 110, 125)},
    ]
    for row in rows:
        row.update(extra)
    return ny_frame(rows, crs=crs)


def mains_frame(crs=CRS):
    return ny_frame([{"PIPE_ID": "M-1", "TYPE": "Sanitary", "geometry": LineString([(-100, 0), (300, 0)])}], crs=crs)


def prepare(gdf, spec=PARCELS, **kw):
    return prepare_layer(gdf, spec, label=f"{spec.kind} (test)", target_crs=TARGET, **kw)


def errors(problems):
    return [p for p in problems if p.severity == "error"]


def test_common_column_names_are_detected_and_originals_kept():
    out, problems = prepare(parcels_frame())
    assert not errors(problems)
    assert list(out["parcel_id"]) == ["1.1-1-1", "1.1-1-2"]
    assert list(out["owner_name"]) == ["SMITH JOHN", "<b>O'BRIEN</b> & Co"]  # exactly as given
    assert "SBL" in out.columns and "OWNER" in out.columns


def test_columns_headed_as_a_spreadsheet_heads_them_are_found_by_name():
    """ "Site Address" and "Parcel ID" were not found (only site_addre was), on the command line or as the Data page's
    suggestion (a tester): a name written with spaces, dots or dashes is found as its field's name."""
    from layers.schema import column_for

    rows = [
        {"Parcel ID": "1.1-1-1", "Owner Name": "SMITH JOHN", "Site Address": "1 Main St", "Mail.Zip": "13339"},
        {"Parcel ID": "1.1-1-2", "Owner Name": "ROE ANN", "Site Address": "3 Main St", "Mail.Zip": "13339"},
    ]
    gdf = ny_frame([r | {"geometry": box(60 * i, 25, 60 * i + 50, 125)} for i, r in enumerate(rows)])
    out, problems = prepare(gdf)
    assert not errors(problems)
    assert list(out["parcel_id"]) == ["1.1-1-1", "1.1-1-2"] and list(out["site_address"]) == ["1 Main St", "3 Main St"]
    assert list(out["owner_name"]) == ["SMITH JOHN", "ROE ANN"] and list(out["mail_zip"]) == ["13339", "13339"]
    # a name as it is wins over one written otherwise, and two columns written alike are left for the user to map
    owner = PARCELS.field("owner_name")
    assert column_for(owner, ["Owner Name", "OWNER"]) == "OWNER"
    assert column_for(owner, ["Owner Name", "owner-name"]) is None


def test_a_septic_column_says_which_parcels_have_a_private_system():
    """Poughkeepsie § 168-22.3C notices read ``private_system``; offices call it SEPTIC, ON_SEPTIC ..."""
    out, problems = prepare(parcels_frame().assign(SEPTIC=["Y", "N"]))
    assert not errors(problems)
    assert list(out["private_system"]) == ["Y", "N"]


def test_missing_required_column_lists_the_columns():
    gdf = parcels_frame().rename(columns={"SBL": "TAXNUM"})
    out, problems = prepare(gdf)
    assert out is None
    assert "has no parcel_id column" in problems[0].message
    assert "Columns: TAXNUM, OWNER" in problems[0].message
    assert problems[0].fix == Fix("map", "parcels.parcel_id", "COLUMN") and "parcels.parcel_id" in problems[0].message
    assert "--" not in problems[0].message  # the fix is named by what it is; the CLI words it as a flag


def test_explicit_mapping_wins():
    gdf = parcels_frame().rename(columns={"SBL": "TAXNUM"})
    out, problems = prepare(gdf, mapping=read_mapping(None, ("parcels.parcel_id=TAXNUM",)))
    assert not errors(problems) and list(out["parcel_id"]) == ["1.1-1-1", "1.1-1-2"]


def test_a_field_mapped_to_another_column_keeps_the_layers_own_column_of_its_name():
    """``--map parcels.owner_name=OWNER2`` beside the layer's own ``owner_name``: the field was overwritten and the
    layer's column lost without a word (a new user found it with ``site_address=owner_name``). It is kept as
    ``input_owner_name``; and two fields given each other's columns are swapped, not both the one written first."""
    gdf = parcels_frame().assign(owner_name=["OWN A", "OWN B"], OWNER2=["NEW A", "NEW B"], SITE=["1 Elm", "2 Elm"])
    out, problems = prepare(gdf, mapping=read_mapping(None, ("parcels.owner_name=OWNER2",)))
    assert not errors(problems)
    assert list(out["owner_name"]) == ["NEW A", "NEW B"] and list(out["input_owner_name"]) == ["OWN A", "OWN B"]
    swapped = gdf.rename(columns={"owner_name": "site_address"}).assign(owner_name=gdf["SITE"]).drop(columns="SITE")
    out, problems = prepare(
        swapped, mapping=read_mapping(None, ("parcels.owner_name=site_address", "parcels.site_address=owner_name"))
    )
    assert not errors(problems)
    assert list(out["owner_name"]) == ["OWN A", "OWN B"] and list(out["site_address"]) == ["1 Elm", "2 Elm"]


def test_mapping_file(tmp_path):
    path = tmp_path / "mapping.toml"
    path.write_text('[parcels]\nparcel_id = "TAXNUM"\n[mains.values.sewer_type]\nGRAV = "sanitary"\n')
    mapping = read_mapping(str(path))
    assert mapping.columns == {"parcels": {"parcel_id": "TAXNUM"}}
    assert mapping.values == {"mains": {"sewer_type": {"GRAV": "sanitary"}}}
    with pytest.raises(LayerError, match="expected LAYER.FIELD=COLUMN"):
        read_mapping(None, ("parcel_id=SBL",))
    bad = tmp_path / "bad.toml"
    bad.write_text('[lots]\nparcel_id = "X"\n')
    with pytest.raises(LayerError, match=r"\[lots\] is not a layer"):
        read_mapping(str(bad))


def test_mapping_to_a_missing_column_says_which_exist():
    out, problems = prepare(parcels_frame(), mapping=read_mapping(None, ("parcels.owner_name=OWNERNAME",)))
    assert out is None and "no such column. Columns: SBL, OWNER" in problems[0].message


def test_a_mapping_to_the_geometry_is_refused_not_read_as_ids():
    # parcels.parcel_id=geometry (a hand-made form) was taken: every parcel's ID was its polygon's WKT.
    gdf = parcels_frame()
    out, problems = prepare(gdf, mapping=read_mapping(None, (f"parcels.parcel_id={gdf.geometry.name}",)))
    assert out is None and f"is column '{gdf.geometry.name}', but that is" in problems[0].message
    assert "shapes, not a column of values. Columns: SBL, OWNER" in problems[0].message


def test_no_crs_is_refused_with_how_to_fix():
    out, problems = prepare(parcels_frame(crs=None))
    assert out is None
    assert problems[0].check == "no_crs"
    assert "give the CRS it was drawn in" in problems[0].message and ".prj" in problems[0].message
    assert problems[0].fix == Fix("layer_crs", "parcels", "EPSG:2260") and "--" not in problems[0].message


def test_no_crs_with_degrees_for_coordinates_is_told_to_give_longitude_latitude():
    """Parcels in degrees without a .prj were told to give EPSG:2260, the measuring CRS, and with it were refused a
    second time as degrees in a projected CRS: the degrees are seen the first time."""
    lonlat = parcels_frame().to_crs(4326).set_crs(None, allow_override=True)
    out, problems = prepare(lonlat)
    assert out is None and problems[0].check == "no_crs"
    assert "its coordinates look like degrees of longitude and latitude (-74.6" in problems[0].message
    assert "give EPSG:4326 (longitude/latitude) as the parcels layer's CRS" in problems[0].message
    assert problems[0].fix == Fix("layer_crs", "parcels", "EPSG:4326") and "--" not in problems[0].message
    out, problems = prepare(lonlat, assume_crs="EPSG:4326")
    assert not errors(problems) and out.crs == TARGET
    # small numbers of a town's own grid, read as degrees, lie far from New York: told as any file without a CRS
    grid = frame([{"SBL": "A", "geometry": box(10, 20, 60, 120)}], crs=None)
    out, problems = prepare(grid)
    assert out is None and problems[0].fix == Fix("layer_crs", "parcels", "EPSG:2260")
    assert "degrees" not in problems[0].message


def test_no_crs_with_a_crs_given_by_the_user():
    out, problems = prepare(parcels_frame(crs=None), assume_crs="EPSG:2260")
    assert not errors(problems) and out.crs == TARGET


def test_degrees_are_reprojected_before_measuring():
    lonlat = parcels_frame().to_crs(4326)
    out, problems = prepare(lonlat)
    assert not errors(problems)
    assert out.crs == TARGET
    np.testing.assert_allclose(out.geometry.area, [5000, 5000], rtol=1e-6)


def test_projected_crs_with_degree_coordinates_is_refused():
    wrong = parcels_frame().to_crs(4326).set_crs(CRS, allow_override=True)
    out, problems = prepare(wrong)
    assert out is None and problems[0].check == "crs_mismatch"
    assert "look like degrees" in problems[0].message
    assert "give EPSG:4326 as the parcels layer's CRS" in problems[0].message
    assert problems[0].fix == Fix("layer_crs", "parcels", "EPSG:4326")


def test_geographic_crs_with_projected_coordinates_is_refused():
    wrong = frame([{"SBL": "A", "geometry": box(457000, 1490000, 457050, 1490100)}], crs="EPSG:4326")
    out, problems = prepare(wrong)
    assert out is None and "not longitudes and latitudes" in problems[0].message


def test_declared_crs_that_does_not_fit_is_refused():
    # New York East feet, labelled New York Long Island feet: the parcels would land in the Adirondacks.
    wrong = frame([{"SBL": "A", "geometry": box(457000, 1490000, 457050, 1490100)}], crs="EPSG:2263")
    out, problems = prepare(wrong)
    assert out is None and problems[0].check == "crs_mismatch"
    assert "outside where that CRS is used" in problems[0].message


def test_a_layer_alone_outside_the_measuring_crs_is_told_its_crs_is_wrong_not_to_measure_there(tmp_path):
    """Mains in New York East feet whose file declared UTM zone 18N landed off Central America, beside parcels in New
    York: the refusal told the town to measure in EPSG:32618, where the parcels then lay 2,000 miles off (session 23).
    The mains are now told their CRS is wrong, naming the layers that lie where the measuring CRS is used. A town
    whose every layer lies elsewhere is still told to measure where it lies."""
    parcels, mains = tmp_path / "parcels.gpkg", tmp_path / "mains.gpkg"
    parcels_frame().to_file(parcels)
    mains_frame().set_crs("EPSG:32618", allow_override=True).to_file(mains)
    sources = {"parcels": LayerSource("parcels", str(parcels)), "mains": LayerSource("mains", str(mains))}
    with pytest.raises(LayerValidationError) as refused:
        load_layers(sources, target_crs=TARGET)
    (problem,) = errors(refused.value.problems)
    assert problem.layer == "mains" and problem.fix == Fix("layer_crs", "mains", "EPSG:2260")
    said = "while the parcels layer given with it lies where it is used: WGS 84 / UTM zone 18N is most likely not"
    assert said in problem.message and "measure in" not in problem.message
    parcels_frame().set_crs("EPSG:32618", allow_override=True).to_file(parcels)  # the whole town "off Panama"
    with pytest.raises(LayerValidationError) as refused:
        load_layers(sources, target_crs=TARGET)
    assert {p.fix for p in errors(refused.value.problems)} == {Fix("crs", "", "EPSG:32618")}


def test_a_wrong_crs_given_for_a_layer_whose_file_declares_a_fitting_one_is_told_that_one():
    """EPSG:2260 given for parcels whose .prj rightly said UTM zone 18N: the refusal ended "Use --layer-crs
    parcels=EPSG:2260", the value just given (a tester). It now names the CRS the file declares."""
    utm = parcels_frame().to_crs("EPSG:32618")
    out, problems = prepare(utm, override_crs="EPSG:2260")
    assert out is None and problems[0].fix == Fix("layer_crs", "parcels", "EPSG:32618")
    assert "the CRS its file declares, WGS 84 / UTM zone 18N (EPSG:32618), does" in problems[0].message
    # a file declaring a CRS that does not fit either keeps the plain refusal
    wrong = frame([{"SBL": "A", "geometry": box(457000, 1490000, 457050, 1490100)}], crs="EPSG:2263")
    out, problems = prepare(wrong, override_crs="EPSG:4326")
    assert out is None and "not longitudes and latitudes" in problems[0].message


def test_the_crs_given_for_a_layer_replaces_a_declared_one_that_does_not_fit():
    """The fix the refusal names works: the layer's CRS given by name replaces the .prj's, and says so."""
    wrong = frame([{"SBL": "A", "geometry": box(457000, 1490000, 457050, 1490100)}], crs="EPSG:2263")
    out, problems = prepare(wrong, override_crs="EPSG:2260")
    assert not errors(problems) and out.crs == TARGET
    replaced = [p for p in problems if p.check == "crs_replaced"]
    assert replaced and replaced[0].severity == "warning" and "EPSG:2263" not in replaced[0].message
    assert "NAD83 / New York Long Island (ftUS)" in replaced[0].message
    # A CRS given for every layer (the data's) only fills in where none is declared: the lie is still refused.
    out, problems = prepare(wrong, assume_crs="EPSG:2260")
    assert out is None and problems[0].check == "crs_mismatch"
    # And a replacement that does not fit either is refused as a declared one would be.
    out, problems = prepare(wrong, override_crs="EPSG:4326")
    assert out is None and "not longitudes and latitudes" in problems[0].message


def test_invalid_geometry_repaired_and_reported():
    bowtie = Polygon([(0, 0), (100, 100), (100, 0), (0, 100), (0, 0)])
    gdf = ny_frame([{"SBL": "BOW", "geometry": bowtie}, {"SBL": "OK", "geometry": box(200, 0, 300, 100)}])
    out, problems = prepare(gdf)
    assert not errors(problems)
    fixed = [p for p in problems if p.check == "invalid_geometry"][0]
    assert fixed.severity == "fixed" and fixed.feature_ids == ("BOW",) and "area changed by" in fixed.message
    assert out.geometry.is_valid.all()
    assert out.geometry.iloc[0].geom_type in ("Polygon", "MultiPolygon")
    assert out.geometry.iloc[0].area == pytest.approx(5000)


@pytest.mark.parametrize(
    "sliver",
    [
        Polygon([(200, 0), (250, 0), (300, 0), (200, 0)]),  # a parcel of no area, drawn along a line
        Polygon([(200, 0), (300, 0), (200, 0)]),  # a ring of two distinct points
    ],
)
def test_polygon_repaired_to_nothing_is_left_out_and_named(sliver):
    """Kept empty, a sliver parcel was measured as if it stood nowhere: "no public sanitary sewer main in the
    data", with a main beside it. It is left out and named, as a parcel with no geometry is."""
    gdf = ny_frame([{"SBL": "A", "geometry": box(0, 25, 50, 125)}, {"SBL": "SLIVER", "geometry": sliver}])
    out, problems = prepare(gdf)
    assert list(out["parcel_id"]) == ["A"]
    (dropped,) = [p for p in problems if p.check == "collapsed_geometry"]
    assert (dropped.severity, dropped.feature_ids) == ("warning", ("SLIVER",))
    assert "left out of the analysis" in dropped.message
    assert not [p for p in problems if p.check == "invalid_geometry"]  # nothing was repaired and kept
    mains, _ = prepare(mains_frame(), MAINS)
    wap = load_profile("wappinger", overrides={"mandate.distance_ft": "200"})
    result = analyze_mandates(out.assign(occupied=True), mains, profile=wap)
    assert list(result.parcels["parcel_id"]) == ["A"]


def test_unclosed_ring_in_geojson_is_closed_and_the_layer_read(tmp_path):
    """GDAL reads a GeoJSON ring that does not end where it starts; the layer used to be refused whole ("Points of
    LinearRing do not form a closed linestring", no feature named). The ring is closed, GDAL's warning reported."""
    square = [[-73.9, 41.6], [-73.899, 41.6], [-73.899, 41.601], [-73.9, 41.601]]
    features = [
        {"type": "Feature", "properties": {"parcel_id": pid}, "geometry": {"type": "Polygon", "coordinates": [ring]}}
        for pid, ring in (("CLOSED", [*square, square[0]]), ("OPEN", square))
    ]
    path = tmp_path / "parcels.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    frame = read_source(LayerSource("parcels", str(path)))
    assert shapely.equals_exact(frame.geometry.iloc[1], frame.geometry.iloc[0], 0)
    out, problems = prepare(frame)
    assert list(out["parcel_id"]) == ["CLOSED", "OPEN"] and not errors(problems)
    (warned,) = [p for p in problems if p.check == "read_warning"]
    assert "a polygon's ring did not end where it started" in warned.message and "it was closed" in warned.message


def test_curved_parcels_are_read_as_straight_segments_and_said_so(tmp_path):
    """A GeoPackage from ArcGIS keeps a cul-de-sac's lots as arcs (CURVEPOLYGON); GEOS has no curves, and the
    layer was refused whole as if the file were damaged. It is read with each arc in straight segments."""
    import pyogrio.raw

    def wkb(kind: int, *parts: bytes) -> bytes:
        return struct.pack("<BII", 1, kind, len(parts)) + b"".join(parts)

    def points(xy) -> bytes:
        return b"".join(struct.pack("<dd", x, y) for x, y in xy)

    x, y, r = 656_000.0, 1_008_000.0, 100.0  # a circle of 100 ft radius, drawn as one circular string
    arc = [(x - r, y), (x, y + r), (x + r, y), (x, y - r), (x - r, y)]
    circle = wkb(10, struct.pack("<BII", 1, 8, len(arc)) + points(arc))  # CURVEPOLYGON(CIRCULARSTRING(...))
    square = [(x + 300, y), (x + 400, y), (x + 400, y + 100), (x + 300, y + 100), (x + 300, y)]
    plain = wkb(3, struct.pack("<I", len(square)) + points(square))
    path = tmp_path / "parcels.gpkg"
    pyogrio.raw.write(
        path,
        geometry=np.array([circle, plain], dtype=object),
        field_data=[np.array(["CUL-DE-SAC", "SQUARE"], dtype=object)],
        fields=["parcel_id"],
        geometry_type="Unknown",
        crs="EPSG:2260",
        driver="GPKG",
        layer="parcels",
    )
    frame = read_source(LayerSource("parcels", str(path), "parcels"))
    assert list(frame.geometry.geom_type) == ["Polygon", "Polygon"]
    # Chords of 0.1 degree lose 5e-7 of a circle's area; GDAL's default 4 degrees lost 8e-4, and strayed 1.2 ft from
    # a 2,000 ft road curve (a lot 99.3 ft from a main measured at 100.2 ft).
    assert frame.geometry.iloc[0].area == pytest.approx(np.pi * r * r, rel=1e-5)
    assert frame.geometry.iloc[1].area == 10_000
    out, problems = prepare(frame)
    assert list(out["parcel_id"]) == ["CUL-DE-SAC", "SQUARE"] and not errors(problems)
    (said,) = [p for p in problems if p.check == "read_warning"]
    assert said.message == "parcels (test): while reading it, " + CURVES_AS_SEGMENTS
    assert "straight segments of 0.1 degrees of arc" in said.message


@pytest.mark.parametrize(
    ("written", "cpg", "zipped", "noted"),
    [
        ("latin1", None, False, True),  # an older county shapefile: Latin-1, no .cpg
        ("cp1252", None, False, True),  # the euro sign and curly quotes, no .cpg
        ("cp1252", "1252", False, False),  # a .cpg that says so: GDAL decodes it
        ("latin1", "UTF-8", False, True),  # a .cpg that says UTF-8 over Latin-1 text
        ("utf-8", None, False, False),  # UTF-8 with no .cpg: read as it is, not as Latin-1
        ("latin1", None, True, True),
    ],
)
def test_shapefile_text_is_read_as_written_whatever_its_cpg_says(tmp_path, written, cpg, zipped, noted):
    """Owners' names in a .dbf whose encoding nothing (or a wrong .cpg) states. GDAL's Arrow path handed the bytes
    on undecoded: the run crashed ("Wrapping MÜLLER JOSÉ failed"), or wrote names no reader could decode."""
    names = ["MÜLLER JOSÉ", "PEÑA ANA"] + (["O’BRIEN “€” TRUST"] if written != "latin1" else [])
    gdf = ny_frame(
        [{"SBL": f"P-{i}", "OWNER": n, "geometry": box(i * 60, 25, i * 60 + 50, 125)} for i, n in enumerate(names)]
    )
    folder = tmp_path / "shp"
    folder.mkdir()
    gdf.to_file(folder / "parcels.shp", encoding=written)
    (folder / "parcels.cpg").unlink(missing_ok=True)
    if cpg:
        (folder / "parcels.cpg").write_text(cpg)
    path = folder / "parcels.shp"
    if zipped:
        path = tmp_path / "parcels.zip"
        with zipfile.ZipFile(path, "w") as zf:
            for member in folder.iterdir():
                zf.write(member, member.name)
    (source,) = find_layers(str(path)).values() if zipped else [LayerSource("parcels", str(path))]
    out, problems = prepare(read_source(source))
    assert list(out["owner_name"]) == names and not errors(problems)
    said = [p.message for p in problems if p.check == "read_warning"]
    assert said == (["parcels (test): while reading it, " + TEXT_AS_CP1252] if noted else [])


def test_a_second_geometry_column_is_left_out_and_said_so(tmp_path):
    """A GeoParquet file with a label point beside each parcel ran the whole analysis, then failed to write ("'df'
    must have only one geometry column"). The second geometry is left out at reading, and the user told."""
    gdf = parcels_frame()
    gdf["label_pt"] = gpd.GeoSeries(gdf.geometry.representative_point(), crs=gdf.crs)
    path = tmp_path / "parcels.parquet"
    gdf.to_parquet(path)
    out, problems = prepare(read_source(LayerSource("parcels", str(path))))
    assert "label_pt" not in out.columns and not errors(problems)
    (said,) = [p for p in problems if p.check == "other_geometry"]
    assert "label_pt" in said.message and said.severity == "warning"
    result = analyze_mandates(
        out.assign(occupied=True),
        prepare(mains_frame(), MAINS)[0],
        profile=load_profile("wappinger", overrides={"mandate.distance_ft": "200"}),
    )
    write_results(str(tmp_path / "results.gpkg"), result.parcels, result.measuring_lines)
    assert len(gpd.read_file(tmp_path / "results.gpkg", layer="parcel_results")) == 2


def test_a_label_point_as_the_primary_geometry_gives_way_to_the_polygon_column(tmp_path):
    """A GeoParquet file whose primary geometry is each parcel's label point, its outline in a second column, was
    refused as "has 2 Point". The polygons are the parcels' shapes: the layer is measured by them, and said so."""
    gdf = parcels_frame()
    outline = gdf.geometry.copy()
    gdf = gdf.set_geometry(gdf.geometry.representative_point().rename("label_pt")).drop(columns="geometry")
    gdf["outline"] = outline
    path = tmp_path / "parcels.parquet"
    gdf.to_parquet(path)
    assert gpd.read_parquet(path).geometry.name == "label_pt"
    out, problems = prepare(read_source(LayerSource("parcels", str(path))))
    assert not errors(problems) and out.geometry.name == "outline" and "label_pt" not in out.columns
    assert list(out.geom_type) == ["Polygon", "Polygon"]
    assert out.geometry.area.tolist() == outline.area.tolist()
    (said,) = [p for p in problems if p.check == "other_geometry"]
    assert said.severity == "warning"
    assert "geometry column label_pt holds no Polygon or MultiPolygon; column outline holds" in said.message

    both = gdf.assign(outline=gdf.geometry)  # no column of polygons: refused as before, by the type of its own
    both.to_parquet(path)
    out, problems = prepare(read_source(LayerSource("parcels", str(path))))
    assert out is None and [p.check for p in errors(problems)] == ["geometry_type"]


def test_null_and_empty_geometries_dropped_with_ids():
    gdf = ny_frame(
        [
            {"SBL": "A", "geometry": box(0, 0, 10, 10)},
            {"SBL": "B", "geometry": None},
            {"SBL": "C", "geometry": Polygon()},
        ]
    )
    out, problems = prepare(gdf)
    assert list(out["parcel_id"]) == ["A"]
    dropped = [p for p in problems if p.check == "null_geometry"][0]
    assert dropped.feature_ids == ("B", "C") and dropped.severity == "warning"


def test_z_values_dropped():
    gdf = ny_frame([{"SBL": "A", "geometry": Polygon([(0, 0, 5), (10, 0, 5), (10, 10, 5), (0, 0, 5)])}])
    out, problems = prepare(gdf)
    assert not shapely.has_z(out.geometry.values).any()
    assert any(p.check == "z_values" and p.severity == "fixed" for p in problems)


def test_mixed_geometry_types_refused():
    gdf = ny_frame([{"SBL": "A", "geometry": box(0, 0, 10, 10)}, {"SBL": "B", "geometry": Point(5, 5)}])
    out, problems = prepare(gdf)
    assert out is None and "1 Point" in problems[0].message and problems[0].feature_ids == ("B",)


def test_duplicate_parcel_ids_refused_and_listed():
    gdf = ny_frame(
        [
            {"SBL": "A", "geometry": box(0, 0, 10, 10)},
            {"SBL": "A", "geometry": box(20, 0, 30, 10)},
            {"SBL": "B", "geometry": box(40, 0, 50, 10)},
            {"SBL": "B", "geometry": box(60, 0, 70, 10)},
        ]
    )
    out, problems = prepare(gdf)
    assert out is None and problems[-1].check == "duplicate_id" and problems[-1].feature_ids == ("A", "B")


def test_duplicate_main_ids_made_unique():
    gdf = ny_frame(
        [
            {"main_id": "M", "geometry": LineString([(0, 0), (1, 1)])},
            {"main_id": "M", "geometry": LineString([(1, 1), (2, 2)])},
        ]
    )
    out, problems = prepare(gdf, MAINS)
    assert list(out["main_id"]) == ["M", "M#2"] and problems[0].severity == "warning"


def test_empty_layer_refused():
    out, problems = prepare(parcels_frame().iloc[:0])
    assert out is None and problems[0].check == "empty"
    # said with what to do (it said only "has no features"): export it again; a layer the analysis can do
    # without may be left out instead
    assert "has no features: export it again with its features" in problems[0].message
    assert "leave" not in problems[0].message
    _, problems = prepare(ny_frame([{"building_id": "B-1", "geometry": box(0, 0, 30, 30)}]).iloc[:0], BUILDINGS)
    assert "or leave the buildings layer out if the town has none to give" in problems[0].message


def test_numeric_ids_become_text():
    gdf = ny_frame([{"PIN": 1042.0, "geometry": box(0, 0, 10, 10)}])
    out, _ = prepare(gdf)
    assert out["parcel_id"].tolist() == ["1042"]


def test_sewer_type_vocabulary_and_unknown_values():
    gdf = ny_frame(
        [
            {"TYPE": t, "geometry": LineString([(0, i), (10, i)])}
            for i, t in enumerate(["Sanitary", "STORM", "Force Main", "Sewer pipe", None])
        ]
    )
    out, problems = prepare(gdf, MAINS)
    assert out["sewer_type"].tolist()[:4] == ["sanitary", "storm", "force", "sanitary"]
    assert pd.isna(out["sewer_type"].iloc[4])
    gdf.loc[0, "TYPE"] = "GRAV"
    out, problems = prepare(gdf, MAINS)
    assert out is None and "'GRAV'" in problems[0].message and "sanitary, storm each one means" in problems[0].message
    # how to say it is the fix's, worded by the CLI (--map-value mains.sewer_type.GRAV=CODE) or the web's field
    assert (problems[0].fix.setting, problems[0].fix.target) == ("map_value", "mains.sewer_type.GRAV")
    assert problems[0].fix.setting == "map_value" and problems[0].fix.target == "mains.sewer_type.GRAV"
    assert "sanitary" in problems[0].fix.choices
    out, problems = prepare(gdf, MAINS, mapping=read_mapping(None, (), ("mains.sewer_type.GRAV=sanitary",)))
    assert out["sewer_type"].iloc[0] == "sanitary"


def test_ownership_free_text():
    gdf = ny_frame(
        [
            {"OWNERSHIP": o, "geometry": LineString([(0, i), (10, i)])}
            for i, o in enumerate(["Village of Fort Plain", "Private - Smith", "PUBLIC"])
        ]
    )
    out, _ = prepare(gdf, MAINS)
    assert out["ownership"].tolist() == ["public", "private", "public"]


def test_connected_yes_no_values():
    gdf = parcels_frame()
    gdf["SEWER_CONNECTED"] = ["Y", "no"]
    out, _ = prepare(gdf)
    assert out["connected"].tolist() == [True, False]
    gdf["SEWER_CONNECTED"] = ["Y", "maybe"]
    out, problems = prepare(gdf)
    assert out is None and "'maybe'" in problems[0].message


def test_result_column_names_in_input_are_kept_as_input_columns():
    gdf = parcels_frame()
    gdf["status"] = ["Active", "Active"]
    out, _ = prepare(gdf)
    assert "input_status" in out.columns and "status" not in out.columns


def test_a_status_column_named_as_a_result_column_is_called_by_its_own_name():
    """Manchester, Vermont's mains say Status (Existing / Abandoned): the column is used as mains.status, so the
    upload's report must not list it under "Columns not used", and a message about its values names it as the file
    does, not as input_Status (a column the user's file does not have)."""
    gdf = ny_frame(
        [{"Status": s, "geometry": LineString([(0, i), (10, i)])} for i, s in enumerate(["Existing", "Pending review"])]
    )
    out, problems = prepare(gdf, MAINS)
    assert out is None and "Status (status)" in problems[0].message and "input_Status" not in problems[0].message
    gdf.loc[1, "Status"] = "Abandoned"
    out, _ = prepare(gdf, MAINS)
    assert out["status"].tolist() == ["active", "abandoned"]
    assert out.attrs["source_columns"]["status"] == "Status"


def test_all_problems_of_all_layers_raised_together(tmp_path):
    gdf = parcels_frame(crs=None)
    path = tmp_path / "town.gpkg"
    with pytest.warns(UserWarning, match="'crs' was not provided"):
        gdf.to_file(path, layer="parcels")
    bad_mains = mains_frame()
    bad_mains["TYPE"] = "Mystery"
    bad_mains.to_file(path, layer="mains")
    with pytest.raises(LayerValidationError) as info:
        load_layers(find_layers(str(path)), target_crs=TARGET)
    checks = {(p.layer, p.check) for p in info.value.problems}
    assert {("parcels", "no_crs"), ("mains", "unknown_value")} <= checks
    assert "2 problem(s)" in str(info.value)


@pytest.mark.parametrize("fmt", ["gpkg", "shp", "zip", "geojson", "gdb", "folder"])
def test_formats(tmp_path, fmt):
    parcels, mains = parcels_frame(), mains_frame()
    if fmt == "gpkg":
        data = tmp_path / "town.gpkg"
        parcels.to_file(data, layer="parcels")
        mains.to_file(data, layer="sewer_mains")
    elif fmt == "gdb":
        data = tmp_path / "town.gdb"
        pyogrio.write_dataframe(parcels, data, layer="Parcels", driver="OpenFileGDB")
        pyogrio.write_dataframe(mains, data, layer="Mains", driver="OpenFileGDB")
    elif fmt in ("shp", "zip", "geojson", "folder"):
        data = tmp_path / "layers"
        data.mkdir()
        ext = "geojson" if fmt == "geojson" else "shp"
        parcels.to_file(data / f"parcels.{ext}")
        mains.to_file(data / f"mains.{ext}")
        if fmt == "zip":
            archive = tmp_path / "town.zip"
            with zipfile.ZipFile(archive, "w") as zf:
                for f in data.iterdir():
                    zf.write(f, f.name)
            data = archive
    sources = find_layers(str(data))
    assert set(sources) == {"parcels", "mains"}
    layers = load_layers(sources, target_crs=TARGET)
    assert layers.parcels["parcel_id"].tolist() == ["1.1-1-1", "1.1-1-2"]
    assert layers.mains["sewer_type"].tolist() == ["sanitary"]
    assert layers.parcels.crs == TARGET


def test_zipped_shapefile_given_on_its_own(tmp_path):
    shp = tmp_path / "p"
    shp.mkdir()
    parcels_frame().to_file(shp / "tax_parcels.shp")
    archive = tmp_path / "parcels.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in shp.iterdir():
            zf.write(f, f.name)
    source = parse_source("parcels", str(archive))
    layers = load_layers(
        {"parcels": source, "mains": LayerSource("mains", str(_gpkg(tmp_path)), "mains")}, target_crs=TARGET
    )
    assert len(layers.parcels) == 2


def _gpkg(tmp_path):
    path = tmp_path / "m.gpkg"
    mains_frame().to_file(path, layer="mains")
    return path


def test_zip_with_escaping_member_refused(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../etc/parcels.shp", b"x")
    with pytest.raises(LayerError, match="outside the archive"):
        load_layers(
            {
                "parcels": LayerSource("parcels", str(archive)),
                "mains": LayerSource("mains", str(_gpkg(tmp_path)), "mains"),
            },
            target_crs=TARGET,
        )


def test_missing_layers_and_files(tmp_path):
    with pytest.raises(LayerError, match="does not exist"):
        find_layers(str(tmp_path / "nope.gpkg"))
    # The README's `trace --data model.inp --data-crs local` with no model.inp here was told to give "a GeoPackage,
    # a folder of layers, or a postgresql:// URL", as if a SWMM model were not taken.
    with pytest.raises(LayerError, match=r"model\.inp does not exist: check its name and folder\..*SWMM \.inp model"):
        find_layers(str(tmp_path / "model.inp"))
    path = tmp_path / "only.gpkg"
    parcels_frame().to_file(path, layer="parcels")
    with pytest.raises(LayerError, match="No mains layer found"):
        load_layers(find_layers(str(path)), target_crs=TARGET)
    with pytest.raises(LayerError, match="does not exist"):
        parse_source("parcels", str(tmp_path / "x.shp"))
    with pytest.raises(LayerError, match="name the table after '#'"):
        parse_source("parcels", "postgresql://localhost/town")


def test_connected_list_from_billing_csv(tmp_path):
    csv = tmp_path / "billing.csv"
    csv.write_text("account,SBL\n17,1.1-1-2\n18,9.9-9-9\n")
    ids = read_connected_ids(str(csv))
    assert ids == {"1.1-1-2", "9.9-9-9"}
    path = tmp_path / "town.gpkg"
    parcels_frame().to_file(path, layer="parcels")
    mains_frame().to_file(path, layer="mains")
    layers = load_layers(find_layers(str(path)), target_crs=TARGET, connected_ids=ids)
    # The billing list is the record of connections: a parcel not on it is not connected.
    assert layers.parcels["connected"].tolist() == [False, True]
    warning = [p for p in layers.problems if p.check == "connected_list"][0]
    assert warning.feature_ids == ("9.9-9-9",)
    with pytest.raises(LayerError, match="no column 'acct'"):
        read_connected_ids(str(csv), column="acct")


def test_a_billing_list_saved_by_excel_is_read_as_the_clerk_sees_it(tmp_path):
    """Excel on Windows saves "CSV (Comma delimited)" in Windows-1252 (an owner MÜLLER), with a semicolon where the
    list separator is one, and leaves blank rows ",," under the table: the cp1252 file stopped `analyze --connected`
    with a UnicodeDecodeError traceback, and the semicolon file read as one column of "1.1-1-2;MÜLLER" IDs that
    matched no parcel. Each reads as the IDs the clerk typed."""
    for name, data in {
        "cp1252.csv": "account,SBL,owner\r\n17,1.1-1-2,M\u00dcLLER\r\n18,9.9-9-9,ROE\r\n,,\r\n".encode("cp1252"),
        "semicolon.csv": "\ufeffSBL;owner\r\n1.1-1-2;M\u00dcLLER\r\n9.9-9-9;ROE\r\n".encode(),
        "tab.csv": b"SBL\towner\n1.1-1-2\tROE\n9.9-9-9\tROE\n",
    }.items():
        (tmp_path / name).write_bytes(data)
        assert read_connected_ids(str(tmp_path / name)) == {"1.1-1-2", "9.9-9-9"}, name
    (tmp_path / "binary.csv").write_bytes(b"SBL\n1.1-1-2\x81\x8d\n")
    with pytest.raises(LayerError, match="neither UTF-8 nor Windows"):
        read_connected_ids(str(tmp_path / "binary.csv"))


def test_a_hazard_list_saved_by_excel_names_each_parcels_one_hazard(tmp_path):
    """A Poughkeepsie hazard list (`--hazard-file`) from Excel: Windows-1252 text (an en dash), blank rows at the
    end. It was refused with "'utf-8' codec can't decode byte 0x96", and the blank rows with "names no hazard for
    parcel(s) ." (no parcel). A parcel listed twice with two hazards was given the last one, silently, on a legal
    letter: it is refused, naming the parcel."""
    from layers.read import read_hazard_list

    path = tmp_path / "hazards.csv"
    path.write_bytes(
        "parcel_id,hazard\r\n 1.1-1-2 ,sewage \u2013 failing septic\r\n1.1-1-3,odour\r\n,\r\n".encode("cp1252")
    )
    assert read_hazard_list(str(path)) == {"1.1-1-2": "sewage \u2013 failing septic", "1.1-1-3": "odour"}
    path.write_text("parcel_id,hazard\n1.1-1-2,sewage\n1.1-1-2,sewage\n")
    assert read_hazard_list(str(path)) == {"1.1-1-2": "sewage"}  # the same row twice: one hazard
    path.write_text("parcel_id,hazard\n1.1-1-2,sewage\n1.1-1-3,odour\n1.1-1-2,standing water\n")
    with pytest.raises(LayerError, match="1.1-1-2 is listed with two hazards"):
        read_hazard_list(str(path))
    path.write_text("SBL,hazard\n1.1-1-2,sewage\n")
    with pytest.raises(LayerError, match="needs the columns parcel_id and hazard; it has SBL, hazard"):
        read_hazard_list(str(path))


def test_manchester_real_sewer_loads_cleanly(real_data):
    """EPSG:4979, 3-D, abandoned pipes, no IDs: must load, reproject to NY East feet and drop Z."""
    base = real_data / "vt-sewer" / "manchester"
    sources = {
        "mains": LayerSource("mains", str(base / "ManchesterLinearFeatures.geojson")),
        "manholes": LayerSource("manholes", str(base / "ManchesterPointFeatures.geojson")),
    }
    border = gpd.read_file(base / "ManchesterBorder.geojson")
    assert border.crs.to_epsg() == 4979
    # Parcels: three 100 x 100 ft lots placed on, beside and far from a real existing pipe.
    mains_raw = gpd.read_file(base / "ManchesterLinearFeatures.geojson")
    pipe = shapely.force_2d(mains_raw.to_crs(2260).geometry[mains_raw["Status"] == "Existing"].iloc[10])
    mid = pipe.interpolate(0.5, normalized=True)
    lots = gpd.GeoDataFrame(
        {"parcel_id": ["ON", "FAR"], "occupied": [True, True]},
        geometry=[mid.buffer(50, cap_style="square"), box(mid.x + 60_000, mid.y, mid.x + 60_100, mid.y + 100)],
        crs="EPSG:2260",
    )
    lots_path = base.parent.parent.parent / "never-written"
    assert not lots_path.exists()
    layers = load_layers(sources | {"parcels": _write_lots(lots)}, target_crs=TARGET)
    mains = layers.mains
    assert len(mains) == 493 and mains.crs == TARGET
    assert not shapely.has_z(mains.geometry.values).any()
    assert (mains["status"] == "abandoned").sum() == 45
    assert (mains["sewer_type"] == "sanitary").all()  # "Sewer pipe"
    assert mains["ownership"].eq("public").all()  # "Audience: Public"
    assert len(layers.manholes) == 483
    assert any(p.check == "z_values" for p in layers.problems)
    # Manchester, VT measured in New York East feet: the pipes are metres to a few km long, not degrees.
    assert 10 < mains.length.median() < 2000
    wap = load_profile("wappinger", overrides={"mandate.distance_ft": "200"})
    r = analyze_mandates(layers.parcels, mains, profile=wap).parcels.set_index("parcel_id")
    assert r.loc["ON", "distance_ft"] == 0 and r.loc["ON", "status"] == "mandated"
    assert r.loc["FAR", "status"] == "out_of_range" and r.loc["FAR", "distance_ft"] > 1000


_LOTS_DIR: list = []


def _write_lots(lots) -> LayerSource:
    import tempfile

    folder = tempfile.mkdtemp(prefix="sewerplan-lots-")
    _LOTS_DIR.append(folder)
    path = f"{folder}/lots.gpkg"
    lots.to_file(path, layer="parcels")
    return LayerSource("parcels", path, "parcels")


# Hostile values and coordinates, one layer at a time (end to end through the CLI and the web: test_hostile_inputs).


def test_table_without_geometry_is_refused_by_name():
    table = pd.DataFrame({"SBL": ["1.1-1-1"], "OWNER": ["SMITH"]})
    out, problems = prepare(table)
    assert out is None and [p.check for p in problems] == ["no_geometry"]
    assert problems[0].message.startswith("parcels (test) is a table without geometry")


@pytest.mark.parametrize(
    ("spec", "geometry"),
    [
        (PARCELS, "POLYGON ((0 0, 10 0, NaN 10, 0 10, 0 0))"),
        (MAINS, "LINESTRING (0 0, NaN NaN, 10 0)"),
        (MAINS, "LINESTRING (0 0, 10 Infinity)"),
        (SPECS["manholes"], "POINT (NaN 5)"),
        (SPECS["streets"], "MULTILINESTRING ((0 0, 5 5), (5 5, -Infinity 0))"),
        (SPECS["buildings"], "MULTIPOLYGON (((0 0, 1 0, 1 1, 0 NaN, 0 0)))"),
    ],
)
def test_nan_and_infinite_vertices_are_invalid_geometry(spec, geometry):
    with np.errstate(invalid="ignore"):
        broken = shapely.from_wkt(geometry)
    good = shapely.from_wkt("POINT (1 1)") if spec.geometry[0] == "Point" else box(20, 20, 30, 30)
    if spec.geometry[0] == "LineString":
        good = LineString([(20, 20), (30, 30)])
    with np.errstate(invalid="ignore"):  # moving an infinite vertex to Fort Plain: the test's own arithmetic
        gdf = ny_frame([{spec.id_field: "BAD", "geometry": broken}, {spec.id_field: "OK", "geometry": good}])
    out, problems = prepare(gdf, spec)
    assert out is None
    (problem,) = errors(problems)
    assert (problem.check, problem.feature_ids) == ("invalid_geometry", ("BAD",))
    assert "not numbers (NaN or infinite), in row(s) 1;" in problem.message


@pytest.mark.parametrize(
    ("values", "parsed", "bad"),
    [
        (["3", " 2 ", "1,200", "", None, "n/a", "Unknown", "2.0"], [3, 2, 1200, None, None, None, None, 2], []),
        (["3", "three", "2 1/2", "4"], None, ["row 2 'three'", "row 3 '2 1/2'"]),
        ([1.0, float("inf"), 2.0], None, ["row 2 'inf'"]),
    ],
)
def test_number_fields_refuse_text_naming_value_and_row(values, parsed, bad):
    gdf = ny_frame(
        [{"SBL": f"P{i}", "UNITS": v, "geometry": box(i * 20, 0, i * 20 + 10, 10)} for i, v in enumerate(values)]
    )
    out, problems = prepare(gdf)
    if parsed is not None:
        assert not errors(problems)
        np.testing.assert_array_equal(out["units"].to_numpy(float), np.array(parsed, dtype=float))
        # the user's own column is kept as given, under a name a GeoPackage can hold beside "units"
        assert out["input_UNITS"].tolist() == gdf["UNITS"].tolist() and "UNITS" not in out.columns
        return
    (problem,) = errors(problems)
    assert problem.check == "not_a_number" and problem.count == len(bad)
    assert all(b in problem.message for b in bad)
    assert "column UNITS (units) should hold numbers" in problem.message


@pytest.mark.parametrize("values", [["2", "-1", "n/a", "-3"], [2.0, -1.0, None, -3.0]])
def test_negative_living_units_are_refused_naming_each_row(values):
    """Living units counted below zero were taken as given: one building sewer per four units then asked for
    none. Refused as text that is not a number is, in text columns and number columns alike."""
    gdf = ny_frame(
        [{"SBL": f"P{i}", "UNITS": v, "geometry": box(i * 20, 0, i * 20 + 10, 10)} for i, v in enumerate(values)]
    )
    out, problems = prepare(gdf)
    assert out is None
    (problem,) = errors(problems)
    assert (problem.check, problem.count, problem.feature_ids) == ("negative_number", 2, ("P1", "P3"))
    assert "column UNITS (units) counts or measures something and cannot be negative" in problem.message
    assert "row 2 '-1" in problem.message and "row 4 '-3" in problem.message
    mains = ny_frame([{"PIPE_ID": "M-1", "geometry": LineString([(0, 0), (9, 0)])}])
    assert not errors(prepare(mains, MAINS)[1])  # other numbers (a main's invert may lie below the datum) are not


@pytest.mark.parametrize(
    ("spec", "values", "check", "shown"),
    [
        (PARCELS, ["2", "2.5", "n/a", "1"], "not_whole_number", ["row 2 '2.5'"]),
        (PARCELS, [2.0, 0.5, None, 1.0], "not_whole_number", ["row 2 '0.5'"]),
        (PARCELS, [1.0, 1e308, None, 1e15], "implausible_number", ["row 2 '1e+308'", "row 4 '1000000000000000.0'"]),
        (PARCELS, ["1", "10,001", "", "1e15"], "implausible_number", ["row 2 '10,001'", "row 4 '1e15'"]),
        (BUILDINGS, [1.0, 3.5, None, 2.0], "not_whole_number", ["row 2 '3.5'"]),
        (BUILDINGS, [1.0, 1e15, "unknown", 2.0], "implausible_number", ["row 2 '1000000000000000.0'"]),
        # a proposed subdivision's planned units decide its plot size per unit: "twelve" was read as not given
        (SUBDIVISIONS, ["12", "twelve", "", "3"], "not_a_number", ["row 2 'twelve'"]),
        (SUBDIVISIONS, ["12", "2.5", "", "3"], "not_whole_number", ["row 2 '2.5'"]),
        (SUBDIVISIONS, ["12", "-4", "", "3"], "negative_number", ["row 2 '-4'"]),
    ],
)
def test_living_units_must_be_a_plausible_whole_number(spec, values, check, shown):
    """A typo in living units (1e15, 2.5) was taken as given: the system flow came out infinite, with numpy's
    overflow warnings, and a fraction of a unit asked for a fraction of a building sewer. Refused by row and ID."""
    idf = {PARCELS.kind: "SBL", BUILDINGS.kind: "BLDG_ID", SUBDIVISIONS.kind: "SUB_ID"}[spec.kind]
    gdf = ny_frame(
        [{idf: f"F{i}", "UNITS": v, "geometry": box(i * 20, 0, i * 20 + 10, 10)} for i, v in enumerate(values)]
    )
    out, problems = prepare(gdf, spec)
    assert out is None
    (problem,) = errors(problems)
    assert problem.check == check and problem.count == len(shown)
    assert set(problem.feature_ids) <= {f"F{i}" for i in range(len(values))} and len(problem.feature_ids) == len(shown)
    assert all(s in problem.message for s in shown), problem.message
    if check != "not_a_number":
        assert "leave the cell empty where the value is not known" in problem.message
    if check == "implausible_number":
        assert f"more than {MAX_LIVING_UNITS:,}" in problem.message


def test_living_units_up_to_the_bound_are_kept():
    gdf = ny_frame(
        [
            {"SBL": f"P{i}", "UNITS": v, "geometry": box(i * 20, 0, i * 20 + 10, 10)}
            for i, v in enumerate([MAX_LIVING_UNITS, 0.0, 4.0, None])
        ]
    )
    out, problems = prepare(gdf)
    assert not errors(problems)
    np.testing.assert_array_equal(out["units"].to_numpy(float), [MAX_LIVING_UNITS, 0, 4, np.nan])


def test_number_rows_count_features_dropped_for_no_geometry():
    gdf = ny_frame(
        [
            {"SBL": "A", "UNITS": "1", "geometry": None},
            {"SBL": "B", "UNITS": "one", "geometry": box(0, 0, 10, 10)},
        ]
    )
    _, problems = prepare(gdf)
    assert "row 2 'one'" in errors(problems)[0].message


@pytest.mark.parametrize("crs", ["EPSG:4326", "EPSG:2260"])
def test_swapped_axes_are_refused_as_such(crs):
    parcels = parcels_frame().to_crs(crs)
    swapped = parcels.set_geometry(shapely.transform(parcels.geometry.values, lambda c: c[:, ::-1]))
    out, problems = prepare(swapped)
    assert out is None and [p.check for p in problems] == ["swapped_axes"]
    assert "has its x and y swapped" in problems[0].message and "Swap them back" in problems[0].message
    assert not errors(prepare(parcels)[1])


def test_projected_swap_that_still_lands_in_the_zone_is_found_by_the_other_layers():
    # Near the diagonal of New York East feet a swap moves a layer ~25 miles and it still fits the zone.
    parcels = frame([{"SBL": "A", "geometry": box(900_000, 1_030_000, 900_100, 1_030_100)}])
    mains = frame([{"main_id": "M", "geometry": LineString([(899_900, 1_029_950), (900_200, 1_029_950)])}])
    swapped = parcels.set_geometry(shapely.transform(parcels.geometry.values, lambda c: c[:, ::-1]))
    p_out, p_problems = prepare(swapped)
    m_out, _ = prepare(mains, MAINS)
    assert not errors(p_problems)
    (problem,) = check_layers_together({"parcels": p_out, "mains": m_out}, {"parcels": "P", "mains": "M"})
    assert problem.check == "swapped_axes" and "exchanging x and y in either one brings them together" in (
        problem.message
    )


def test_a_misplaced_layer_is_told_its_repeated_ids_in_the_same_report():
    """50 parcels all 'DUP', one reaching (0, 0): the report named only the misplaced vertex, and the repeated ID
    came only after the file was fixed and uploaded again (a tester)."""
    from layers.sample import sample_town

    parcels = sample_town(60)["parcels"].head(50).copy()
    parcels["parcel_id"] = "DUP"
    parcels.loc[parcels.index[0], "geometry"] = Polygon([(0, 0), (50, 50), (50, 0), (0, 50)])
    out, problems = prepare(parcels)
    assert out is None
    assert {p.check for p in errors(problems)} >= {"duplicate_id"} and len(errors(problems)) == 2, problems


def test_features_outside_the_area_of_use_are_refused_by_id():
    gdf = ny_frame(
        [
            {"SBL": "A", "geometry": box(0, 0, 50, 50)},
            {"SBL": "FAR", "geometry": box(0, 0, 50, 50).union(box(3_000_000, 0, 3_000_050, 50))},
        ]
    )
    out, problems = prepare(gdf)
    assert out is None
    (problem,) = problems
    assert (problem.check, problem.feature_ids) == ("outside_area", ("FAR",))
    assert "outside where NAD83 / New York East (ftUS) is used" in problem.message


def test_feature_far_from_the_rest_is_a_warning_with_its_id():
    rows = [{"SBL": f"P{i}", "geometry": box(i * 60, 0, i * 60 + 50, 100)} for i in range(8)]
    rows.append({"SBL": "STRAY", "geometry": box(40_000, 0, 40_050, 100)})
    out, problems = prepare(ny_frame(rows))
    assert len(out) == 9
    (problem,) = problems
    assert (problem.check, problem.severity, problem.feature_ids) == ("far_feature", "warning", ("STRAY",))


def test_layers_are_compared_with_each_other():
    parcels, _ = prepare(parcels_frame())
    mains, _ = prepare(mains_frame(), MAINS)
    labels = {"parcels": "parcels (p)", "mains": "mains (m)", "streets": "streets (s)"}
    assert check_layers_together({"parcels": parcels, "mains": mains}, labels) == []
    far = mains.set_geometry(mains.geometry.translate(0, 200_000))
    streets = mains.assign(street_id="S")
    (problem,) = check_layers_together({"parcels": parcels, "mains": far, "streets": streets}, labels)
    assert (problem.layer, problem.check, problem.severity) == ("mains", "far_layer", "error")
    assert "37.9 miles from the parcels and streets" in problem.message


def test_reprojection_does_not_change_the_callers_frame():
    gdf = parcels_frame()
    out, _ = check_and_reproject(gdf, layer="parcels", label="parcels", target=TARGET)
    assert out is not gdf and "source_crs" in out.attrs and "source_crs" not in gdf.attrs


def test_redact_url_masks_a_password_holding_at_signs():
    url = "postgresql://town:p@ss@Wrong@db.example:5432/gis"
    assert redact_url(url) == "postgresql://town:***@db.example:5432/gis"
    said = 'could not connect to postgresql://town:p@ss@Wrong@db.example:5432/gis: invalid token: "p@ss@Wrong"'
    assert "Wrong" not in redact_url(url, said) and "p@ss" not in redact_url(url, said)
    assert redact_url("postgresql://town@db/gis") == "postgresql://town@db/gis"
    assert redact_url("postgresql://db:5432/gis") == "postgresql://db:5432/gis"


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        # the password's text inside a word or a name is not the password: sewerplan_writer stays whole
        ('lock on "sewerplan_writer" in sewerplan_t1', 'lock on "sewerplan_writer" in sewerplan_t1'),
        # the user's name, which the masked URL shows anyway, is not masked for being the password too
        ('password authentication failed for user "sewerplan"', 'password authentication failed for user "sewerplan"'),
        # where it stands as a password, it is masked: another URL's userinfo, a connection string, libpq's echo
        ("at postgresql://sewerplan:sewerplan@other/db#s", "at postgresql://sewerplan:***@other/db#s"),
        ("dbname=gis password=sewerplan host=db", "dbname=gis password=*** host=db"),
        (
            "the URL postgresql://sewerplan:sewerplan@db:5432/gis failed",
            "the URL postgresql://sewerplan:***@db:5432/gis failed",
        ),
    ],
)
def test_masking_a_password_masks_it_only_where_it_stands_as_a_password(said, shown):
    """The password ``sewerplan`` (a login named alike) turned ``sewerplan_writer`` into ``***_writer`` in a message."""
    assert redact_url("postgresql://sewerplan:sewerplan@db:5432/gis", said) == shown


def test_a_password_libpq_echoes_alone_is_masked():
    url = "postgresql://pat:ab%zzcd@db:5432/gis"
    assert redact_url(url, 'invalid percent-encoded token: "ab%zzcd"') == 'invalid percent-encoded token: "***"'


def test_a_password_holding_at_signs_reaches_the_driver_whole():
    from sqlalchemy.engine import make_url

    from layers.errors import quote_password

    parsed = make_url(quote_password("postgresql://town:p@ss@Wrong@db.example:5432/gis"))
    assert (parsed.password, parsed.host, parsed.database) == ("p@ss@Wrong", "db.example", "gis")
    assert quote_password("postgresql://town:secret@db/gis") == "postgresql://town:secret@db/gis"


def test_gdal_messages_are_decoded_and_shortened():
    from layers.read import _reader_says

    raw = (
        "Could not decode error message to UTF-8. Raw error: b'sqlite3_prepare_v2(SELECT 1 FROM \\'x\\') failed: "
        'malformed database schema (gpkg_\\xff\\xfeents) - near "(": syntax error\'; Could not decode ...'
    )
    assert (
        _reader_says(RuntimeError(raw)) == 'malformed database schema (gpkg_\ufffd\ufffdents) - near "(": syntax error'
    )
    assert len(_reader_says(RuntimeError("x" * 500))) == 160


def test_reader_warnings_are_reported_not_printed(tmp_path):
    path = tmp_path / "parcels.geojson"
    path.write_text(parcels_frame().to_crs(4326).to_json())
    frame = read_source(LayerSource("parcels", str(path)))
    frame.attrs["read_warnings"] = ("Something GDAL said",)
    out, problems = prepare(frame)
    assert out is not None
    assert [(p.check, p.severity) for p in problems] == [("read_warning", "warning")]


def test_warnings_heard_in_two_threads_at_once_stay_with_their_own_thread():
    """Two runs reading layers at once (two web requests): each hears its own warnings, whichever leaves first,
    and the process's warning handling is as it was once both have left."""
    before_show, before_filters = warnings.showwarning, list(warnings.filters)
    step = [threading.Barrier(2) for _ in range(4)]
    heard: dict[str, list[str]] = {}

    def first():
        with quiet() as mine:
            step[0].wait()  # the other enters after this one
            step[1].wait()
            warnings.warn("first's warning", RuntimeWarning, stacklevel=2)
            step[2].wait()
        heard["first"] = mine  # this one leaves first, while the other still listens
        step[3].wait()

    def second():
        step[0].wait()
        with quiet() as mine:
            step[1].wait()
            warnings.warn("second's warning", RuntimeWarning, stacklevel=2)
            step[2].wait()
            step[3].wait()
            warnings.warn("second's warning after the first left", RuntimeWarning, stacklevel=2)
        heard["second"] = mine

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert heard == {
        "first": ["first's warning"],
        "second": ["second's warning", "second's warning after the first left"],
    }
    assert warnings.showwarning is before_show and warnings.filters == before_filters
    with pytest.warns(UserWarning, match="nobody listens"):
        warnings.warn("nobody listens", stacklevel=2)


def test_gdal_warning_read_beside_another_read_is_reported_with_its_own_layer(tmp_path):
    """A GDAL warning raised on one thread while another thread reads a clean layer goes to the layer that caused
    it, not to the other (in another town's run, before)."""
    noisy = tmp_path / "noisy.geojson"
    features = [
        {"type": "Feature", "id": 1, "properties": {"parcel_id": pid}, "geometry": {"type": "Point", "coordinates": xy}}
        for pid, xy in (("A", [0, 0]), ("B", [1, 1]))
    ]
    noisy.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    clean = tmp_path / "clean.geojson"
    clean.write_text(parcels_frame().to_crs(4326).to_json())
    with quiet() as main_heard:  # a read under way on this thread while the other reads
        frames = {}
        reader = threading.Thread(target=lambda: frames.update(noisy=read_source(LayerSource("parcels", str(noisy)))))
        reader.start()
        reader.join()
        frames["clean"] = read_source(LayerSource("parcels", str(clean)))
    assert main_heard == []
    assert "clean" in frames and "read_warnings" not in frames["clean"].attrs
    assert frames["noisy"].attrs["read_warnings"] == (
        "GDAL warned: Several features with id = 1 have been found. Altering it to be unique. This warning will not "
        "be emitted anymore for this layer",
    )


def test_zip_holding_its_layers_in_a_folder_is_read(tmp_path):
    """Windows' "Send to compressed folder" on a folder, with a Mac's __MACOSX copies beside: GDAL opens only a
    zip's top level, and the zip was refused as "not recognized", as if it were damaged."""
    folder = tmp_path / "shapes"
    folder.mkdir()
    parcels_frame().to_file(folder / "parcels.shp")
    mains_frame().to_file(folder / "mains.shp")
    archive = tmp_path / "town export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for member in folder.iterdir():
            zf.write(member, f"town_export/shapes/{member.name}")
            zf.writestr(f"__MACOSX/town_export/shapes/._{member.name}", b"\x00\x05\x16\x07")
    sources = find_layers(str(archive))
    assert sorted(sources) == ["mains", "parcels"]
    layers = load_layers(sources, target_crs=TARGET)
    assert list(layers.parcels["parcel_id"]) == ["1.1-1-1", "1.1-1-2"] and len(layers.mains) == 1
    two = tmp_path / "two.zip"
    with zipfile.ZipFile(two, "w") as zf:
        for member in folder.iterdir():
            zf.write(member, f"2025/{member.name}")
            zf.write(member, f"2026/{member.name}")
    with pytest.raises(LayerError, match=r"holds layers in 2 folders \(2025/, 2026/\); zip the one folder"):
        find_layers(str(two))
    mixed = tmp_path / "mixed.zip"
    with zipfile.ZipFile(mixed, "w") as zf:
        for member in folder.iterdir():
            zf.write(member, member.name if member.stem == "parcels" else f"network/{member.name}")
            zf.write(member, f"old/{member.name}")  # an older copy of both: the top's parcels are the ones read
    with pytest.raises(
        LayerError,
        match=r"mixed.zip holds layers at its top \(parcels\) and more in a folder "
        r"\(network/mains.shp, old/mains.shp\), which would be left out: zip all",
    ):
        find_layers(str(mixed))
    both = tmp_path / "both.zip"
    with zipfile.ZipFile(both, "w") as zf:
        for member in folder.iterdir():
            zf.write(member, member.name)
            zf.write(member, f"old/{member.name}")
    assert sorted(find_layers(str(both))) == ["mains", "parcels"]


def test_shapefile_without_its_dbf_is_refused_by_name(tmp_path):
    """GDAL reads a .shp whose .dbf was not copied with it: the layer seemed to have no columns ("has no parcel_id
    column ... Columns: none"), which did not say the file was missing."""
    parcels_frame().to_file(tmp_path / "parcels.shp")
    (tmp_path / "parcels.dbf").unlink()
    with pytest.raises(LayerError, match=r"parcels.shp has no parcels.dbf beside it.*copy all of the shapefile"):
        read_source(LayerSource("parcels", str(tmp_path / "parcels.shp")))


def test_zipped_geopackage_in_a_folder_and_zipped_shapefile_without_its_dbf(tmp_path):
    """A GeoPackage zipped inside its folder is read by its layers' names; a zipped shapefile whose .dbf was left
    out is refused by name, as one in a folder is (it read as "Columns: none")."""
    gpkg = tmp_path / "town.gpkg"
    parcels_frame().to_file(gpkg, layer="parcels")
    mains_frame().to_file(gpkg, layer="mains")
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(gpkg, "export/town.gpkg")
    sources = find_layers(str(archive))
    assert sorted(sources) == ["mains", "parcels"] and sources["parcels"].layer == "parcels"
    assert list(load_layers(sources, target_crs=TARGET).parcels["parcel_id"]) == ["1.1-1-1", "1.1-1-2"]
    parcels_frame().to_file(tmp_path / "parcels.shp")
    for name, inside in (("top.zip", ""), ("folder.zip", "shapes/")):
        with zipfile.ZipFile(tmp_path / name, "w") as zf:
            for ext in (".shp", ".shx", ".prj"):
                zf.write(tmp_path / f"parcels{ext}", f"{inside}parcels{ext}")
        (source,) = find_layers(str(tmp_path / name)).values()
        with pytest.raises(LayerError, match=rf"parcels.shp has no parcels.dbf beside it in {name}"):
            read_source(source)


@pytest.mark.parametrize("member", ["../parcels.shp", "a\\..\\..\\parcels.shp", "/etc/parcels.shp", "C:parcels.shp"])
def test_zip_given_on_the_command_line_with_a_member_outside_it_is_refused(tmp_path, member):
    """The CLI's zip reader and the web upload refuse the same escaping member names (one check, two callers)."""
    archive = tmp_path / "town.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("parcels.shp", b"")
        zf.writestr(member, b"")
    with pytest.raises(LayerError, match="outside the archive"):
        find_layers(str(archive))


def reads_as_geopandas(path, **kwargs) -> None:
    """``read_ogr`` gives the frame ``gpd.read_file`` gives: columns, types, values, and exactly the same
    coordinates and kinds, with missing geometries where they were."""
    from geopandas.testing import assert_geodataframe_equal

    ours = read_ogr(str(path), **kwargs)
    theirs = gpd.read_file(path, engine="pyogrio", use_arrow=True, **kwargs)
    if not isinstance(theirs, gpd.GeoDataFrame):  # a table without geometry (a store's run record, its styles)
        pd.testing.assert_frame_equal(ours, theirs)
        return
    assert_geodataframe_equal(ours, theirs, check_less_precise=False)
    assert shapely.equals_exact(ours.geometry.values, theirs.geometry.values, 0)[theirs.geometry.notna()].all()
    assert (ours.geometry.isna() == theirs.geometry.isna()).all()


def test_read_ogr_gives_what_geopandas_reads(tmp_path):
    """The faster Arrow hand-over changes nothing in the frame: columns, types, values, geometries, missing ones."""
    rows = [
        {"pid": "A", "blob": b"\x00\x01", "n": 1.5, "geometry": box(0, 0, 10, 10)},
        {"pid": "B", "blob": None, "n": None, "geometry": None},
        {"pid": None, "blob": b"", "n": 3.0, "geometry": shapely.MultiPolygon([box(20, 0, 30, 10), box(40, 0, 50, 9)])},
        {"pid": "D", "blob": b"x" * 300, "n": 4.0, "geometry": box(0, 0, 9, 9).difference(box(2, 2, 3, 3))},
    ]
    layer = ny_frame(rows)
    path = tmp_path / "town.gpkg"
    pyogrio.write_dataframe(layer, path, layer="parcels", driver="GPKG", use_arrow=True)  # blob: a BLOB column
    pyogrio.write_dataframe(layer.iloc[:0], path, layer="nothing", driver="GPKG", append=False)
    pyogrio.write_dataframe(layer.drop(columns="blob"), tmp_path / "town.geojson", driver="GeoJSON")
    for where, kwargs in [(path, {"layer": "parcels"}), (path, {"layer": "nothing"}), (tmp_path / "town.geojson", {})]:
        reads_as_geopandas(where, **kwargs)
    ours = read_ogr(str(path), layer="parcels")
    assert ours["blob"].tolist() == [b"\x00\x01", None, b"", b"x" * 300]  # Python bytes, as before


@pytest.mark.parametrize(
    "name",
    ["ManchesterLinearFeatures.geojson", "ManchesterPointFeatures.geojson", "ManchesterServiceArea.geojson"],
)
def test_read_ogr_gives_what_geopandas_reads_on_real_data(name):
    reads_as_geopandas(f"tests/data/vt-sewer/manchester/{name}")


def test_read_ogr_gives_what_geopandas_reads_on_the_sample_town(tmp_path):
    from layers.sample import sample_town
    from layers.write import write_layers

    path = tmp_path / "sample.gpkg"
    write_layers(str(path), sample_town(300))
    for name, _ in pyogrio.list_layers(path):
        reads_as_geopandas(path, layer=name)


def test_ids_generated_beside_a_column_a_shapefile_cut_from_the_id_field_say_so():
    """A zipped shapefile cut subdivision_id and subdivision_name to "subdivisio" and "subdivis_1": neither was
    matched (the two are ambiguous), the subdivisions got IDs subdivisions-1 ... and the map labelled them so, with
    no word of it. A layer whose IDs are simply absent gets them as before, without a warning."""
    rows = [{"subdivisio": "S-1", "subdivis_1": "Hill Farm", "geometry": box(0, 0, 500, 500)}]
    out, problems = prepare(ny_frame(rows), SUBDIVISIONS)
    assert list(out["subdivision_id"]) == ["subdivisions-1"]
    said = [p for p in problems if p.check == "generated_ids"]
    assert len(said) == 1 and said[0].severity == "warning", problems
    assert "subdivisio or subdivis_1 may hold them" in said[0].message
    assert said[0].fix.target == "subdivisions.subdivision_id"
    _, plain = prepare(ny_frame([{"plat_note": "x", "geometry": box(0, 0, 500, 500)}]), SUBDIVISIONS)
    assert not [p for p in plain if p.check == "generated_ids"]


def test_control_characters_in_owner_and_mailing_fields_are_named_and_a_nul_never_cuts_a_name():
    """A NUL in an owner name: GDAL cuts text at it when the store (a GeoPackage) is written, so 'A\\x00NUL' became
    "A" and a letter was addressed to "A" with nothing to see. Text with a C0/C1 control character (tab, CR and LF
    are spacing) is named where the layer is loaded: its column, parcels and count, and to clean the cell in the
    source. A warning, the analysis being unaffected; the NUL is kept visible (U+FFFD) so the notices hold the
    letter back rather than address it to what comes before it."""
    import datetime as dt

    from analysis.notices import plan_notices

    rows = [
        ("1.1-1-1", "A\x00NUL", "12 Elm St"),
        ("1.1-1-2", "ROE ANN", "12 Elm\x07St\x9b"),
        ("1.1-1-3", "POE BO", "12 Elm St\tApt 2\r\nRear"),  # tab and line breaks are spacing: nothing to say
        ("1.1-1-4", None, "3 Oak\x00Ave"),
    ]
    gdf = ny_frame(
        [
            {
                "SBL": sbl,
                "OWNER": owner,
                "MAIL_ADDR": street,
                "MAIL_CITY": "Fort Plain",
                "MAIL_ZIP": "13339",
                "geometry": box(i * 60, 25, i * 60 + 50, 125),
            }
            for i, (sbl, owner, street) in enumerate(rows)
        ]
    )
    out, problems = prepare(gdf)
    assert out is not None and not errors(problems)
    found = {p.message.split(" column ")[1].split(" ")[0]: p for p in problems if p.check == "control_characters"}
    assert set(found) == {"OWNER", "MAIL_ADDR"}, problems
    owner, street = found["OWNER"], found["MAIL_ADDR"]
    assert (owner.layer, owner.severity, owner.count, owner.feature_ids) == ("parcels", "warning", 1, ("1.1-1-1",))
    assert (street.count, street.feature_ids) == (2, ("1.1-1-2", "1.1-1-4"))
    assert "U+0000" in owner.message and "U+0007" in street.message and "U+009B" in street.message
    assert "parcels (test): column OWNER (owner_name)" in owner.message
    assert "clean the cell" in owner.message.lower() and "1.1-1-1" in owner.message
    # the NUL kept visible, never the "A" a GeoPackage would keep of it
    assert out.set_index("parcel_id").loc["1.1-1-1", "owner_name"] == "A\ufffdNUL"
    results = out.assign(status="mandated")
    plan = plan_notices(results, profile=load_profile("fort-plain"), notice_date=dt.date(2027, 3, 1))
    held = dict(zip(plan.held["parcel_id"], plan.held["why"], strict=True))
    assert "could not be read" in held["1.1-1-1"] and "control characters" in held["1.1-1-2"]
    assert "1.1-1-3" in set(plan.due["parcel_id"])


@pytest.mark.parametrize("text_type", ["str", object])
def test_control_characters_in_many_parcels_name_a_few_and_the_count(text_type):
    """Text read through Arrow is searched as it is; text of Python objects (other readers) is made text first."""
    gdf = ny_frame(
        [{"SBL": f"P{i}", "OWNER": f"OWNER\x01{i}", "geometry": box(i * 20, 0, i * 20 + 10, 10)} for i in range(30)]
    )
    gdf["OWNER"] = gdf["OWNER"].astype(text_type)
    (problem,) = [p for p in prepare(gdf)[1] if p.check == "control_characters"]
    assert problem.count == 30 and len(problem.feature_ids) == 30
    assert "P0, P1, P2, P3, P4 and 25 more" in problem.message


def test_a_flow_of_zero_on_a_lot_the_layer_marks_occupied_or_gives_living_units_is_warned_of():
    """A house whose meter cell was filled with 0 for "not read" counted as sending nothing: the system's flow came
    out smaller and every other user's share larger, without a word. The layer says so where it marks the lot
    occupied or gives it living units (a warning: a lot can truly send nothing). A vacant lot's 0, a blank flow, and
    a 0 on a lot this layer says nothing of (its buildings decide, after the analysis) are not warned of here."""
    rows = [
        ("HOUSE", "yes", None, 0),  # occupied, meter 0: warned
        ("TWO-FAM", None, 2, "0"),  # living units, meter "0" as text: warned
        ("VACANT", "no", None, 0),  # unoccupied: a 0 believed
        ("METERED", "yes", 1, 300),
        ("UNREAD", "yes", 1, None),  # left empty, as it should be
        ("SILENT", None, None, 0),  # the layer says nothing of its occupancy
    ]
    gdf = ny_frame(
        [
            {"SBL": sbl, "OCC": occ, "UNITS": units, "METER_GPD": flow, "geometry": box(i * 60, 25, i * 60 + 50, 125)}
            for i, (sbl, occ, units, flow) in enumerate(rows)
        ]
    )
    mapping = ColumnMapping(columns={"parcels": {"occupied": "OCC", "flow_gpd": "METER_GPD"}})
    out, problems = prepare(gdf, mapping=mapping)
    assert out is not None and not errors(problems), problems
    (said,) = [p for p in problems if p.check == "zero_flow"]
    assert (said.severity, said.count, said.feature_ids) == ("warning", 2, ("HOUSE", "TWO-FAM"))
    assert said.message.startswith(
        "parcels (test): column METER_GPD (flow_gpd) is 0 for 2 parcels marked occupied or holding living units in "
        "this layer (HOUSE, TWO-FAM), so each counts as sending nothing"
    ), said.message
    assert "Leave the cell empty where the flow is not known" in said.message
    assert out.set_index("parcel_id").loc["HOUSE", "flow_gpd"] == 0  # kept as given: a warning, not a change

    many = ny_frame(
        [{"SBL": f"P{i}", "units": 1, "flow_gpd": 0, "geometry": box(i * 20, 0, i * 20 + 10, 10)} for i in range(30)]
    )
    (said,) = [p for p in prepare(many)[1] if p.check == "zero_flow"]
    assert said.count == 30 and "30 parcels" in said.message and "(P0, P1, P2, P3, P4 and 25 more)" in said.message
    # no occupied or units column at all: nothing this layer says makes a lot occupied
    bare = ny_frame([{"SBL": "P1", "flow_gpd": 0, "geometry": box(0, 0, 10, 10)}])
    assert not [p for p in prepare(bare)[1] if p.check == "zero_flow"]


def test_a_town_just_over_the_state_line_is_measured_in_new_york_east_as_the_readme_says():
    """README: data is refused only beyond 2 degrees outside the measuring CRS's area of use; Manchester, Vermont is
    measured in New York East, whose scale there is off by 0.007 ft per 100 ft (0.002 ft at the state's edge)."""
    from pyproj import Proj

    lots = gpd.GeoDataFrame(geometry=[box(-73.0725, 43.1635, -73.0720, 43.1640)], crs="EPSG:4326")
    measured, problems = check_and_reproject(lots, layer="parcels", label="parcels", target=measuring_crs("EPSG:2260"))
    assert measured is not None and [p for p in problems if p.severity == "error"] == []
    new_york_east = Proj(measuring_crs("EPSG:2260"))
    off_ft = 100 * (new_york_east.get_factors(-73.07, 43.16).meridional_scale - 1)
    assert round(off_ft, 3) == 0.007
    assert round(100 * (new_york_east.get_factors(-73.3, 41.6).meridional_scale - 1), 3) == 0.002


@pytest.mark.parametrize(("members", "held"), [({"readme.txt": b"hi"}, "it holds readme.txt"), ({}, "it is empty")])
def test_a_zip_of_no_map_layer_says_what_it_holds_not_that_it_may_be_damaged(tmp_path, members, held):
    """``--data town.zip`` of a README (or of nothing) was told GDAL's "not recognized" and to see in QGIS whether
    the zip was damaged; the web upload already named what such a zip holds."""
    path = tmp_path / "town.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    with pytest.raises(LayerError) as caught:
        find_layers(str(path))
    said = str(caught.value)
    assert f"town.zip holds no map layer sewerplan reads ({held})" in said
    assert "damaged" not in said and "GDAL" not in said


def test_a_streets_layer_whose_polygon_holds_the_lots_is_refused(tmp_path):
    """A service-area polygon given as the streets layer was taken as one right-of-way around every parcel, and the
    mandated parcels went from 57 to 275 without a word (a tester). A polygon wider than any right-of-way holding
    whole lots is refused, naming them; a long right-of-way holding a road parcel a block (a second tester: three
    road lots refused the whole layer), and centreline streets, pass."""
    parcels, mains, streets = (tmp_path / f"{k}.gpkg" for k in ("parcels", "mains", "streets"))
    lots = [{"SBL": f"L-{i}", "geometry": box(60 * i, 25, 60 * i + 50, 125)} for i in range(4)]
    roads = [{"SBL": f"ROAD-{i}", "geometry": box(1000 * i - 99, -24, 1000 * i + 899, 24)} for i in range(3)]
    ny_frame(lots + roads).to_file(parcels)
    mains_frame().to_file(mains)
    sources = {k: LayerSource(k, str(p)) for k, p in (("parcels", parcels), ("mains", mains), ("streets", streets))}
    ny_frame([{"street_id": "AREA", "geometry": box(-500, -500, 3000, 1000)}]).to_file(streets)
    with pytest.raises(LayerValidationError) as refused:
        load_layers(sources, target_crs=TARGET)
    (problem,) = errors(refused.value.problems)
    assert problem.check == "street_holds_lots" and problem.feature_ids == ("AREA",)
    assert "1 of its polygons is wider than any street right-of-way (500 ft on average) and holds whole parcels" in (
        problem.message
    )
    assert "(L-0, L-1, L-2, L-3, ROAD-0 and 2 more)" in problem.message
    ny_frame([{"street_id": "MAPLE", "geometry": box(-100, -25, 3000, 25)}]).to_file(streets)  # holds 3 road lots
    assert not errors(load_layers(sources, target_crs=TARGET).problems)


def test_a_layer_of_the_wrong_kind_without_its_id_column_is_told_both_at_once():
    """Mains given as the parcels were told only that parcel_id is missing; that they are lines came once the
    column was mapped (a tester). Every problem at once."""
    lines = mains_frame().drop(columns=["PIPE_ID"])
    out, problems = prepare(lines)
    assert out is None
    assert {p.check for p in errors(problems)} >= {"geometry_type"}
    assert any("has no parcel_id column" in p.message for p in errors(problems))
    assert any(
        "must hold Polygon or MultiPolygon features" in p.message and "1 LineString" in p.message for p in problems
    )


def test_living_units_are_written_to_a_csv_as_whole_numbers(tmp_path):
    """The results CSV gave living units as "1.0" (a column with a gap is read as floats; a tester); a column with a
    fraction in it is written as it is."""
    from pathlib import Path

    from layers.write import write_csv

    path = write_csv(
        tmp_path / "r.csv", pd.DataFrame({"parcel_id": ["A", "B", "C"], "units": [1.0, None, 12.0]}), column_types=True
    )
    lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    assert lines[1:] == ['"A","1"', '"B",""', '"C","12"']
    assert (tmp_path / "r.csvt").read_bytes() == b'"String","Integer"\r\n'
    odd = write_csv(tmp_path / "o.csv", pd.DataFrame({"units": [1.5, 2.0]}))
    assert Path(odd).read_text(encoding="utf-8-sig").splitlines()[1:] == ['"1.5"', '"2.0"']
