"""A widget form generated from a pydantic model's fields (nested sections become boxes).

Leaf widgets by annotation: ``bool`` -> Checkbox, ``Literal`` -> Dropdown, ``int`` -> IntText,
``float`` -> FloatText, ``str`` -> Text; optional scalars, lists, dicts and unions -> Text holding
a literal (blank = ``None``; JSON for lists and dicts; a bare word stays a string). Each widget's
tooltip is the field's description. Reading a form never validates: the model's own validation
(e.g. ``RunConfig.build``) reports every bad field at once.
"""

from __future__ import annotations

import json
import types
from typing import Any, Literal, Union, get_args, get_origin

import ipywidgets as w
from pydantic import BaseModel

from hyperpod_rl.base import parse_user_data
from hyperpod_rl.errors import HyperpodRLError

__all__ = ["ModelForm"]

_STYLE = {"description_width": "160px"}
_LAYOUT = {"width": "420px"}


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) < len(get_args(annotation)):
            return (args[0] if len(args) == 1 else Union[tuple(args)]), True  # noqa: UP007
    return annotation, False


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _from_text(text: str) -> Any:
    text = text.strip()
    if not text:
        return None
    try:
        return parse_user_data(text, "the field", syntax="json")  # bounded: a value nested thousands deep stays text
    except HyperpodRLError:
        return text


