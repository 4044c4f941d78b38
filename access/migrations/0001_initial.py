"""Grant and ApiToken, moved here from the knowledge app: their tables (created by
knowledge 0001 under the names they keep) stay as they are, so only Django's state changes."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('knowledge', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='ApiToken',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(blank=True, default='', max_length=100)),
                    ('prefix', models.CharField(help_text="the token's first characters, to recognise it; not secret", max_length=16)),
                    ('token_hash', models.CharField(max_length=64, unique=True)),
                    ('read_only', models.BooleanField(default=False)),
                    ('narrowed', models.BooleanField(default=False)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('last_used_at', models.DateTimeField(blank=True, null=True)),
                    ('revoked_at', models.DateTimeField(blank=True, null=True)),
                    ('knowledge_bases', models.ManyToManyField(blank=True, db_constraint=False, db_table='knowledge_apitoken_knowledge_bases', related_name='+', to='knowledge.knowledgebase')),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'knowledge_apitoken',
                    'ordering': ['-id'],
                },
            ),
            migrations.CreateModel(
                name='Grant',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('role', models.CharField(choices=[('reader', 'reader'), ('maintainer', 'maintainer')], default='reader', max_length=16)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('knowledge_base', models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE, related_name='grants', to='knowledge.knowledgebase')),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='knowledge_grants', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'knowledge_grant',
                    'ordering': ['knowledge_base_id', 'user_id'],
                    'constraints': [models.UniqueConstraint(fields=('user', 'knowledge_base'), name='one_grant_per_user_and_base')],
                },
            ),
        ]),
    ]
