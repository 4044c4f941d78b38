"""`make test`: a throw-away embedded PostgreSQL cluster for one pytest run.

The cluster listens only on a unix socket in a short private directory under /tmp (socket paths
must stay under 108 bytes) and is stopped and deleted afterwards, whatever pytest's outcome. It
is set up the way `rag pg start` sets up a project's cluster: scram-sha-256 passwords for every
connection, a bootstrap superuser, and an application role without superuser powers that owns
the test database, so the suite runs with exactly the rights the application has. Tests that
need more (tests/conftest.py `superuser_db`) get the bootstrap credentials from
LOCALRAG_TEST_BOOTSTRAP_URL (tests/harness.py `bootstrap_credentials`).

With pytest-xdist (`-n N`), every worker gets a database of its own, `local_rag_gw<i>_test`
(tests/settings.py points the worker at it), so the workers' truncations never meet.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.errors import LocalRagError  # noqa: E402
from ops.embedded_pg import Cluster  # noqa: E402
from ops.pg_auth import (  # noqa: E402
    BOOTSTRAP_USER,
    AppAccess,
    BootstrapCredentials,
    cluster_access_ensure,
    password_generate,
)
from tests.harness import BOOTSTRAP_URL_VARIABLE, worker_database  # noqa: E402

APP_USER = "local_rag"
TEST_DB = "local_rag_test"
PORT = 5432


def xdist_workers(pytest_args: list[str]) -> int:
    """How many xdist workers `-n N` / `--numprocesses N` asks for (0 without xdist)."""
    for index, arg in enumerate(pytest_args):
        value = None
        if arg in ("-n", "--numprocesses") and index + 1 < len(pytest_args):
            value = pytest_args[index + 1]
        elif arg.startswith("--numprocesses="):
            value = arg.split("=", 1)[1]
        elif arg.startswith("-n") and arg[2:].isdigit():
            value = arg[2:]
        if value is not None:
            return (os.cpu_count() or 1) if value in ("auto", "logical") else int(value)
    return 0


def main(pytest_args: list[str]) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="lrt-", dir="/tmp"))
    workdir.chmod(0o755)
    socket_dir = workdir / "s"
    cluster = Cluster(workdir / "data")
    bootstrap = BootstrapCredentials(user=BOOTSTRAP_USER, password=password_generate())
    app_password = password_generate()
    started = time.monotonic()
    try:
        cluster.init(superuser=bootstrap.user, password=bootstrap.password)
        cluster.start(port=PORT, socket_dir=socket_dir)
        databases = {TEST_DB: APP_USER}
        databases.update({worker_database(f"gw{index}"): APP_USER
                          for index in range(xdist_workers(pytest_args))})
        cluster_access_ensure(host=str(socket_dir), port=PORT, bootstrap=bootstrap,
                              access=AppAccess(roles={APP_USER: app_password},
                                               databases=databases))
        print(f"test cluster ready in {time.monotonic() - started:.1f}s (socket {socket_dir})",
              flush=True)
        env = dict(os.environ)
        env["TEST_DATABASE_URL"] = (f"postgresql://{APP_USER}:{app_password}@/{TEST_DB}"
                                    f"?host={socket_dir}")
        # A different database name, so the harness guard can tell them apart; never created.
        env["DATABASE_URL"] = f"postgresql://{APP_USER}:{app_password}@/local_rag?host={socket_dir}"
        # The suite's search indexes (index/store.py) go with the cluster they were built from.
        env["RAG_SEARCH_INDEX_DIR"] = str(workdir / "search-index")
        env[BOOTSTRAP_URL_VARIABLE] = (f"postgresql://{bootstrap.user}:{bootstrap.password}@/"
                                       f"{TEST_DB}?host={socket_dir}")
        result = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env)
        code = result.returncode
    except LocalRagError as exc:
        print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)
        code = 3
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    # pytest exits 5 when it collected no test: that is a failure of the suite, not a pass.
    return 1 if code == 5 else code


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    raise SystemExit(main(args))
