"""Placeholder: replaced by the page's real views."""

from django.http import Http404
from django.urls import path


def placeholder(request, **kwargs):
    raise Http404("not built yet")


urlpatterns = [path("traces/", placeholder, name="traces")]
