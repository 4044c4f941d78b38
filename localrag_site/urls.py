from django.contrib import admin
from django.contrib.staticfiles.views import serve
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from localrag_site import admin_moved
from localrag_site.api import api
from localrag_site.openai_api import openai_api

urlpatterns = [
    re_path(admin_moved.PATTERN, admin_moved.admin_moved),
    path("admin/", admin.site.urls),
    path("workbench/", include("workbench.urls")),
    # People who open the server's address land on the workbench; the API keeps its paths.
    path("", RedirectView.as_view(url="/workbench/", permanent=False), name="root"),
    # Browsers ask for /favicon.ico whatever the page says.
    path("favicon.ico", RedirectView.as_view(url="/static/workbench/favicon.svg",
                                             permanent=True)),
    # gunicorn serves no static files; the admin's own CSS/JS come straight from the app.
    re_path(r"^static/(?P<path>.*)$", serve, {"insecure": True}),
    # The OpenAI-compatible endpoints, with OpenAI's error shape (localrag_site/openai_api.py).
    path("v1/", openai_api.urls),
    path("", api.urls),
]

handler400 = "localrag_site.http_errors.bad_request"
handler404 = "localrag_site.http_errors.not_found"
