"""What measured the run a batch was issued from: the values set on its profile and its distance.

- ``analysis_runs.settings``: the values set on the profile (``{"mandate.distance_ft": "250"}``, JSON; ``{}`` for
  none), so the map can tell a notice given on a 100 ft run from a what-if run at 250 ft under the same profile.
  Runs recorded before keep NULL: what they were set to is not known.
- ``analysis_runs.distance_ft``: the distance the run measured by.
- ``analysis_runs.analysed_at``: when the analysis ran (``run_at`` is when the batch recorded it).

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("analysis_runs", sa.Column("settings", sa.Text, nullable=True))
    op.add_column("analysis_runs", sa.Column("distance_ft", sa.Float, nullable=True))
    op.add_column("analysis_runs", sa.Column("analysed_at", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("analysis_runs") as batch:
        for column in ("analysed_at", "distance_ft", "settings"):
            batch.drop_column(column)
