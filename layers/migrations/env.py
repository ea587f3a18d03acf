"""Alembic environment for the notice register: run with the connection layers.register hands over."""

from alembic import context

from layers.register import METADATA

connection = context.config.attributes.get("connection")
context.configure(connection=connection, target_metadata=METADATA, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
