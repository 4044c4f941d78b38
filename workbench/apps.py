from django.apps import AppConfig


class WorkbenchConfig(AppConfig):
    name = "workbench"
    verbose_name = "Workbench"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The evaluation-run job's handler, wherever a worker runs.
        from jobs.worker import job_handler_register
        from workbench.pages import evaluation

        job_handler_register(evaluation.JOB_EVAL_RUN, evaluation.eval_run_job)
