"""The state of audit.models.AuditEntry: an unmanaged view of `audit_logs` (0002 creates it)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
    ]

    operations = [
        migrations.CreateModel(
            name='AuditEntry',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('created_at', models.DateTimeField()),
                ('actor', models.TextField()),
                ('actor_kind', models.TextField()),
                ('user_id', models.IntegerField(null=True)),
                ('username', models.TextField(null=True)),
                ('token_id', models.BigIntegerField(null=True)),
                ('source', models.TextField()),
                ('action', models.TextField()),
                ('object_type', models.TextField()),
                ('object_id', models.TextField()),
                ('object_name', models.TextField()),
                ('changes', models.JSONField(default=dict)),
                ('request_id', models.TextField()),
                ('address', models.TextField(null=True)),
            ],
            options={
                'verbose_name': 'audit entry',
                'verbose_name_plural': 'audit log',
                'db_table': 'audit_logs',
                'ordering': ['-id'],
                'managed': False,
            },
        ),
    ]
