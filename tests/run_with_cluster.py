"""`make test`: a throw-away embedded PostgreSQL cluster for one pytest run.

The cluster listens only on a unix socket in a short private directory under /tmp (socket paths
must stay under 108 bytes) and is stopped and deleted afterwards, whatever pytest's outcome.
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

from core.embedded_pg import Cluster  # noqa: E402

SUPERUSER = "local_rag"
TEST_DB = "local_rag_test"
PORT = 5432


def main(pytest_args: list[str]) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="lrt-", dir="/tmp"))
    workdir.chmod(0o755)
    socket_dir = workdir / "s"
    cluster = Cluster(workdir / "data")
    started = time.monotonic()
    try:
        cluster.init(superuser=SUPERUSER)
        cluster.start(port=PORT, socket_dir=socket_dir)
        cluster.create_database(name=TEST_DB, superuser=SUPERUSER, port=PORT, socket_dir=socket_dir)
        print(f"test cluster ready in {time.monotonic() - started:.1f}s (socket {socket_dir})",
              flush=True)
        env = dict(os.environ)
        env["TEST_DATABASE_URL"] = f"postgresql://{SUPERUSER}@/{TEST_DB}?host={socket_dir}"
        # A different database name, so the harness guard can tell them apart; never created.
        env["DATABASE_URL"] = f"postgresql://{SUPERUSER}@/local_rag?host={socket_dir}"
        result = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env)
        code = result.returncode
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
