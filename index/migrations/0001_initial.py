"""The search index's generations and change log (index/schema.sql), and the triggers on
chunks and embeddings that write them."""

from pathlib import Path

from django.db import migrations

SCHEMA = (Path(__file__).resolve().parent.parent / "schema.sql").read_text(encoding="utf-8")


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0004_access_models_to_access"),
    ]

    operations = [
        migrations.RunSQL(SCHEMA, reverse_sql=migrations.RunSQL.noop),
    ]