class ModelForm(w.VBox):
    """Form for one pydantic model class, with nested model fields as titled sub-forms.

    Args:
        model: the pydantic model class (e.g. ``RunConfig``).
        value: initial values (a model instance or a plain dict); missing fields show defaults.
        exclude: dotted field paths to leave out of the form (they keep their ``value``).
        optional_sections: show ``Optional[Model]`` fields with an "enabled" checkbox.

    Attributes:
        leaves: dotted path -> leaf widget (``"grpo.lr"`` -> ``FloatText``).
    """

    def __init__(
        self,
        model: type[BaseModel],
        value: BaseModel | dict[str, Any] | None = None,
        *,
        exclude: tuple[str, ...] = (),
        prefix: str = "",
    ) -> None:
        super().__init__()
        self.model = model
        self.prefix = prefix
        self.exclude = exclude
        self.leaves: dict[str, w.Widget] = {}
        self.kinds: dict[str, str] = {}
        self.sections: dict[str, ModelForm] = {}
        self.section_enabled: dict[str, w.Checkbox] = {}
        self._hidden: dict[str, Any] = {}
        self._list_models: dict[str, tuple[type[BaseModel], w.VBox, list[ModelForm]]] = {}
        self.children = self._build(value)

    # ----- building ---------------------------------------------------------------------------
    def _build(self, value: BaseModel | dict[str, Any] | None) -> list[w.Widget]:
        data = value.model_dump(mode="json") if isinstance(value, BaseModel) else dict(value or {})
        rows: list[w.Widget] = []
        for name, info in self.model.model_fields.items():
            path = f"{self.prefix}{name}"
            if path in self.exclude or info.exclude or info.repr is False:
                if name in data:
                    self._hidden[name] = data[name]
                continue
            default = info.get_default(call_default_factory=True) if not info.is_required() else None
            current = data.get(
                name,
                default.model_dump(mode="json") if isinstance(default, BaseModel) else default,
            )
            ann, optional = _strip_optional(info.annotation)
            if _is_model(ann):
                sub = ModelForm(ann, current, exclude=self.exclude, prefix=f"{path}.")
                self.sections[name] = sub
                header: list[w.Widget] = [w.HTML(f"<b>{name}</b>")]
                if optional:
                    box = w.Checkbox(
                        value=current is not None,
                        description=f"{name} enabled",
                        style=_STYLE,
                    )
                    self.section_enabled[name] = box
                    header.append(box)
                rows.append(
                    w.VBox(
                        [*header, sub],
                        layout=w.Layout(border="1px solid #ddd", padding="4px", margin="2px 0"),
                    )
                )
                continue
            if get_origin(ann) is list and get_args(ann) and _is_model(get_args(ann)[0]):
                rows.append(self._list_section(name, path, get_args(ann)[0], current or []))
                continue
            widget, kind = self._leaf(name, ann, optional, current, info.description or "")
            self.leaves[path] = widget
            self.kinds[path] = kind
            rows.append(widget)
        return rows

    def _list_section(self, name: str, path: str, item: type[BaseModel], values: list[Any]) -> w.Widget:
        forms = [ModelForm(item, v, exclude=self.exclude, prefix=f"{path}.{i}.") for i, v in enumerate(values)]
        box = w.VBox(forms)
        self._list_models[name] = (item, box, forms)
        add = w.Button(description=f"add {name.removesuffix('s')}", icon="plus")
        remove = w.Button(description="remove last", icon="minus")

        def _add(_: Any) -> None:
            forms.append(
                ModelForm(
                    item,
                    {"name": f"group-{len(forms) + 1}"} if "name" in item.model_fields else None,
                    exclude=self.exclude,
                    prefix=f"{path}.{len(forms)}.",
                )
            )
            box.children = tuple(forms)

        def _remove(_: Any) -> None:
            if forms:
                forms.pop()
                box.children = tuple(forms)

        add.on_click(_add)
        remove.on_click(_remove)
        return w.VBox(
            [w.HTML(f"<b>{name}</b>"), box, w.HBox([add, remove])],
            layout=w.Layout(border="1px solid #ddd", padding="4px", margin="2px 0"),
        )

    def _leaf(self, name: str, ann: Any, optional: bool, current: Any, help_text: str) -> tuple[w.Widget, str]:
        common = {
            "description": name,
            "description_allow_html": False,
            "tooltip": help_text,
            "style": _STYLE,
            "layout": _LAYOUT,
        }
        if get_origin(ann) is Literal and not optional:
            options = list(get_args(ann))
            return w.Dropdown(
                options=options,
                value=current if current in options else options[0],
                **common,
            ), "literal"
        if ann is bool and not optional:
            common.pop("layout")
            return w.Checkbox(value=bool(current), indent=False, **common), "bool"
        if ann is int and not optional:
            return w.IntText(value=int(current or 0), **common), "int"
        if ann is float and not optional:
            return w.FloatText(value=float(current or 0.0), **common), "float"
        if ann is str and not optional:
            return w.Text(value=current or "", **common), "str"
        return w.Text(value=_to_text(current), placeholder="blank = default / None", **common), "literal-text"

    # ----- reading / writing ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The form's values as a plain dict for the model's validation (no validation here)."""
        out: dict[str, Any] = dict(self._hidden)
        for name in self.model.model_fields:
            path = f"{self.prefix}{name}"
            if path in self.leaves:
                widget, kind = self.leaves[path], self.kinds[path]
                value = _from_text(widget.value) if kind == "literal-text" else widget.value
                if kind == "str" and value == "" and self.model.model_fields[name].is_required():
                    value = ""
                if value is not None or kind != "literal-text":
                    out[name] = value
                elif not self.model.model_fields[name].is_required():
                    out[name] = None
            elif name in self.sections:
                enabled = self.section_enabled.get(name)
                out[name] = self.sections[name].to_dict() if enabled is None or enabled.value else None
            elif name in self._list_models:
                out[name] = [f.to_dict() for f in self._list_models[name][2]]
        return out

    def set_value(self, value: BaseModel | dict[str, Any]) -> None:
        """Show new values (e.g. a preset); fields absent from ``value`` keep their widgets' values."""
        data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        for name in self.model.model_fields:
            path = f"{self.prefix}{name}"
            if name not in data:
                continue
            if path in self.leaves:
                widget, kind = self.leaves[path], self.kinds[path]
                widget.value = _to_text(data[name]) if kind == "literal-text" else data[name]
            elif name in self.sections:
                if name in self.section_enabled:
                    self.section_enabled[name].value = data[name] is not None
                if data[name] is not None:
                    self.sections[name].set_value(data[name])
            elif name in self._list_models:
                item, box, forms = self._list_models[name]
                forms[:] = [ModelForm(item, v, exclude=self.exclude, prefix=f"{path}.{i}.") for i, v in enumerate(data[name])]
                box.children = tuple(forms)
            else:
                self._hidden[name] = data[name]

    def widget(self, path: str) -> w.Widget:
        """The leaf widget of a dotted path (``"grpo.lr"``), searching nested sections.

        Raises:
            KeyError: no such field in the form.
        """
        full = f"{self.prefix}{path}"
        if full in self.leaves:
            return self.leaves[full]
        head, _, rest = path.partition(".")
        if head in self.sections and rest:
            return self.sections[head].widget(rest)
        if head in self._list_models and rest:
            idx, _, sub = rest.partition(".")
            return self._list_models[head][2][int(idx)].widget(sub)
        raise KeyError(f"no form field {full!r}")
