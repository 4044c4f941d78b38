"""The workbench's forms: ask, conversations and the evaluation panel (validation only; the
services check everything again)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from conversations.models import TITLE_MAX_CHARS
from core.config import MAX_TEXT_CHARS, RETRIEVAL_MODES, TOP_K_RANGE
from core.errors import InvalidRequest
from evaluation.runs import SHIPPED_QUESTIONS_NAME
from retrieval.filters import FORMATS, filters_parse

MAX_QUESTIONS_BYTES = 1024 * 1024  # a YAML file of questions, far above any real set
# The question set the project ships (what `rag eval` reads by default), by the name it is
# offered and stored under.


class FilterFields(forms.Form):
    """The metadata filter fields (retrieval/filters.py) as a person writes them, shared by
    the Ask page, the retrieval lab and a new conversation: `clean` leaves the checked
    filters in `filters` and the request-shaped ones (what a conversation keeps) in
    `filters_raw`, both None when no field is set."""

    folder = forms.CharField(label=_("Folder"), required=False, max_length=500, strip=True)
    format = forms.ChoiceField(label=_("Format"), required=False,
                               choices=[("", _("Any format"))] + [(name, name) for name in FORMATS])
    tags = forms.CharField(label=_("Tags (all of)"), required=False, max_length=500, strip=True)
    conditions = forms.CharField(label=_("Fields"), required=False, max_length=5000, strip=True,
                                 widget=forms.Textarea(attrs={"rows": 2}))

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        data["filters"] = data["filters_raw"] = None
        try:
            raw = filters_raw_from_form(folder=data.get("folder", ""),
                                        format=data.get("format", ""),
                                        tags=data.get("tags", ""),
                                        conditions=data.get("conditions", ""))
            data["filters"] = filters_parse(raw)
        except InvalidRequest as exc:
            self.add_error("conditions", gettext("The filters are not valid: %(detail)s")
                           % {"detail": exc.message})
        else:
            data["filters_raw"] = raw if data["filters"] is not None else None
        return data

    def filters_set(self) -> bool:
        """Whether any filter field has a value (the page opens the filters then)."""
        return any(self[name].value() for name in ("folder", "format", "tags", "conditions"))


class AskForm(FilterFields):
    question = forms.CharField(max_length=MAX_TEXT_CHARS, strip=True,
                               widget=forms.Textarea(attrs={"rows": 3}))
    knowledge_base = forms.ChoiceField(required=False)
    top_k = forms.IntegerField(required=False, min_value=TOP_K_RANGE[0],
                               max_value=TOP_K_RANGE[1])
    fallback = forms.BooleanField(required=False)

    def __init__(self, *args: Any, bases: list[dict], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "knowledge_base").choices = [("", _("All my knowledge bases"))] + [
            (base["slug"], base["name"]) for base in bases]


# `year >= 2019`, `region = Yunnan`, `mineral in copper, gold`: one condition per line.
_FIELD_LINE = re.compile(r"^\s*([^=<>!]+?)\s*(>=|<=|=|>|<|\bin\b)\s*(.+?)\s*$")
_OPERATORS = {">=": "gte", "<=": "lte", ">": "gt", "<": "lt"}


def filters_raw_from_form(*, folder: str, format: str, tags: str,
                          conditions: str) -> dict[str, Any]:
    """The filter fields as a request's `filters` object (docs/api.md "Filters"), for
    `filters_parse` to check; InvalidRequest naming a line that is not a condition."""
    raw: dict[str, Any] = {}
    if folder:
        raw["folder"] = folder
    if format:
        raw["format"] = [format]
    if tags.strip():
        raw["tags"] = [tag for tag in re.split(r"[\s,]+", tags) if tag]
    fields: dict[str, Any] = {}
    for number, line in enumerate(conditions.splitlines(), start=1):
        if not line.strip():
            continue
        match = _FIELD_LINE.match(line)
        if match is None:
            raise InvalidRequest(gettext("line %(number)s is not `field = value`, `field >= "
                                         "value` or `field in a, b`: %(line)r")
                                 % {"number": number, "line": line.strip()[:80]},
                                 details={"field": "conditions"})
        name, operator, value = match.groups()
        condition = fields.setdefault(name, {})
        if operator == "in":
            condition["in"] = [_typed(item) for item in value.split(",") if item.strip()]
        elif operator == "=":
            condition["eq"] = _typed(value)
        else:
            condition[_OPERATORS[operator]] = _typed(value)
    if fields:
        raw["frontmatter"] = fields
    return raw


def _typed(text: str) -> str | int | float:
    """A number where the text is one (so `year >= 2019` compares numbers), else the text."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


