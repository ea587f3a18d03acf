"""The notice register: analysis runs, notices, and the append-only event log.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "analysis_runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_at", sa.String(32), nullable=False),
        sa.Column("profile", sa.String(64), nullable=False),
        sa.Column("profile_version", sa.String(32), nullable=False),
        sa.Column("fingerprints", sa.Text, nullable=False),
        sa.Column("counts", sa.Text, nullable=False),
    )
    op.create_table(
        "notices",
        sa.Column("notice_id", sa.String(40), primary_key=True),
        sa.Column("parcel_id", sa.String(64), nullable=False),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("analysis_runs.id"), nullable=True),
        sa.Column("notice_type", sa.String(16), nullable=False),
        sa.Column("issued_date", sa.String(10), nullable=False),
        sa.Column("deadline", sa.String(10), nullable=False),
        sa.Column("reason", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("is_open", sa.Integer, nullable=False),
        sa.Column("section", sa.String(64), nullable=False),
        sa.Column("owner_name", sa.Text, nullable=True),
        sa.Column("mail_address", sa.Text, nullable=True),
        sa.Column("mail_city", sa.Text, nullable=True),
        sa.Column("mail_state", sa.Text, nullable=True),
        sa.Column("mail_zip", sa.Text, nullable=True),
        sa.Column("site_address", sa.Text, nullable=True),
        sa.Column("distance_ft", sa.Float, nullable=True),
        sa.Column("main_id", sa.String(64), nullable=True),
        sa.Column("letter_file", sa.Text, nullable=True),
        sa.Column("note", sa.Text, nullable=True),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    # At most one open notice of each type per parcel: the database refuses a duplicate, whoever sends it.
    op.create_index(
        "one_open_notice",
        "notices",
        ["parcel_id", "notice_type"],
        unique=True,
        sqlite_where=sa.text("is_open = 1"),
        postgresql_where=sa.text("is_open = 1"),
    )
    op.create_index("notices_by_parcel", "notices", ["parcel_id"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.String(32), nullable=False),
        sa.Column("actor", sa.String(64), nullable=False),
        sa.Column("notice_id", sa.String(40), sa.ForeignKey("notices.notice_id"), nullable=True),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("field", sa.String(32), nullable=True),
        sa.Column("old_value", sa.Text, nullable=True),
        sa.Column("new_value", sa.Text, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("events")
    op.drop_index("notices_by_parcel", "notices")
    op.drop_index("one_open_notice", "notices")
    op.drop_table("notices")
    op.drop_table("analysis_runs")
