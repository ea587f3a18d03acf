"""A deterministic sample village in New York (EPSG:2260, US survey feet), for the demo, tests and benchmarks.

The village is a grid of blocks: east-west streets lined with lots on both faces, north-south cross streets every
600 ft. Lots vary in frontage and depth; a band of shallow lots backs onto the last sewered street, so their rear
lines come within 100 ft of a main they do not abut. The northern streets ("the hill") have no sewer yet; a
private main and a storm sewer run there and must be ignored. Sewered east-west streets carry 8-inch mains
flowing east to 12-inch trunks on every fifth cross street, which flow south to a 15-inch interceptor on the
southernmost street and on east to the treatment plant. Manholes stand at every main end (every change of
direction, at most 300 ft apart). Inverts fall 9 ft below a ground surface that slopes to the south-east.

Owners are drawn from name lists (a few own several parcels; some mail from out of town); buildings include
multi-unit houses, rear cottages on interior lots and sheds too small to count as occupied. Some lots on sewered
streets are already connected. Everything is built from numpy arrays: ``n_parcels`` scales to 1,000,000.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

CRS = "EPSG:2260"
ORIGIN = (457_000.0, 1_490_000.0)  # near Fort Plain, NY, in New York East feet
ROW_FT = 50.0
BLOCK_FT = 600.0  # cross-street centreline spacing
DEPTHS_FT = np.array([150.0, 130.0, 110.0, 170.0])
SHALLOW_FT = 70.0
TRUNK_EVERY = 5

EW_NAMES = (
    "Main",
    "Canal",
    "Willow",
    "River",
    "Elm",
    "Center",
    "Mohawk",
    "Prospect",
    "Hill",
    "Church",
    "Spring",
    "Union",
    "Market",
    "Orchard",
    "Maple",
    "Oak",
    "Chestnut",
    "Walnut",
    "Academy",
    "Clinton",
    "Reid",
    "Abbott",
    "Division",
    "Sand",
    "Mill",
    "Bridge",
    "Park",
    "Cherry",
    "Pleasant",
    "Ridge",
)
NS_NAMES = (
    "Wagner",
    "Grand",
    "Hancock",
    "Lincoln",
    "Otsego",
    "Schuyler",
    "Frey",
    "Morton",
    "Webster",
    "Sanders",
    "Beekman",
    "Fulton",
    "Cady",
    "Herkimer",
    "Dutch",
    "Palatine",
    "Minden",
    "Nellis",
    "Kring",
    "Zoller",
)
EW_TYPES = ("St", "Ave", "Pl", "Ter", "Blvd", "Row", "Way", "Walk")
NS_TYPES = ("Rd", "Ln", "Dr", "Ct", "Pkwy", "Trl", "Xing", "Run")
LAST = (
    "SMITH",
    "JOHNSON",
    "NELLIS",
    "WAGNER",
    "VAN ALSTYNE",
    "KRING",
    "ZOLLER",
    "MILLER",
    "DAVIS",
    "GARCIA",
    "BROWN",
    "JONES",
    "MARTINEZ",
    "HERKIMER",
    "FREY",
    "SCHUYLER",
    "O'BRIEN",
    "D'AGOSTINO",
    "NGUYEN",
    "PATEL",
    "KOWALSKI",
    "MURPHY",
    "CLARK",
    "LEWIS",
    "WALKER",
    "HALL",
    "YOUNG",
    "ALLEN",
    "KING",
    "WRIGHT",
)
FIRST = (
    "JOHN",
    "MARY",
    "ROBERT",
    "PATRICIA",
    "JAMES",
    "LINDA",
    "MICHAEL",
    "BARBARA",
    "WILLIAM",
    "ELIZABETH",
    "DAVID",
    "JENNIFER",
    "RICHARD",
    "MARIA",
    "JOSEPH",
    "SUSAN",
    "THOMAS",
    "MARGARET",
    "CHARLES",
    "DOROTHY",
)
COMPANIES = (
    "MOHAWK VALLEY HOLDINGS LLC",
    "CANAL STREET PROPERTIES INC",
    "FORT PLAIN HOUSING AUTH",
    "RIVERSIDE REALTY LLC",
    "ST JAMES CHURCH",
)
OUT_OF_TOWN = (
    ("Albany", "NY", "12203"),
    ("Schenectady", "NY", "12305"),
    ("Utica", "NY", "13501"),
    ("Boca Raton", "FL", "33431"),
    ("Brooklyn", "NY", "11215"),
    ("Bennington", "VT", "05201"),
)
VILLAGE = ("Fort Plain", "NY", "13339")
# Property class, share of occupied lots, units (low, high) inclusive.
CLASSES = (
    (210, 0.62, 1, 1),
    (215, 0.05, 2, 2),
    (220, 0.12, 2, 2),
    (230, 0.05, 3, 3),
    (280, 0.04, 4, 6),
    (411, 0.03, 6, 12),
    (484, 0.05, 0, 0),
    (612, 0.02, 0, 0),
    (710, 0.02, 0, 0),
)


def sample_town(n_parcels: int = 2000, *, seed: int = 1982) -> dict[str, gpd.GeoDataFrame]:
    """Build the sample village: parcels, buildings, streets, mains, manholes and treatment_plants.

    Examples
    --------
    >>> town = sample_town(300)
    >>> sorted(town), len(town["parcels"]) == 300, town["parcels"].crs.to_epsg()
    (['buildings', 'mains', 'manholes', 'parcels', 'streets', 'treatment_plants'], True, 2260)
    >>> town["parcels"]["parcel_id"].is_unique
    True
    """
    if n_parcels < 50:
        raise ValueError("The sample town needs at least 50 parcels.")
    rng = np.random.default_rng(seed)
    lots_per_face = 8.0
    faces = int(np.ceil(n_parcels / lots_per_face))
    n_streets = max(4, int(round(np.sqrt(faces / 2 * 0.9))))
    n_blocks = int(np.ceil(faces / (2 * n_streets)))
    n_sewered = max(2, int(np.ceil(n_streets * 0.78)))

    depth = DEPTHS_FT[np.arange(n_streets + 1) % len(DEPTHS_FT)]
    depth[n_sewered - 1] = SHALLOW_FT  # lots between the last sewered street and the first unsewered one
    street_y = ORIGIN[1] + np.concatenate([[depth[0] + ROW_FT / 2], np.zeros(n_streets - 1)])
    for j in range(1, n_streets):
        street_y[j] = street_y[j - 1] + ROW_FT + 2 * depth[j - 1]
    cross_x = ORIGIN[0] + BLOCK_FT * np.arange(n_blocks + 1)

    parcels, buildings = _parcels_and_buildings(rng, street_y, cross_x, depth, n_sewered, n_parcels)
    streets = _streets(street_y, cross_x, depth)
    mains, manholes, plant = _network(rng, street_y, cross_x, n_sewered)
    return {
        "parcels": parcels,
        "buildings": buildings,
        "streets": streets,
        "mains": mains,
        "manholes": manholes,
        "treatment_plants": plant,
    }


def _street_name(j: np.ndarray, names: tuple[str, ...], types: tuple[str, ...]) -> np.ndarray:
    base = np.array(names, dtype=object)[j % len(names)]
    kind = np.array(types, dtype=object)[(j // len(names)) % len(types)]
    return base + " " + kind


def _parcels_and_buildings(rng, street_y, cross_x, depth, n_sewered, n_target):
    n_streets, n_blocks = len(street_y), len(cross_x) - 1
    # One face per (street, block, side); side 0 = south of the street, 1 = north.
    j, k, side = (a.ravel() for a in np.meshgrid(np.arange(n_streets), np.arange(n_blocks), [0, 1], indexing="ij"))
    per_face = 8 + (((j * 7 + k * 3) % 5) == 0) * 3 - ((j + k) % 4 == 0) * 2  # 6, 8 or 11 lots
    face = np.repeat(np.arange(len(j)), per_face)
    order = np.arange(len(face)) - np.repeat(np.cumsum(per_face) - per_face, per_face)
    weights = rng.uniform(0.7, 1.3, len(face))
    face_total = np.bincount(face, weights)
    x_inner0 = cross_x[k] + ROW_FT / 2
    width = BLOCK_FT - ROW_FT
    cum = np.cumsum(weights) - np.repeat(np.cumsum(face_total) - face_total, per_face)
    x1 = np.round(x_inner0[face] + width * cum / face_total[face], 2)
    x0 = np.where(order == 0, x_inner0[face], np.roll(x1, 1))  # shared side lines: no slivers, no overlaps
    fj, fs = j[face], side[face]
    lot_depth = np.where(fs == 1, depth[np.minimum(fj, len(depth) - 1)], depth[np.maximum(fj - 1, 0)])
    lot_depth = np.where((fs == 0) & (fj == 0), depth[0], lot_depth)
    front = street_y[fj] + np.where(fs == 1, ROW_FT / 2, -ROW_FT / 2)
    back = front + np.where(fs == 1, lot_depth, -lot_depth)
    # Keep exactly the parcels asked for: the last face of the northernmost street is left part empty.
    keep = slice(0, n_target)
    x0, x1, front, back, fj, fs, order, face = (a[keep] for a in (x0, x1, front, back, fj, fs, order, face))
    lot_depth = lot_depth[keep]
    geom = shapely.box(x0, np.minimum(front, back), x1, np.maximum(front, back))
    n = len(geom)

    sewered = fj < n_sewered
    parcel_id = (
        pd.Series(fj + 1).astype(str)
        + "."
        + pd.Series(k[face] + 1).astype(str)
        + "-"
        + pd.Series(fs + 1).astype(str)
        + "-"
        + pd.Series(order + 1).astype(str)
    )
    house_no = 100 * (k[face] + 1) + 2 * order + fs
    street = _street_name(fj, EW_NAMES, EW_TYPES)
    site = pd.Series(house_no).astype(str).to_numpy(object) + " " + street

    vacant = rng.random(n) < 0.07
    shares = np.array([c[1] for c in CLASSES])
    cls_idx = rng.choice(len(CLASSES), n, p=shares / shares.sum())
    lo = np.array([c[2] for c in CLASSES])[cls_idx]
    hi = np.array([c[3] for c in CLASSES])[cls_idx]
    units = rng.integers(lo, hi + 1).astype(float)
    prop_class = np.array([c[0] for c in CLASSES])[cls_idx]
    prop_class = np.where(vacant, 311, prop_class)
    units = np.where(vacant | (units == 0), np.nan, units)

    last = np.array(LAST, dtype=object)[rng.integers(0, len(LAST), n)]
    first = np.array(FIRST, dtype=object)[rng.integers(0, len(FIRST), n)]
    second = np.array(FIRST, dtype=object)[rng.integers(0, len(FIRST), n)]
    owner = np.where(rng.random(n) < 0.4, last + " " + first + " & " + second, last + " " + first)
    company = np.isin(prop_class, [411, 484, 710]) | (rng.random(n) < 0.02)
    owner = np.where(company, np.array(COMPANIES, dtype=object)[rng.integers(0, len(COMPANIES), n)], owner)
    owner = np.where(prop_class == 612, "FORT PLAIN CENTRAL SCHOOL DIST", owner)
    mail, city, state, zipc = (
        site.copy(),
        np.full(n, VILLAGE[0], object),
        np.full(n, VILLAGE[1], object),
        np.full(n, VILLAGE[2], object),
    )
    away = (rng.random(n) < 0.14) | company
    town = rng.integers(0, len(OUT_OF_TOWN), n)
    mail = np.where(
        away,
        pd.Series(rng.integers(1, 999, n)).astype(str).to_numpy(object)
        + " "
        + np.array(("Lake Rd", "State St", "Ocean Blvd", "Union Ave"), object)[town % 4],
        mail,
    )
    mail = np.where(
        away & (rng.random(n) < 0.3), "PO BOX " + pd.Series(rng.integers(10, 999, n)).astype(str).to_numpy(object), mail
    )
    for arr, pos in ((city, 0), (state, 1), (zipc, 2)):
        arr[away] = np.array([t[pos] for t in OUT_OF_TOWN], object)[town[away]]
    # Owners of several parcels: copy owner and mailing address from another parcel.
    multi = np.flatnonzero(rng.random(n) < 0.05)
    donor = rng.integers(0, n, len(multi))
    for arr in (owner, mail, city, state, zipc):
        arr[multi] = arr[donor]
    connected = sewered & ~vacant & (rng.random(n) < 0.68)

    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": parcel_id.to_numpy(object),
            "site_address": site,
            "site_city": VILLAGE[0],
            "site_state": VILLAGE[1],
            "site_zip": VILLAGE[2],
            "owner_name": owner,
            "mail_address": mail,
            "mail_city": city,
            "mail_state": state,
            "mail_zip": zipc,
            "property_class": prop_class.astype(str),
            "units": units,
            "connected": np.where(connected, "Y", "N"),
        },
        geometry=geom,
        crs=CRS,
    )

    # Front building: set back 20-35 ft from the front lot line, on lots that are not vacant.
    lot_w = x1 - x0
    has = ~vacant
    setback = rng.uniform(20, 35, n)
    bw = np.clip(lot_w * rng.uniform(0.45, 0.7, n), 18, 90)
    bd = np.clip(np.abs(back - front) * rng.uniform(0.2, 0.35, n), 24, 60)
    bx0 = x0 + (lot_w - bw) / 2
    dirn = np.where(fs == 1, 1.0, -1.0)
    fy0 = front + dirn * setback
    fy1 = fy0 + dirn * bd
    front_b = shapely.box(bx0, np.minimum(fy0, fy1), bx0 + bw, np.maximum(fy0, fy1))
    # Rear cottage on some deep interior lots; sheds on others (120 sq ft: too small to count as occupied).
    interior = (order > 0) & (order < per_face[face] - 1)
    rear = has & interior & (np.abs(back - front) >= 130) & (rng.random(n) < 0.08)
    ry1 = back - dirn * 12
    ry0 = ry1 - dirn * 24
    cx = x0 + lot_w / 2
    rear_b = shapely.box(cx - 11, np.minimum(ry0, ry1), cx + 11, np.maximum(ry0, ry1))
    shed = (rng.random(n) < 0.10) & ~rear
    sx = x0 + 4
    sy1 = back - dirn * 4
    sy0 = sy1 - dirn * 12
    shed_b = shapely.box(sx, np.minimum(sy0, sy1), sx + 10, np.maximum(sy0, sy1))

    idx = np.concatenate([np.flatnonzero(has), np.flatnonzero(rear), np.flatnonzero(shed)])
    kind = np.concatenate(
        [np.full(has.sum(), "main", object), np.full(rear.sum(), "rear", object), np.full(shed.sum(), "shed", object)]
    )
    b_units = np.concatenate([units[has], np.ones(rear.sum()), np.full(shed.sum(), np.nan)])
    b_geom = np.concatenate([front_b[has], rear_b[rear], shed_b[shed]])
    order_b = np.lexsort((kind != "main", idx))
    buildings = gpd.GeoDataFrame(
        {
            "building_id": ["B-" + str(i + 1) for i in range(len(idx))],
            "parcel_id": parcel_id.to_numpy(object)[idx[order_b]],
            "building_use": kind[order_b],
            "units": b_units[order_b],
        },
        geometry=b_geom[order_b],
        crs=CRS,
    )
    return parcels, buildings


def _streets(street_y, cross_x, depth):
    n_streets, n_blocks = len(street_y), len(cross_x) - 1
    j, k = (a.ravel() for a in np.meshgrid(np.arange(n_streets), np.arange(n_blocks), indexing="ij"))
    ew = shapely.linestrings(
        np.stack([np.stack([cross_x[k], street_y[j]], -1), np.stack([cross_x[k + 1], street_y[j]], -1)], 1)
    )
    y_lo = street_y[0] - ROW_FT / 2 - depth[0]
    y_hi = street_y[-1] + ROW_FT / 2 + depth[n_streets - 1]
    ys = np.concatenate([[y_lo], street_y, [y_hi]])
    kk, seg = (a.ravel() for a in np.meshgrid(np.arange(n_blocks + 1), np.arange(len(ys) - 1), indexing="ij"))
    ns = shapely.linestrings(
        np.stack([np.stack([cross_x[kk], ys[seg]], -1), np.stack([cross_x[kk], ys[seg + 1]], -1)], 1)
    )
    names = np.concatenate([_street_name(j, EW_NAMES, EW_TYPES), _street_name(kk, NS_NAMES, NS_TYPES)])
    geom = np.concatenate([ew, ns])
    return gpd.GeoDataFrame(
        {
            "street_id": ["S-" + str(i + 1) for i in range(len(geom))],
            "street_name": names,
            "row_width_ft": np.full(len(geom), ROW_FT),
        },
        geometry=geom,
        crs=CRS,
    )


def _network(rng, street_y, cross_x, n_sewered):
    """Mains digitised in flow direction, split at most 300 ft apart, with manholes at every end."""
    n_blocks = len(cross_x) - 1
    offset = 5.0
    segs, kind = [], []
    # East-west collectors on sewered streets: two 300-ft mains per block, flowing east.
    j, k, half = (a.ravel() for a in np.meshgrid(np.arange(n_sewered), np.arange(n_blocks), [0, 1], indexing="ij"))
    trunk_k = np.unique(np.concatenate([np.arange(TRUNK_EVERY, n_blocks + 1, TRUNK_EVERY), [n_blocks]]))
    xa = cross_x[k] + half * BLOCK_FT / 2
    # A collector starts at its own head manhole just past a trunk street: it flows east to the next trunk
    # and does not take flow away from the one behind it.
    xa = np.where((j > 0) & (half == 0) & np.isin(k, trunk_k), xa + 10.0, xa)
    x_end = cross_x[k] + (half + 1) * BLOCK_FT / 2
    y = street_y[j] + offset
    segs.append(np.stack([xa, y, x_end, y], -1))
    kind.append(np.where(j == 0, "interceptor", "collector"))
    # Trunks on every fifth cross street (and the last), flowing south from street to street.
    tk, tj = (a.ravel() for a in np.meshgrid(trunk_k, np.arange(1, n_sewered), indexing="ij"))
    segs.append(np.stack([cross_x[tk], street_y[tj] + offset, cross_x[tk], street_y[tj - 1] + offset], -1))
    kind.append(np.full(len(tk), "trunk", object))
    # To the plant, east of the last block on the southernmost street.
    plant_xy = (cross_x[-1] + 400.0, street_y[0] + offset)
    segs.append(np.array([[cross_x[-1], street_y[0] + offset, plant_xy[0], plant_xy[1]]]))
    kind.append(np.array(["outfall"], object))
    seg = np.concatenate(segs)
    kind = np.concatenate(kind).astype(object)
    # Collectors on a block east of the last trunk would flow past it: they end at the last cross street anyway.
    n_real = len(seg)

    # A storm sewer and a private main on the hill (unsewered), and old abandoned pipes laid 8 ft beside a few
    # collectors: all must be ignored.
    hill = min(n_sewered, len(street_y) - 1)
    collectors = np.flatnonzero(kind == "collector")
    old_pipes = (
        seg[rng.choice(collectors, size=min(3, len(collectors)), replace=False)] + [0, 8.0, 0, 8.0]
        if len(collectors)
        else np.zeros((0, 4))
    )
    extra = np.array(
        [
            [cross_x[0], street_y[hill] - offset, cross_x[min(2, n_blocks)], street_y[hill] - offset],
            [
                cross_x[min(1, n_blocks)] + 50,
                street_y[hill] + offset,
                cross_x[min(1, n_blocks)] + 350,
                street_y[hill] + offset,
            ],
        ]
    )
    seg = np.concatenate([seg, extra, old_pipes])
    n_old = len(old_pipes)
    sewer_type = np.concatenate(
        [np.full(n_real, "sanitary", object), ["storm", "sanitary"], np.full(n_old, "sanitary", object)]
    )
    ownership = np.concatenate(
        [np.full(n_real, "public", object), ["public", "private"], np.full(n_old, "public", object)]
    )
    status = np.concatenate([np.full(n_real + 2, "existing", dtype=object), np.full(n_old, "abandoned", object)])

    diameter = np.select([kind == "interceptor", kind == "trunk", kind == "outfall"], [15.0, 12.0, 18.0], 8.0)
    diameter = np.concatenate([diameter, [15.0, 6.0], np.full(n_old, 6.0)])
    old = rng.choice(n_real, size=min(3, n_real // 100), replace=False)
    diameter[old] = 6.0

    ground = _ground(seg[:, 0], seg[:, 1], cross_x, street_y), _ground(seg[:, 2], seg[:, 3], cross_x, street_y)
    lines = shapely.linestrings(seg.reshape(-1, 2, 2))
    # Manholes belong to the public sanitary sewer: one at every end of its active mains.
    public = (sewer_type == "sanitary") & (ownership == "public") & (status == "existing")
    ends = np.concatenate([seg[public, :2], seg[public, 2:]])
    uniq, inverse = np.unique(np.round(ends, 1), axis=0, return_inverse=True)
    mh_ids = np.array(["MH-" + str(i + 1) for i in range(len(uniq))], dtype=object)
    from_mh = np.full(len(seg), None, dtype=object)
    to_mh = np.full(len(seg), None, dtype=object)
    from_mh[public], to_mh[public] = mh_ids[inverse[: public.sum()]], mh_ids[inverse[public.sum() :]]
    street = np.concatenate(
        [
            _street_name(j, EW_NAMES, EW_TYPES),
            _street_name(tk, NS_NAMES, NS_TYPES),
            ["(to plant)"],
            _street_name(np.array([hill, hill]), EW_NAMES, EW_TYPES),
            np.full(n_old, "(old pipe)", dtype=object),
        ]
    )
    mains = gpd.GeoDataFrame(
        {
            "main_id": ["M-" + str(i + 1) for i in range(len(seg))],
            "sewer_type": sewer_type,
            "ownership": ownership,
            "status": status,
            "diameter_in": diameter,
            "street_name": street,
            "from_manhole": from_mh,
            "to_manhole": to_mh,
            "us_invert_ft": np.round(ground[0] - 9.0, 2),
            "ds_invert_ft": np.round(ground[1] - 9.0, 2),
        },
        geometry=lines,
        crs=CRS,
    )
    rim = _ground(uniq[:, 0], uniq[:, 1], cross_x, street_y)
    is_plant = (np.abs(uniq[:, 0] - plant_xy[0]) < 0.5) & (np.abs(uniq[:, 1] - plant_xy[1]) < 0.5)
    manholes = gpd.GeoDataFrame(
        {
            "manhole_id": mh_ids,
            "rim_ft": np.round(rim, 2),
            "invert_ft": np.round(rim - 9.0, 2),
            "structure": np.where(is_plant, "plant inlet", "manhole"),
        },
        geometry=shapely.points(uniq),
        crs=CRS,
    )
    plant = gpd.GeoDataFrame(
        {
            "plant_id": ["WWTP-1"],
            "name": ["Sample Village Wastewater Treatment Plant"],
            "outfall_manhole": mh_ids[is_plant][:1],
        },
        geometry=[shapely.Point(plant_xy[0] + 60, plant_xy[1])],
        crs=CRS,
    )
    return mains, manholes, plant


def _ground(x, y, cross_x, street_y):
    """Ground elevation (ft): falls 0.4% to the south and 0.2% to the east of the village's north-west corner."""
    return 420.0 + 0.004 * (y - street_y[0]) - 0.002 * (x - cross_x[0])
