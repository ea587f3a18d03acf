"""One record of a connection made without a notice per parcel: a partial unique index on ``notices.parcel_id``
where ``notice_type = 'record'``.

``Register.record`` reads the parcel's rows and refuses a second record, but on PostgreSQL two clerks recording the
same parcel at the same moment both read none and both wrote one (SQLite's BEGIN IMMEDIATE queues the second
behind the first, which then sees the first's row). The index makes the rule the database's own on both.

A register written before this revision may already hold such twins, and the index could not be built over them:
the upgrade failed and the register stayed unusable. Before building it, each parcel's first record (the earliest
written, ``created_at`` then ``notice_id``: the one the index would have kept) stays its record, and every later
one is set apart as type ``duplicate``: nothing is deleted, its day, status and note stay as the clerk recorded
them, its note gains a sentence naming the record kept, and an event (actor ``migration 0005``) says what changed,
so a board asking about either row finds both. A ``duplicate`` row counts for nothing: the parcel is excluded
from batches, shown and counted connected by its record, as with one.

Revision ID: 0005
Revises: 0004
"""

import datetime as dt

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

DUPLICATE = "duplicate"  # the notice_type a later second record of one parcel is set apart as


def _set_apart_second_records(bind) -> int:
    """Every record after a parcel's first becomes type ``duplicate``, with a note and events; how many."""
    rows = bind.execute(
        sa.text(
            "SELECT notice_id, parcel_id, issued_date, note FROM notices WHERE notice_type = 'record' "
            "ORDER BY parcel_id, created_at, notice_id"
        )
    ).all()
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kept: dict[str, tuple] = {}
    moved = 0
    for notice_id, parcel_id, day, note in rows:
        if parcel_id not in kept:
            kept[parcel_id] = (notice_id, day)
            continue
        first, first_day = kept[parcel_id]
        text = (
            f"A second record of parcel {parcel_id}'s connection, written beside {first} (connected "
            f"{_iso(first_day)}), which stays its record (migration 0005): kept here as a duplicate, counting for "
            "nothing."
        )
        new_note = f"{note}; {text}" if note else text
        bind.execute(
            sa.text("UPDATE notices SET notice_type = :t, note = :note WHERE notice_id = :n"),
            {"t": DUPLICATE, "note": new_note, "n": notice_id},
        )
        _event(bind, now, notice_id, "notice_type", "record", DUPLICATE)
        _event(bind, now, notice_id, "note", note, new_note)
        moved += 1
    return moved


def _iso(value) -> str:
    return value.isoformat() if isinstance(value, dt.date) else str(value)


def _event(bind, now, notice_id, field, old, new) -> None:
    bind.execute(
        sa.text(
            "INSERT INTO events (at, actor, notice_id, action, field, old_value, new_value) "
            "VALUES (:at, 'migration 0005', :n, 'corrected', :f, :o, :v)"
        ),
        {"at": now, "n": notice_id, "f": field, "o": old, "v": new},
    )


def upgrade() -> None:
    _set_apart_second_records(op.get_bind())
    op.create_index(
        "one_record_per_parcel",
        "notices",
        ["parcel_id"],
        unique=True,
        sqlite_where=sa.text("notice_type = 'record'"),
        postgresql_where=sa.text("notice_type = 'record'"),
    )


def downgrade() -> None:
    # The duplicates stay set apart: their events say which they were.
    op.drop_index("one_record_per_parcel", table_name="notices")
