"""Saved extension scenarios (sewerplan plan --save).

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "plans",
        sa.Column("name", sa.String(80), primary_key=True),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("profile", sa.String(64), nullable=False),
        sa.Column("diameter_in", sa.Float, nullable=False),
        sa.Column("geometry_wkt", sa.Text, nullable=False),
        sa.Column("crs", sa.Text, nullable=False),
        sa.Column("result", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("plans")
