from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

if TYPE_CHECKING:
    from jobs.worker import JobContext

JOB_EVAL_RUN = "eval_run"


def _eval_run_job(context: JobContext) -> dict[str, Any]:
    # workbench.pages.evaluation loads retrieval and answering, about a third of the start-up
    # of every `rag` command: a worker imports it when it runs its first evaluation instead.
    from workbench.pages.evaluation import eval_run_job

    return eval_run_job(context)


class WorkbenchConfig(AppConfig):
    name = "workbench"
    verbose_name = "Workbench"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The evaluation-run job's handler, wherever a worker runs.
        from jobs.worker import job_handler_register

        job_handler_register(JOB_EVAL_RUN, _eval_run_job)
