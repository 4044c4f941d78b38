from django.apps import AppConfig


class AnsweringConfig(AppConfig):
    name = "answering"
