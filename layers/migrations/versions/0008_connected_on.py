"""The day a parcel connected: ``notices.connected_on``.

A notice marked connected (``sewerplan notices mark PARCEL connected``, the notices page's Save) recorded no day, so a
board could not tell whether the owner connected before the notice's deadline; only a connection recorded without a
notice (type ``record``) kept its day, in ``issued_date``. From now on a notice marked connected keeps the day it
connected in ``connected_on``, and a record keeps it there too (beside its ``issued_date``, as before).

Rows written before this revision get what the register already holds: a record (or a duplicate record, 0005) marked
connected takes its ``issued_date`` as ``connected_on``, with an event each (actor ``migration 0008``), so the register
says who wrote it and when. A notice marked connected before it keeps NULL: nobody recorded the day, and the day the
mark was recorded (its event) is not the day the owner connected. On SQLite the day is checked as every date of the
register is (``date(julianday(x)) IS x``); on PostgreSQL it is a ``DATE``.

Revision ID: 0008
Revises: 0007
"""

import datetime as dt

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_RECORDED = "notice_type IN ('record', 'duplicate') AND status = 'connected' AND connected_on IS NULL"


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        op.execute(
            "ALTER TABLE notices ADD COLUMN connected_on DATE CONSTRAINT connected_on_is_a_date "
            "CHECK (connected_on IS NULL OR date(julianday(connected_on)) IS connected_on)"
        )
    else:
        op.add_column("notices", sa.Column("connected_on", sa.Date, nullable=True))
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    bind.execute(
        sa.text(
            "INSERT INTO events (at, actor, notice_id, action, field, old_value, new_value) "
            "SELECT CAST(:at AS TEXT), 'migration 0008', notice_id, 'migrated', 'connected_on', CAST(NULL AS TEXT), "
            f"CAST(issued_date AS TEXT) FROM notices WHERE {_RECORDED}"
        ),
        {"at": now},
    )
    bind.execute(sa.text(f"UPDATE notices SET connected_on = issued_date WHERE {_RECORDED}"))


def downgrade() -> None:
    with op.batch_alter_table("notices") as batch:
        batch.drop_column("connected_on")
