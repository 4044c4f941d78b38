from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

if TYPE_CHECKING:
    from jobs.worker import JobContext

# The job type of an evaluation run (evaluation/runs.py enqueues it under this name).
JOB_EVAL_RUN = "eval_run"


def _eval_run_job(context: JobContext) -> dict[str, Any]:
    # evaluation.runs loads retrieval and answering, about a third of the start-up of every
    # `rag` command: a worker imports it when it runs its first evaluation instead.
    from evaluation.runs import eval_run_job

    return eval_run_job(context)


class EvaluationConfig(AppConfig):
    """Question sets, runs, BEIR, ablation, fitting and follow-up evaluation; `rag eval`."""

    name = "evaluation"
    verbose_name = "Evaluation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The evaluation-run job's handler, wherever a worker runs.
        from jobs.worker import job_handler_register

        job_handler_register(JOB_EVAL_RUN, _eval_run_job)
