"""traces.cost_amount and traces.cost_currency: what the trace's tokens cost."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("traces", "0003_trace_token_source"),
    ]

    operations = [RunSQLFile(__file__)]
