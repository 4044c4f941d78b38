"""The workbench's forms: ask, conversations and the evaluation panel (validation only; the
services check everything again)."""

from __future__ import annotations

from typing import Any

from django import forms

from conversations.models import TITLE_MAX_CHARS
from core.config import MAX_TEXT_CHARS, RETRIEVAL_MODES, TOP_K_RANGE

MAX_QUESTIONS_BYTES = 1024 * 1024  # a YAML file of questions, far above any real set


class AskForm(forms.Form):
    question = forms.CharField(max_length=MAX_TEXT_CHARS, strip=True,
                               widget=forms.Textarea(attrs={"rows": 3}))
    knowledge_base = forms.ChoiceField(required=False)
    top_k = forms.IntegerField(required=False, min_value=TOP_K_RANGE[0],
                               max_value=TOP_K_RANGE[1])
    fallback = forms.BooleanField(required=False)

    def __init__(self, *args, bases: list[dict], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "knowledge_base").choices = [("", "All my knowledge bases")] + [
            (base["slug"], base["name"]) for base in bases]


class ConversationStartForm(forms.Form):
    knowledge_base = forms.ChoiceField(required=False)

    def __init__(self, *args, bases: list[dict], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "knowledge_base").choices = [("", "All my knowledge bases")] + [
            (base["slug"], base["name"]) for base in bases]


class ConversationAskForm(forms.Form):
    question = forms.CharField(max_length=MAX_TEXT_CHARS, strip=True,
                               widget=forms.Textarea(attrs={"rows": 2}))
    top_k = forms.IntegerField(required=False, min_value=TOP_K_RANGE[0],
                               max_value=TOP_K_RANGE[1])
    fallback = forms.BooleanField(required=False)


class ConversationRenameForm(forms.Form):
    title = forms.CharField(max_length=TITLE_MAX_CHARS, strip=True,
                            widget=forms.TextInput(attrs={"aria-label": "New title"}))


class QuestionSetImportForm(forms.Form):
    name = forms.CharField(max_length=200, strip=True)
    knowledge_base = forms.ChoiceField()
    file = forms.FileField(required=False)
    text = forms.CharField(required=False, strip=False,
                           widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}))

    def __init__(self, *args, bases: list[dict], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        knowledge_base = choice_field(self, "knowledge_base")
        knowledge_base.choices = [(base["slug"], base["name"]) for base in bases]

    def clean(self) -> dict[str, Any]:
        """One of the two: an uploaded file (UTF-8) or pasted text; `yaml_text` and
        `source_name` come out of it."""
        data = super().clean()
        assert data is not None  # Form.clean() returns cleaned_data
        upload, text = data.get("file"), data.get("text") or ""
        if upload and text.strip():
            raise forms.ValidationError("Upload a file or paste the questions, not both.")
        if upload:
            if upload.size > MAX_QUESTIONS_BYTES:
                raise forms.ValidationError(
                    f"{upload.name} is larger than {MAX_QUESTIONS_BYTES // 1024} KiB.")
            try:
                data["yaml_text"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError(f"{upload.name} is not UTF-8 text.") from None
            data["source_name"] = upload.name
        elif text.strip():
            if len(text.encode("utf-8")) > MAX_QUESTIONS_BYTES:
                raise forms.ValidationError(
                    f"The pasted questions are larger than {MAX_QUESTIONS_BYTES // 1024} KiB.")
            data["yaml_text"], data["source_name"] = text, ""
        else:
            raise forms.ValidationError("Upload a YAML file or paste the questions.")
        return data


class RunLaunchForm(forms.Form):
    question_set = forms.TypedChoiceField(coerce=int)
    top_k = forms.IntegerField(required=False, min_value=TOP_K_RANGE[0],
                               max_value=TOP_K_RANGE[1])
    retrieval = forms.ChoiceField(required=False)

    def __init__(self, *args, sets: list, configured_retrieval: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "question_set").choices = [
            (question_set.pk, f"{question_set.name} ({question_set.knowledge_base.name})")
            for question_set in sets]
        retrieval = choice_field(self, "retrieval")
        retrieval.choices = [("", f"as configured ({configured_retrieval})")] + [
            (mode, mode) for mode in RETRIEVAL_MODES]


def choice_field(form: forms.BaseForm, name: str) -> forms.ChoiceField:
    """The form's field `name`, declared a ChoiceField (its choices are set per form)."""
    field = form.fields[name]
    assert isinstance(field, forms.ChoiceField)
    return field
