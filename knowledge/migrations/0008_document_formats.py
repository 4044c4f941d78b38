"""Documents beyond Markdown (format, title, pages, OCR) and the pages of each chunk."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0007_embeddings_inline"),
    ]

    operations = [RunSQLFile(__file__)]
