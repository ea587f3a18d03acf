"""How each notice was served: ``notices.served_by`` and ``notices.certified_article_no``.

A board member asking "how was this owner served, and can you prove it?" got nothing from the register: the letters
said "CERTIFIED MAIL Article No. ____" and the mailing list had an empty ``certified_article_no`` column for the
office, but neither reached the register. From now on a notice records how its letter says it is served (the batch's
manifest keeps that beside each letter, ``analysis.notices.SERVED_BY``: "certified mail") when its batch is issued,
and the article number when the office records the mailing (``sewerplan notices record-mailing``).

Notices written before this revision get only what is known of them, worded as what it is, never as a fact nobody
recorded:

- A notice issued in a batch (it has a ``batch_id``: every batch's letter, since 0003, printed "CERTIFIED MAIL Article
  No." above the address): ``served_by`` is "certified mail (as its letter said; entered by migration 0006)". That
  is what the letter announced, not proof it was mailed so; the proof is the article number, which stays empty
  until the office records it from its receipts.
- A notice issued before batches existed (no ``batch_id``): its letter named no method of service, so ``served_by``
  says so: "not recorded (its letter, written before 0003, named no method of service)".
- A notice never served (prepared, whose batch is still being written and is issued with its letters' own words;
  cancelled; a connection recorded without a notice; a duplicate record): NULL, as for a new one.

Each value written gets an event (actor ``migration 0006``), so the register says who wrote it and when. Nothing
else changes. Written with plain ``add_column`` and SQL that SQLite and PostgreSQL both run.

Revision ID: 0006
Revises: 0005
"""

import datetime as dt

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

AS_THE_LETTER_SAID = "certified mail (as its letter said; entered by migration 0006)"
NOT_RECORDED = "not recorded (its letter, written before 0003, named no method of service)"
_SERVED = "notice_type IN ('connection', 'violation') AND status NOT IN ('prepared', 'cancelled')"


def upgrade() -> None:
    op.add_column("notices", sa.Column("served_by", sa.Text, nullable=True))
    op.add_column("notices", sa.Column("certified_article_no", sa.String(32), nullable=True))
    bind = op.get_bind()
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    for value, which in ((AS_THE_LETTER_SAID, "batch_id IS NOT NULL"), (NOT_RECORDED, "batch_id IS NULL")):
        where = f"{_SERVED} AND {which} AND served_by IS NULL"
        bind.execute(
            sa.text(
                "INSERT INTO events (at, actor, notice_id, action, field, old_value, new_value) "
                # Typed casts: PostgreSQL cannot tell a bound parameter's type in a SELECT list (psycopg binds it
                # on the server), SQLite takes them as they are.
                "SELECT CAST(:at AS TEXT), 'migration 0006', notice_id, 'migrated', 'served_by', CAST(NULL AS TEXT), "
                f"CAST(:v AS TEXT) FROM notices WHERE {where}"
            ),
            {"at": now, "v": value},
        )
        bind.execute(sa.text(f"UPDATE notices SET served_by = :v WHERE {where}"), {"v": value})


def downgrade() -> None:
    with op.batch_alter_table("notices") as batch:
        batch.drop_column("certified_article_no")
        batch.drop_column("served_by")
