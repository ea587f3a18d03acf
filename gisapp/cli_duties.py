"""``sewerplan duties``: grease interceptors, industrial users and their control manholes, subdivisions."""

from __future__ import annotations

import json

import click
import geopandas as gpd
from rich.console import Console
from rich.table import Table

from analysis.profiles import citations_clause
from gisapp import services
from gisapp.cli_common import DIRECTION_OPTION, data_options, loading, print_problems, user_errors
from gisapp.words import written_words, zero_flow_words
from layers.write import RESULT_LAYER

PARCEL_FIELDS = (
    "parcel_id",
    "status",
    "property_class",
    "discharge_gpd",
    "discharge_source",
    "flow_share_pct",
    "grease_interceptor",
    "industrial_user",
    "control_manhole",
    "in_subdivision",
    "subdivision_duty",
    "duties_section",
    "duties",
)
SUBDIVISION_FIELDS = (
    "subdivision_id",
    "subdivision_name",
    "acres",
    "dwelling_units",
    "acres_per_unit",
    "in_district",
    "phase_iii",
    "sewer_duty",
    "section",
    "reason",
)


@click.command()
@data_options
@DIRECTION_OPTION
@click.option("--all", "show_all", is_flag=True, help="Every parcel, not only those with a duty to list.")
@click.option(
    "--out", "out_path", metavar="PATH", help="Write the parcels with their duties: .gpkg, .parquet, .geojson or .csv."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def duties(digitised_direction, show_all, out_path, as_json, **opts):
    """Further duties of the law: grease interceptors, industrial users and their control manholes, subdivisions."""
    if out_path:
        services.export_target(out_path)  # a wrong format or a town's store: refused before the work
    with loading(
        opts, as_json=as_json, required=("parcels", "mains"), extra_steps=3, digitised_direction=digitised_direction
    ) as (loaded, bar):
        layers, profile = loaded.layers, loaded.profile
        found = services.duties(loaded.workspace, progress=bar.step)
        if out_path:
            services.export_results(out_path, found.parcels)
    chosen = found.parcels if show_all else found.cases()
    if as_json:
        doc = {
            "summary": found.summary | {"profile": profile.id, "output": out_path},
            "parcels": records(chosen, PARCEL_FIELDS),
            "subdivisions": records(found.subdivisions, SUBDIVISION_FIELDS) if found.subdivisions is not None else [],
            "warnings": [w for w in (zero_flow_words(found.summary.get("zero_flow_found_occupied")),) if w],
        }
        click.echo(json.dumps(doc, indent=2, default=str))
        return
    print_problems(loaded.console, layers)
    if zero := zero_flow_words(found.summary.get("zero_flow_found_occupied")):
        loaded.console.print(zero, highlight=False, markup=False)  # beside loading's warnings, of the same kind
    _print(found, chosen, profile, out_path, show_all)


def records(frame: gpd.GeoDataFrame, fields: tuple[str, ...]) -> list[dict]:
    """Plain JSON objects of the named columns (those present), None for missing values."""
    table = frame[[f for f in fields if f in frame.columns]].astype(object)
    return table.where(table.notna(), None).to_dict("records")


def _flow_not_known(summary: dict, profile) -> str:
    """Why the system's flow is not known, what its lower bound still tells of a share, and how to give it. An
    estimate that counted parcels of unknown flow as nothing had made an ordinary house 13% of the system, a
    significant user: a share of the flow known is only the most a share can be."""
    r = profile.discharges
    sig, rev = r.significant_user_share, r.flow_review_share
    if summary["system_flow_at_least_gpd"] <= 0:
        unjudged = [rule.citation for rule in (sig, rev) if rule.value is not None]
        judged = f"; no parcel is judged by its share of it ({citations_clause(list(dict.fromkeys(unjudged)))})"
        judged = judged if unjudged else ""
    else:
        # each share of the law bounded alike (§ 144-1's 5%, § 144-25A's 2%): possibly over it, never over it
        parts = []
        if sig.value is not None:
            parts.append(
                f"an establishment with more than {sig.value * 100:g}% of that is possibly a significant industrial "
                f"user, for review, never significant by its share ({citations_clause([sig.citation])})"
            )
        if rev.value is not None:
            parts.append(
                f"a parcel with more than {rev.value * 100:g}% of that is possibly for review, never for review by "
                f"its share ({citations_clause([rev.citation])})"
            )
        judged = (
            "; a parcel's share of it is at most its share of the flow known, and " + ", and ".join(parts)
            if parts
            else ""
        )
    gap = (
        " For the parcels that reach no outfall, join the mains below them to the plant's in the mains layer "
        "(sewerplan network check lists where the network breaks)."
        if summary.get("system_flow_parcels_no_outfall")
        else ""
    )
    return (
        f"{summary['system_flow_source']}{judged}. Give the plant's measured average daily flow with --set "
        f"discharges.system_flow_gpd=GPD, or the parcels' flows (a flow_gpd column) or living units.{gap}"
    )


def _by_units_apart(chosen: gpd.GeoDataFrame, summary: dict, profile) -> tuple[gpd.GeoDataFrame, str]:
    """The parcels to list one by one, and one line for those possibly for review by their living units alone.

    Where few parcels' flows are known, every house of one living unit is above 2% of the flow known: a tester's
    town listed ten houses, one table row of fifteen lines each, all saying the same, and the metered shop among
    them was hard to find. Those with no other duty are said once, with the gallons the parcels of unknown flow must
    send for all of them to be at or under the share; --json and --out still list each."""
    group = summary.get("possibly_review_by_units") or {}
    if not group.get("parcels") or "industrial_user" not in chosen.columns:
        return chosen, ""
    alone = (
        (chosen["industrial_user"] == "possibly_review")
        & (chosen["discharge_source"] == "living units")
        & chosen["grease_interceptor"].isna()
        & (chosen["in_subdivision"].isna() if "in_subdivision" in chosen.columns else True)
    )
    if not alone.any():
        return chosen, ""
    ids = chosen.loc[alone, "parcel_id"].astype(str).tolist()
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5:,} more" if len(ids) > 5 else "")
    unknown = summary["system_flow_parcels_unknown"]
    cleared = group["clear_if_unknown_send_gpd"]
    rule = profile.discharges.flow_review_share
    return chosen[~alone], (
        f"Possibly above {rule.value * 100:g}% of the system's flow, for review ({citations_clause([rule.citation])}), "
        f"by their living units alone and with no other duty: {len(ids):,} "
        f"parcel{'' if len(ids) == 1 else 's'} ({shown}), not listed one by one below (--json and --out list each). "
        f"Every one of them is at or under it if the {unknown:,} parcel{'' if unknown == 1 else 's'} of unknown flow "
        f"send{'s' if unknown == 1 else ''} {cleared:,.0f} gpd or more in all"
        + (f" ({cleared / unknown:,.0f} gpd each on average)." if unknown > 1 else ".")
    )


