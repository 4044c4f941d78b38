"""The workbench's forms (validation only; the services check everything again)."""

from __future__ import annotations

from django import forms

from core.config import MAX_TEXT_CHARS, TOP_K_RANGE


class AskForm(forms.Form):
    question = forms.CharField(max_length=MAX_TEXT_CHARS, strip=True,
                               widget=forms.Textarea(attrs={"rows": 3}))
    knowledge_base = forms.ChoiceField(required=False)
    top_k = forms.IntegerField(required=False, min_value=TOP_K_RANGE[0],
                               max_value=TOP_K_RANGE[1])
    fallback = forms.BooleanField(required=False)

    def __init__(self, *args, bases: list[dict], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["knowledge_base"].choices = [("", "All my knowledge bases")] + [
            (base["slug"], base["name"]) for base in bases]
