-- The connection mandate in DuckDB spatial SQL, as a county GIS analyst would write it (issue 18's peer).
--
-- Input tables (bench/bench_mandate.py loads them from the sample town, in EPSG:2260 feet):
--   parcels(pid, parcel_id, connected, geom)   mains(mid, main_id, sewer_type, ownership, status, geom)
--   streets(sid, row_width_ft, geom)           buildings(bid, occupied, geom)
-- Output: table result(pid, main_id, distance_ft, abuts_sewered_street, occupied, status).
-- {names} in braces are the profile's settings, filled in by the benchmark (Fort Plain's by default).
-- DuckDB has no nearest-neighbour operator: the nearest main is found by ST_DWithin joins over widening
-- radii, each for the parcels the last one left without a main.

-- Mains that count: public sanitary, not abandoned or proposed.
CREATE OR REPLACE TEMP TABLE counting AS
SELECT mid, main_id, geom FROM mains
WHERE (sewer_type IS NULL OR sewer_type = 'sanitary' {combined} {force})
  AND ({count_private} OR coalesce(ownership, '') <> 'private')
  AND coalesce(status, '') NOT IN ('abandoned', 'proposed')
  AND geom IS NOT NULL AND NOT ST_IsEmpty(geom);

-- Rights-of-way: centrelines buffered by half their width (flat ends), grown by the abut tolerance.
CREATE OR REPLACE TEMP TABLE ways AS
SELECT sid, width_ft, row_geom,
       ST_Buffer(row_geom, {abut_tolerance_ft}, 8, 'CAP_ROUND', 'JOIN_MITRE', 2) AS reach
FROM (
    SELECT sid, width_ft,
           CASE WHEN ST_Dimension(geom) = 1
                THEN ST_Buffer(geom, width_ft / 2, 8, 'CAP_FLAT', 'JOIN_MITRE', 2)
                ELSE geom END AS row_geom
    FROM (SELECT sid, geom, CASE WHEN row_width_ft > 0 THEN row_width_ft ELSE {default_row_width_ft} END AS width_ft
          FROM streets)
);

-- A main lies in a street when at least {main_in_street_min_row_widths} street widths of it run inside.
CREATE OR REPLACE TEMP TABLE holds AS
SELECT DISTINCT w.sid, c.mid
FROM ways w JOIN counting c ON ST_Intersects(w.row_geom, c.geom)
WHERE ST_Length(ST_Intersection(c.geom, w.row_geom)) >= {main_in_street_min_row_widths} * w.width_ft;

CREATE OR REPLACE TEMP TABLE abuts AS
SELECT p.pid, w.sid FROM parcels p JOIN ways w ON ST_Intersects(p.geom, w.reach);

-- The nearest counting main, by widening radius.
CREATE OR REPLACE TEMP TABLE nearest (pid BIGINT, mid BIGINT, d DOUBLE);
{nearest_rounds}

-- "Said public sewer": where the nearest main is not in a street the parcel abuts, the nearest main within
-- reach that is decides.
CREATE OR REPLACE TEMP TABLE said AS
SELECT a.pid, arg_min(c.mid, ST_Distance(p.geom, c.geom)) AS mid, min(ST_Distance(p.geom, c.geom)) AS d
FROM abuts a
JOIN holds h ON h.sid = a.sid
JOIN counting c ON c.mid = h.mid
JOIN parcels p ON p.pid = a.pid
WHERE ST_DWithin(p.geom, c.geom, {reach_ft})
GROUP BY a.pid;

CREATE OR REPLACE TEMP TABLE deciding AS
SELECT n.pid,
       CASE WHEN in_street.pid IS NULL AND n.d <= {reach_ft} AND s.pid IS NOT NULL THEN s.mid ELSE n.mid END AS mid,
       CASE WHEN in_street.pid IS NULL AND n.d <= {reach_ft} AND s.pid IS NOT NULL THEN s.d ELSE n.d END AS d
FROM nearest n
LEFT JOIN (SELECT DISTINCT a.pid, h.mid FROM abuts a JOIN holds h ON h.sid = a.sid) in_street
       ON in_street.pid = n.pid AND in_street.mid = n.mid
LEFT JOIN said s ON s.pid = n.pid;

-- Occupied: a building of {min_occupied_building_sqft} sq ft or more (or marked occupied) whose inside point
-- lies in the parcel.
CREATE OR REPLACE TEMP TABLE occupied AS
SELECT DISTINCT p.pid
FROM (SELECT CASE WHEN ST_Intersects(geom, ST_Centroid(geom)) THEN ST_Centroid(geom)
                  ELSE ST_PointOnSurface(geom) END AS point
      FROM buildings
      WHERE coalesce(occupied, ST_Dimension(geom) = 0 OR ST_Area(geom) >= {min_occupied_building_sqft})) b
JOIN parcels p ON ST_Within(b.point, p.geom);

CREATE OR REPLACE TABLE result AS
SELECT p.pid, c.main_id, d.d AS distance_ft,
       sewered.pid IS NOT NULL AS abuts_sewered_street,
       o.pid IS NOT NULL AS occupied,
       CASE WHEN coalesce(p.connected, false) THEN 'connected'
            WHEN d.mid IS NULL THEN 'no_public_sewer'
            WHEN o.pid IS NULL THEN 'unoccupied'
            WHEN d.d > {reach_ft} THEN 'out_of_range'
            WHEN sewered.pid IS NULL THEN 'in_range_not_abutting'
            ELSE 'mandated' END AS status
FROM parcels p
LEFT JOIN deciding d ON d.pid = p.pid
LEFT JOIN counting c ON c.mid = d.mid
LEFT JOIN occupied o ON o.pid = p.pid
LEFT JOIN (SELECT DISTINCT a.pid FROM abuts a JOIN holds h ON h.sid = a.sid) sewered ON sewered.pid = p.pid;
