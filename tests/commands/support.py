"""Running a `rag` command in this process, for the tests of the commands."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command


def rag(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a command run in this process."""
    stdout, stderr = StringIO(), StringIO()
    try:
        call_command(*args, stdout=stdout, stderr=stderr)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, stdout.getvalue(), stderr.getvalue()


def rag_ok(*args: str) -> tuple[str, str]:
    """(stdout, stderr) of a command that must succeed."""
    code, out, err = rag(*args)
    assert code == 0, err
    return out, err


def rag_refused(*args: str) -> str:
    """stderr of a command that must be refused (exit code 2)."""
    code, _, err = rag(*args)
    assert code == 2
    return err
