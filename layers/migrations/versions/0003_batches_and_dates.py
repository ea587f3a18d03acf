"""Batches (prepared, issued, cancelled), real dates, and the input data's checksum.

- ``batches``: one row per batch of notices, with its folder, its state and the checksum of the input it came from.
- ``notices``: ``issued_date`` and ``deadline`` become DATE (PostgreSQL) or checked ISO dates (SQLite); ``deadline``
  may be empty (a prepared notice has none); ``batch_id``, ``hazard``, ``original_notice_id`` and ``mailing_no``.
  Notices recorded before batches existed keep their state: they were issued with their letters written after.
  A deadline that was not a calendar date (the old web form accepted free text) is emptied, with an event and a
  note saying what it was, so the clerk can set it again.
- ``analysis_runs.input_checksum``.

Revision ID: 0003
Revises: 0002
"""

import datetime as dt
import re

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

STATES = "'prepared', 'cancelled', 'open', 'extended', 'connected', 'exempt', 'withdrawn'"


def _real_date(text) -> bool:
    if text is None:
        return False
    if isinstance(text, dt.date):
        return True
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(text)):
        return False
    try:
        dt.date.fromisoformat(str(text))
    except ValueError:
        return False
    return True


def _clean_dates(bind) -> None:
    rows = bind.execute(sa.text("SELECT notice_id, issued_date, deadline, created_at, note FROM notices")).all()
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    for notice_id, issued, deadline, created, note in rows:
        if not _real_date(issued):
            fixed = str(created)[:10]
            bind.execute(
                sa.text("UPDATE notices SET issued_date = :d WHERE notice_id = :n"), {"d": fixed, "n": notice_id}
            )
            _event(bind, now, notice_id, "issued_date", issued, fixed)
        if deadline is not None and not _real_date(deadline):
            text = f"Deadline {deadline!r} was not a date and was emptied (migration 0003): set it again."
            bind.execute(
                sa.text("UPDATE notices SET deadline = NULL, note = :note WHERE notice_id = :n"),
                {"note": f"{note}; {text}" if note else text, "n": notice_id},
            )
            _event(bind, now, notice_id, "deadline", deadline, None)


def _event(bind, now, notice_id, field, old, new) -> None:
    bind.execute(
        sa.text(
            "INSERT INTO events (at, actor, notice_id, action, field, old_value, new_value) "
            "VALUES (:at, 'migration 0003', :n, 'corrected', :f, :o, :v)"
        ),
        {"at": now, "n": notice_id, "f": field, "o": None if old is None else str(old), "v": new},
    )


def upgrade() -> None:
    bind = op.get_bind()
    is_sqlite = bind.dialect.name == "sqlite"
    op.create_table(
        "batches",
        sa.Column("batch_id", sa.String(40), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("notice_date", sa.Date, nullable=False),
        sa.Column("deadline", sa.Date, nullable=False),
        sa.Column("folder", sa.Text, nullable=False),
        sa.Column("profile", sa.String(64), nullable=False),
        sa.Column("profile_version", sa.String(32), nullable=False),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("analysis_runs.id"), nullable=True),
        sa.Column("input_checksum", sa.String(64), nullable=True),
        sa.Column("actor", sa.String(64), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("finished_at", sa.String(32), nullable=True),
        sa.Column("note", sa.Text, nullable=True),
        sa.CheckConstraint("status IN ('prepared', 'issued', 'cancelled')", name="batch_status"),
        *(
            [sa.CheckConstraint("date(julianday(notice_date)) IS notice_date", name="batch_dates_are_dates")]
            if is_sqlite
            else []
        ),
    )
    op.add_column("analysis_runs", sa.Column("input_checksum", sa.String(64), nullable=True))
    op.drop_index("one_open_notice", "notices")
    op.drop_index("notices_by_parcel", "notices")
    # First let a deadline be empty, then empty the ones that are not dates, then make the columns dates.
    with op.batch_alter_table("notices", recreate="always" if is_sqlite else "auto") as batch:
        batch.alter_column("deadline", existing_type=sa.String(10), nullable=True)
    _clean_dates(bind)
    with op.batch_alter_table("notices", recreate="always" if is_sqlite else "auto") as batch:
        if not is_sqlite:  # SQLite keeps ISO text (a CAST would turn it into a number); the CHECK below guards it
            batch.alter_column(
                "issued_date", type_=sa.Date, existing_nullable=False, postgresql_using="issued_date::date"
            )
            batch.alter_column("deadline", type_=sa.Date, existing_nullable=True, postgresql_using="deadline::date")
        batch.add_column(sa.Column("batch_id", sa.String(40), nullable=True))
        batch.add_column(sa.Column("hazard", sa.Text, nullable=True))
        batch.add_column(sa.Column("original_notice_id", sa.String(40), nullable=True))
        batch.add_column(sa.Column("mailing_no", sa.Integer, nullable=True))
        batch.create_foreign_key("notice_batch", "batches", ["batch_id"], ["batch_id"])
        batch.create_check_constraint("notice_status", f"status IN ({STATES})")
        if is_sqlite:
            batch.create_check_constraint(
                "notice_dates_are_dates",
                "date(julianday(issued_date)) IS issued_date AND "
                "(deadline IS NULL OR date(julianday(deadline)) IS deadline)",
            )
    op.create_index(
        "one_open_notice",
        "notices",
        ["parcel_id", "notice_type"],
        unique=True,
        sqlite_where=sa.text("is_open = 1"),
        postgresql_where=sa.text("is_open = 1"),
    )
    op.create_index("notices_by_parcel", "notices", ["parcel_id"])
    op.create_index("notices_by_batch", "notices", ["batch_id"])


def downgrade() -> None:
    op.drop_index("notices_by_batch", "notices")
    with op.batch_alter_table("notices") as batch:
        batch.drop_constraint("notice_batch", type_="foreignkey")
        for column in ("mailing_no", "original_notice_id", "hazard", "batch_id"):
            batch.drop_column(column)
    op.drop_column("analysis_runs", "input_checksum")
    op.drop_table("batches")
