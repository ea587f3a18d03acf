"""Service otherwise than by mail, and the occupants' copies: ``notices.served_on``, ``notices.served_by_name`` and
``notices.occupant_article_no``.

A clerk who handed a notice to its owner had no way to record it, and under Wappinger § 196-22A the 10 days run from
service: a notice served in hand on a known day needs no days for the mail, and its deadline runs from that day. A
notice now records the day it was served otherwise than by mail and who served it (``served_by`` says how: "in
person"). And where the owner does not occupy the property a copy goes to the occupant in its own certified
envelope, whose article number the register did not keep: ``occupant_article_no`` keeps it.

Notices written before this revision get nothing: no one recorded a day of service or an occupant's number, so the
three columns stay empty (NULL) and no event is written, as for a new notice. On SQLite the day is checked as every
date of the register is (``date(julianday(x)) IS x``); on PostgreSQL it is a ``DATE``. Written with plain SQL that
SQLite and PostgreSQL both run (``ALTER TABLE ... ADD COLUMN``; SQLite allows a CHECK on an added column).

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "ALTER TABLE notices ADD COLUMN served_on DATE "
            "CONSTRAINT served_on_is_a_date CHECK (served_on IS NULL OR date(julianday(served_on)) IS served_on)"
        )
    else:
        op.add_column("notices", sa.Column("served_on", sa.Date, nullable=True))
    op.add_column("notices", sa.Column("served_by_name", sa.Text, nullable=True))
    op.add_column("notices", sa.Column("occupant_article_no", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("notices") as batch:
        batch.drop_column("occupant_article_no")
        batch.drop_column("served_by_name")
        batch.drop_column("served_on")
