"""The planner's map page and its offline base tiles."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from flask import Blueprint, Response, current_app, g, render_template, url_for

from gisapp import services
from gisapp.maps import build_map
from gisapp.security import requires
from gisapp.state import map_data, recorded_spec
from layers.store import latest_run

bp = Blueprint("map", __name__)

STATUS_COLOURS = {
    "mandated": "#d7301f",
    "in_range_not_abutting": "#fc8d59",
    "out_of_range": "#fdcc8a",
    "connected": "#2b8cbe",
    "unoccupied": "#bdbdbd",
    "no_public_sewer": "#756bb1",
}


@bp.get("/")
@requires("viewer")
def index():
    data = map_data()
    parts = build_map(
        data.bounds(),
        static_url=url_for("static", filename=""),
        blank_tiles_url=url_for("map.blank_tile", z=0, x=0, y=0).replace("/0/0/0", "/{z}/{x}/{y}"),
    )
    run = latest_run(data.path)
    spec = recorded_spec(data.path)  # the run form starts from what the latest run used
    # Folium's own inline scripts run under the page's Content-Security-Policy nonce.
    parts = replace(parts, header=parts.header.replace("<script>", f'<script nonce="{g.csp_nonce}">'))
    return render_template(
        "map/index.html",
        parts=parts,
        run=run,
        colours=STATUS_COLOURS,
        profiles=services.profile_names(),
        has_results=data.has_results,
        settings=spec.settings,
        digitised_direction=spec.digitised_direction,
    )


@bp.get("/tiles/blank/<int:z>/<int:x>/<int:y>.png")
def blank_tile(z: int, x: int, y: int):
    """The offline base layer: the same plain tile everywhere, served from memory."""
    tile = current_app.extensions.setdefault("blank_tile", (Path(current_app.static_folder) / "blank.png").read_bytes())
    return Response(tile, mimetype="image/png", headers={"Cache-Control": "public, max-age=86400"})