class ConversationStartForm(FilterFields):
    knowledge_base = forms.ChoiceField(required=False)

    def __init__(self, *args: Any, bases: list[dict], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "knowledge_base").choices = [("", _("All my knowledge bases"))] + [
            (base["slug"], base["name"]) for base in bases]


class ConversationAskForm(forms.Form):
    question = forms.CharField(max_length=MAX_TEXT_CHARS, strip=True,
                               widget=forms.Textarea(attrs={"rows": 2}))
    top_k = forms.IntegerField(required=False, min_value=TOP_K_RANGE[0],
                               max_value=TOP_K_RANGE[1])
    fallback = forms.BooleanField(required=False)


class ConversationRenameForm(forms.Form):
    title = forms.CharField(max_length=TITLE_MAX_CHARS, strip=True,
                            widget=forms.TextInput(attrs={"aria-label": _("New title")}))


class QuestionSetImportForm(forms.Form):
    # Required, except with the shipped questions: they are named after their file then.
    name = forms.CharField(max_length=200, strip=True, required=False)
    knowledge_base = forms.ChoiceField()
    file = forms.FileField(required=False)
    text = forms.CharField(required=False, strip=False,
                           widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}))
    shipped = forms.BooleanField(required=False)

    def __init__(self, *args: Any, bases: list[dict], shipped: Path | None = None,
                 **kwargs: Any) -> None:
        """`shipped`: the project's eval/questions.yaml, offered when it is there."""
        super().__init__(*args, **kwargs)
        knowledge_base = choice_field(self, "knowledge_base")
        knowledge_base.choices = [(base["slug"], base["name"]) for base in bases]
        self.shipped_path = shipped
        if shipped is None:
            del self.fields["shipped"]

    def clean(self) -> dict[str, Any]:
        """One of three: an uploaded file (UTF-8), pasted text or the shipped questions;
        `yaml_text` and `source_name` come out of it."""
        data = super().clean()
        assert data is not None  # Form.clean() returns cleaned_data
        upload, text = data.get("file"), data.get("text") or ""
        if data.get("shipped") and self.shipped_path is not None:
            if upload or text.strip():
                raise forms.ValidationError(_("Use the shipped questions, or upload or paste "
                                              "your own: not both."))
            data["yaml_text"] = self.shipped_path.read_text(encoding="utf-8")
            data["source_name"] = SHIPPED_QUESTIONS_NAME
            data["name"] = data.get("name") or SHIPPED_QUESTIONS_NAME
            return data
        if not data.get("name") and "name" not in self.errors:
            self.add_error("name", self.fields["name"].error_messages["required"])
        if upload and text.strip():
            raise forms.ValidationError(_("Upload a file or paste the questions, not both."))
        if upload:
            if upload.size > MAX_QUESTIONS_BYTES:
                raise forms.ValidationError(
                    gettext("%(name)s is larger than %(size)s KiB.")
                    % {"name": upload.name, "size": MAX_QUESTIONS_BYTES // 1024})
            try:
                data["yaml_text"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError(gettext("%(name)s is not UTF-8 text.")
                                            % {"name": upload.name}) from None
            data["source_name"] = upload.name
        elif text.strip():
            if len(text.encode("utf-8")) > MAX_QUESTIONS_BYTES:
                raise forms.ValidationError(
                    gettext("The pasted questions are larger than %(size)s KiB.")
                    % {"size": MAX_QUESTIONS_BYTES // 1024})
            data["yaml_text"], data["source_name"] = text, ""
        else:
            raise forms.ValidationError(_("Upload a YAML file or paste the questions."))
        return data


class RunLaunchForm(forms.Form):
    question_set = forms.TypedChoiceField(coerce=int)
    top_k = forms.IntegerField(required=False, min_value=TOP_K_RANGE[0],
                               max_value=TOP_K_RANGE[1])
    retrieval = forms.ChoiceField(required=False)

    def __init__(self, *args: Any, sets: list, configured_retrieval: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "question_set").choices = [
            (question_set.pk, f"{question_set.name} ({question_set.knowledge_base.name})")
            for question_set in sets]
        retrieval = choice_field(self, "retrieval")
        configured = gettext("as configured (%(mode)s)") % {"mode": configured_retrieval}
        retrieval.choices = [("", configured)] + [
            (mode, mode) for mode in RETRIEVAL_MODES]


def choice_field(form: forms.BaseForm, name: str) -> forms.ChoiceField:
    """The form's field `name`, declared a ChoiceField (its choices are set per form)."""
    field = form.fields[name]
    assert isinstance(field, forms.ChoiceField)
    return field
