"""The workbench app's start-up: the evaluation-run handler is registered at django.setup(), and
its module (which loads retrieval and answering) is imported only when a worker runs one."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import cli_env
from tests.harness import ROOT

SCRIPT = """
import json, sys
import django
django.setup()
from jobs.worker import JOB_HANDLERS
loaded = [name for name in ("evaluation.runs", "evaluation.questions",
                            "retrieval.services") if name in sys.modules]
print(json.dumps({"registered": "eval_run" in JOB_HANDLERS, "loaded": loaded}))
"""


def test_django_setup_registers_the_eval_run_handler_without_importing_it():
    env = cli_env(DJANGO_SETTINGS_MODULE="localrag_site.settings")
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == {"registered": True, "loaded": []}
