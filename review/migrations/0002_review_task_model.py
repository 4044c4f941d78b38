"""The state of review.models.ReviewTask: an unmanaged view of `review_tasks` (0001 creates it)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('review', '0001_review_tasks'),
    ]

    operations = [
        migrations.CreateModel(
            name='ReviewTask',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.TextField()),
                ('page', models.IntegerField()),
                ('table_index', models.IntegerField(null=True)),
                ('bbox', models.JSONField(null=True)),
                ('rows', models.JSONField(null=True)),
                ('extracted_text', models.TextField()),
                ('corrected_text', models.TextField(null=True)),
                ('flags', models.JSONField(default=list)),
                ('confidence', models.FloatField(null=True)),
                ('status', models.TextField(default='open')),
                ('job_id', models.BigIntegerField(null=True)),
                ('resolved_by', models.TextField(null=True)),
                ('resolved_at', models.DateTimeField(null=True)),
                ('note', models.TextField(null=True)),
                ('created_at', models.DateTimeField()),
            ],
            options={
                'db_table': 'review_tasks',
                'ordering': ['-id'],
                'managed': False,
            },
        ),
    ]
