"""The search index's first migration. Its SQL, the change log and its triggers on chunks and
embeddings, is 0002's: a migration already recorded cannot gain the dependency on the knowledge
migrations that create those tables."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0004_access_models_to_access"),
    ]

    operations = []
