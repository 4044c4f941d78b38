"""YAML that people paste or upload, read without aliases.

`yaml.safe_load` constructs no Python objects, but it still resolves aliases (`*name`): a few
hundred bytes of nested aliases stand for billions of values, and whatever walks the result —
validation, `str()`, JSON encoding — then runs for minutes and takes gigabytes. Input of that kind
(evaluation question sets) needs no aliases, so they are refused while the text is composed,
before any value is built; and so is a document of more nodes than `node_limit`.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent

NODE_LIMIT = 200_000  # scalars, lists and mappings of one document; far above any real set


class YAMLRefused(ValueError):
    """The text uses an alias or is larger than allowed; the message says which."""


def yaml_load_plain(text: str, *, node_limit: int = NODE_LIMIT) -> Any:
    """The one document in `text`, like `yaml.safe_load`, but with aliases and more than
    `node_limit` nodes refused (YAMLRefused); malformed YAML raises yaml.YAMLError as usual."""
    loader = _PlainLoader(text, node_limit=node_limit)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


class _PlainLoader(yaml.SafeLoader):
    def __init__(self, stream: str, *, node_limit: int) -> None:
        super().__init__(stream)
        self._nodes_left = node_limit
        self._node_limit = node_limit

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(AliasEvent):
            event = self.peek_event()
            line = event.start_mark.line + 1 if event.start_mark else "?"
            raise YAMLRefused(f"YAML aliases (*name) are not accepted here (line {line}); "
                              "write the values out")
        if self.check_event(ScalarEvent, SequenceStartEvent, MappingStartEvent):
            self._nodes_left -= 1
            if self._nodes_left < 0:
                raise YAMLRefused(f"the YAML holds more than {self._node_limit:,} values")
        return Composer.compose_node(self, parent, index)