def _print(found, chosen, profile, out_path, show_all=False) -> None:
    out = Console()
    s = found.summary
    g, i = s["grease_interceptors"], s["industrial_users"]
    flow = s["system_flow_gpd"]
    out.print(
        f"Grease interceptors: {g['required']} required, {g['for_decision']} for "
        f"{profile.discharges.grease_decided_by.value or 'the municipality'} to decide "
        f"{profile.discharges.grease_interceptor.cited}. Industrial users: {i['significant']} significant, "
        + (f"{i['possibly_significant']} possibly significant, for review, " if i["possibly_significant"] else "")
        + f"{i['flow_unknown']} with flow unknown. "
        # the review by flow is of "any waters or wastes" (Fort Plain § 144-25A): a house's too, not an industrial
        # user's alone; a two-family house listed among "Industrial users" puzzled a board (a tester)
        + f"Flows for review, of any parcel: {i['review']} above the threshold"
        + (f", {i['possibly_review']} possibly above it" if i["possibly_review"] else "")
        + ". System flow "
        + (f"{flow:,.0f} gpd ({s['system_flow_source']})." if flow is not None else _flow_not_known(s, profile))
        + (
            " Subdivisions: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in s["subdivisions"].items() if n) + "."
            if "subdivisions" in s
            else ""
        ),
        highlight=False,
    )
    chosen, by_units = (chosen, "") if show_all else _by_units_apart(chosen, s, profile)
    if by_units:
        out.print(by_units, highlight=False)
    table = Table(title=f"Further duties under {profile.id}")
    for col in ("parcel", "status", "grease", "industrial", "control manhole", "section", "duty"):
        table.add_column(col, overflow="fold")
    for row in records(chosen.head(200), PARCEL_FIELDS):
        table.add_row(
            str(row["parcel_id"]),
            str(row.get("status") or "-"),
            row.get("grease_interceptor") or "-",
            row.get("industrial_user") or "-",
            str(row.get("control_manhole") or "-"),
            row.get("duties_section") or "-",
            row.get("duties") or "",
        )
    out.print(table)
    if len(chosen) > 200:
        # the file holds every parcel, these with the rest: said so, or a count of 2,000 rows surprised
        where = f"all of them are in {out_path}, which holds every parcel" if out_path else "--json or --out for all"
        out.print(f"... and {len(chosen) - 200:,} more ({where}).", highlight=False)
    if out_path:
        out.print(written_words(out_path, [RESULT_LAYER]), highlight=False)
