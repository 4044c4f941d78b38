"""`rag ensure_admin` — create the `admin` account once, printing its random password once."""

from __future__ import annotations

from typing import Any

from access.people import admin_ensure
from core.commands import RagCommand


class Command(RagCommand):
    help = "Create a superuser 'admin' with a random password if no superuser exists."

    def handle(self, *args: Any, **options: Any) -> None:
        password = admin_ensure(username="admin")
        if password is None:
            self.stdout.write("admin account: an administrator already exists "
                              "(password unchanged)")
        else:
            self.stdout.write("admin account created — username: admin  password: "
                              f"{password}\n(shown once, not stored anywhere; change it in "
                              "/admin/)")
