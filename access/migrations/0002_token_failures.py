"""token_failures: bad bearer tokens per client address and minute."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("access", "0001_initial"),
        # After the grant and token models left the knowledge app: `rag db init` migrates access
        # before knowledge, and the content types it creates at the end of that run must find
        # each moved model in its new app only.
        ("knowledge", "0004_access_models_to_access"),
    ]

    operations = [RunSQLFile(__file__)]
