"""The workbench's pages, under /workbench/ (each page module lists its own routes)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import path
from django.views.i18n import set_language

from workbench.views import (
    ask,
    conversations,
    evaluation,
    knowledge,
    lab,
    review,
    sources,
    status,
    traces,
)

app_name = "workbench"


def index(request: HttpRequest) -> HttpResponseRedirect:
    return redirect("workbench:ask")


urlpatterns = [
    path("", index, name="index"),
    path("login/", auth_views.LoginView.as_view(template_name="workbench/login.html",
                                                redirect_authenticated_user=True),
         name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The interface language switch: POST `language` (and `next`); remembered in a cookie.
    path("language/", set_language, name="language"),
    *ask.urlpatterns,
    *conversations.urlpatterns,
    *sources.urlpatterns,
    *lab.urlpatterns,
    *evaluation.urlpatterns,
    *knowledge.urlpatterns,
    *review.urlpatterns,
    *status.urlpatterns,
    *traces.urlpatterns,
]
