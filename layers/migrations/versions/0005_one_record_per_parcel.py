"""One record of a connection made without a notice per parcel: a partial unique index on ``notices.parcel_id``
where ``notice_type = 'record'``.

``Register.record`` reads the parcel's rows and refuses a second record, but on PostgreSQL two clerks recording the
same parcel at the same moment both read none and both wrote one (SQLite's BEGIN IMMEDIATE queues the second
behind the first, which then sees the first's row). The index makes the rule the database's own on both.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "one_record_per_parcel",
        "notices",
        ["parcel_id"],
        unique=True,
        sqlite_where=sa.text("notice_type = 'record'"),
        postgresql_where=sa.text("notice_type = 'record'"),
    )


def downgrade() -> None:
    op.drop_index("one_record_per_parcel", table_name="notices")
