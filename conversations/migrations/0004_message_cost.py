"""conversations_message.cost: an answer's tokens at RAG_MODEL_PRICES, {amount, currency}."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0003_conversation_filters'),
    ]

    operations = [
        migrations.AddField(
            model_name='message',
            name='cost',
            field=models.JSONField(blank=True, null=True),
        ),
    ]
