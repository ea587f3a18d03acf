"""The Folium map skeleton: base layers, layer control, scale; the data layers are loaded by static/map.js.

Leaflet is served from the app's own static folder, and the default base layer is a plain background served by
the app, so the map works with no internet connection; an online street map is offered as a second base layer.
No feature data is inlined here: parcels, mains and manholes come from the bbox API as the user pans.
"""

from __future__ import annotations

from dataclasses import dataclass

import folium

ONLINE_TILES = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
ONLINE_ATTRIBUTION = "&copy; OpenStreetMap contributors"


@dataclass(frozen=True)
class MapParts:
    """The pieces of the rendered map to place in our page: head tags, the map div, the script, and names."""

    header: str
    body: str
    script: str
    map_name: str
    control_name: str


def build_map(bounds: tuple[float, float, float, float] | None, *, static_url: str, blank_tiles_url: str) -> MapParts:
    """A Folium map fitted to ``bounds`` (west, south, east, north), with offline and online base layers."""
    west, south, east, north = bounds or (-74.7, 42.9, -74.6, 43.0)
    m = folium.Map(
        location=[(south + north) / 2, (west + east) / 2],
        zoom_start=15,
        tiles=None,
        control_scale=True,
        prefer_canvas=True,
        max_zoom=20,
    )
    m.default_js = [("leaflet", f"{static_url}vendor/leaflet/leaflet.js")]
    m.default_css = [("leaflet_css", f"{static_url}vendor/leaflet/leaflet.css")]
    folium.TileLayer(
        tiles=blank_tiles_url,
        name="Plain background (offline)",
        attr="sewerplan",
        max_zoom=20,
        overlay=False,
        control=True,
    ).add_to(m)
    folium.TileLayer(
        tiles=ONLINE_TILES,
        name="Street map (online)",
        attr=ONLINE_ATTRIBUTION,
        max_zoom=19,
        overlay=False,
        control=True,
        show=False,
    ).add_to(m)
    control = folium.LayerControl(collapsed=False)
    control.add_to(m)
    m.fit_bounds([[south, west], [north, east]])
    root = m.get_root()
    root.render()
    return MapParts(
        header=root.header.render(),
        body=root.html.render(),
        script=root.script.render(),
        map_name=m.get_name(),
        control_name=control.get_name(),
    )
