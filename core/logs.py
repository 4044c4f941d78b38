"""Structured logs: one JSON object per line, carrying the id of the trace (the request) the
line belongs to. traces/recording.py sets the id for the time a trace is current; core holds
only the variable, so every app's loggers can carry it."""

from __future__ import annotations

import contextvars
import json
import logging
from datetime import UTC, datetime

trace_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("trace_id",
                                                                         default=None)


class JsonFormatter(logging.Formatter):
    """time, level, logger, message, trace_id (when a trace is current) and the exception."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        line = {"time": moment.isoformat(timespec="milliseconds"), "level": record.levelname,
                "logger": record.name, "message": record.getMessage()}
        trace_id = trace_id_var.get()
        if trace_id is not None:
            line["trace_id"] = trace_id
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)
