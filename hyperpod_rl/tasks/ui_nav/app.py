"""The application model of the interface-navigation task: screens, controls, a goal, and its state graph.

An :class:`App` is an immutable tree of screens. Screen 0 (``home``) is a *menu*; a menu lists
buttons that open its child screens (the button label is the child's title). Leaves are *pages*:
a ``settings`` page holds toggles, a ``form`` page holds text fields; every page has one action
button (``Save``, ``Apply``, ``Submit`` ...) that commits the page's pending values, through a
confirmation dialog (``OK`` / ``Cancel``) when ``confirm`` is set.

The runtime :class:`State` is the screen shown, whether the dialog is open, the focused field,
the pending (unsaved) values of the page shown and the saved values of every page. Actions
(:class:`Action`): click an element by its label (or by pixel coordinates, resolved to a label by
the renderer's layout), type text into the focused field, go back. :func:`apply_action` is the
one transition function; the env, the reward and the search all use it.

The goal holds when the *saved* values of the goal page meet every target. Distances to the goal
are shortest action counts found by breadth-first search over the app's state graph
(:func:`distance_to_goal`), on states projected to what the goal depends on (the screen, the dialog,
the focus, and the targets' pending and saved values); the projection keeps exact distances,
since no other value changes which actions reach the goal.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Any, Final, Literal

from hyperpod_rl.base import listed
from hyperpod_rl.errors import TaskError

__all__ = [
    "DIALOG_CANCEL",
    "DIALOG_OK",
    "DIALOG_TEXT",
    "RESERVED_WORDS",
    "CONTROL_KINDS",
    "COORDINATES_PATTERN",
    "LABEL_PATTERN",
    "RESERVED_WORD_PATTERN",
    "SCREEN_KINDS",
    "Action",
    "App",
    "Control",
    "Element",
    "Goal",
    "Screen",
    "State",
    "Step",
    "apply_action",
    "default_max_turns",
    "distance_to_goal",
    "find_element",
    "fold_label",
    "initial_state",
    "is_solved",
    "label_clashes",
    "label_problem",
    "optimal_actions",
    "press",
    "visible_elements",
]

ScreenKind = Literal["menu", "settings", "form"]
SCREEN_KINDS: Final[tuple[str, ...]] = ("menu", "settings", "form")
CONTROL_KINDS: Final[tuple[str, ...]] = ("toggle", "field")
#: Labels of the confirmation dialog's buttons.
DIALOG_OK: Final[str] = "OK"
DIALOG_CANCEL: Final[str] = "Cancel"
#: Text of the confirmation dialog.
DIALOG_TEXT: Final[str] = "Save changes?"
#: Words that never appear in a label (they are action verbs of the answer format).
RESERVED_WORDS: Final[frozenset[str]] = frozenset({"click", "type", "back"})
Value = bool | str


@dataclass(frozen=True, slots=True)
class Control:
    """One control of a page.

    Attributes:
        label: Visible label (unique on its page once case and runs of spaces are ignored: :func:`fold_label`).
        kind: ``"toggle"`` (a switch, value bool) or ``"field"`` (a text field, value str).
        initial: Value when the app starts (toggle: bool; field: ``""``).
    """

    label: str
    kind: str
    initial: Value


@dataclass(frozen=True, slots=True)
class Screen:
    """One screen of the app.

    Attributes:
        title: Screen title; a menu shows it on the button that opens this screen.
        kind: ``"menu"``, ``"settings"`` or ``"form"``.
        parent: Index of the parent screen; None for the home screen (index 0).
        children: Menu only: indices of the screens its buttons open, in display order.
        controls: Page only: its toggles (settings) or text fields (form), in display order.
        action_label: Page only: label of the commit button (``Save``, ``Apply``, ``Submit`` ...).
        confirm: Page only: the commit button opens an ``OK`` / ``Cancel`` dialog first.
    """

    title: str
    kind: str
    parent: int | None = None
    children: tuple[int, ...] = ()
    controls: tuple[Control, ...] = ()
    action_label: str = ""
    confirm: bool = False


@dataclass(frozen=True, slots=True)
class Goal:
    """What the instruction asks: the saved values of ``page`` must meet every target.

    Attributes:
        page: Index of the goal page.
        targets: ``(control index, value)`` pairs: a toggle's bool or a field's exact text.
    """

    page: int
    targets: tuple[tuple[int, Value], ...]


#: The label grammar (docs/ui-nav-task.md, "Answer grammar"): printable ASCII (space to ``~``) but
#: ``"`` ``;`` ``(`` ``)``, starting and ending with a non-space. The answer parser reads a clicked
#: label with the same pattern, so every label an app can hold is clickable by its exact text.
LABEL_PATTERN: Final[re.Pattern[str]] = re.compile(r"[!#-'*-:<-~](?:[ !#-'*-:<-~]*[!#-'*-:<-~])?")
#: A reserved word standing as a word of a label (``Go back``, ``Auto-type``): the parser reads it as a second verb.
RESERVED_WORD_PATTERN: Final[re.Pattern[str]] = re.compile(r"\b(?:" + "|".join(sorted(RESERVED_WORDS)) + r")\b", re.IGNORECASE)
#: Bare click coordinates, ``120, 48`` (the answer grammar's ``coords`` without parentheses): no label has this shape.
COORDINATES_PATTERN: Final[re.Pattern[str]] = re.compile(r"(-?\d+) *, *(-?\d+)")


def label_problem(label: object) -> str | None:
    """Why ``label`` cannot be a label (see :data:`LABEL_PATTERN`), or None when it can."""
    if not isinstance(label, str) or not LABEL_PATTERN.fullmatch(label):
        return 'must be non-empty printable ASCII without outer spaces, and must not hold " ; ( )'
    if RESERVED_WORD_PATTERN.search(label):
        return f"must not hold the words {listed(sorted(RESERVED_WORDS))} (action verbs of the answer format)"
    if COORDINATES_PATTERN.fullmatch(label):
        return "must not look like click coordinates (two integers and a comma)"
    return None


def _check_label(where: str, label: str) -> None:
    problem = label_problem(label)
    if problem is not None:
        raise TaskError(f"{where}: label {label!r} {problem}")


@dataclass(frozen=True, slots=False)
class App:
    """An immutable application: its name, screens and goal.

    Attributes:
        name: Application name, shown in every title bar.
        screens: Screen 0 is the home menu; every other screen has a parent menu.
        goal: The instruction's goal (a page and its target values).
        layout: How menus are drawn: ``"list"`` (one column of buttons) or ``"grid"`` (two columns).
        align: Where page buttons sit: ``"left"`` or ``"right"``.

    Raises:
        TaskError: naming the bad field: a broken tree (bad parent, child, kind), a label that is
            empty, non-ASCII or reserved, labels of one screen that are one label to a click
            (:func:`label_clashes`: the same once case and runs of spaces are ignored; the message
            names them), a goal outside the app, or a goal that already holds at the start.
    """

    name: str
    screens: tuple[Screen, ...]
    goal: Goal
    layout: str = "list"
    align: str = "right"

    def __post_init__(self) -> None:
        _check_label("name", self.name)
        if self.layout not in ("list", "grid") or self.align not in ("left", "right"):
            raise TaskError(f"layout={self.layout!r} / align={self.align!r}: use layout 'list' or 'grid', align 'left' or 'right'")
        if not self.screens or self.screens[0].kind != "menu" or self.screens[0].parent is not None:
            raise TaskError("screens[0] must be the home menu (kind 'menu', parent None)")
        n = len(self.screens)
        for i, s in enumerate(self.screens):
            where = f"screens[{i}]"
            _check_label(f"{where}.title", s.title)
            if s.kind not in SCREEN_KINDS:
                raise TaskError(f"{where}.kind={s.kind!r}: use one of {listed(SCREEN_KINDS)}")
            if i and (
                s.parent is None
                or not 0 <= s.parent < n
                or self.screens[s.parent].kind != "menu"
                or i not in self.screens[s.parent].children
            ):
                raise TaskError(f"{where}.parent={s.parent!r} must be a menu that lists screen {i} among its children")
            if s.kind == "menu":
                if not s.children or s.controls or s.action_label:
                    raise TaskError(f"{where}: a menu needs children and has no controls or action_label")
                labels = [self.screens[c].title for c in s.children if 0 < c < n]
                if len(labels) != len(s.children) or any(self.screens[c].parent != i for c in s.children):
                    raise TaskError(f"{where}.children={s.children} must be screens whose parent is {i}")
            else:
                if s.children or not s.controls:
                    raise TaskError(f"{where}: a page needs controls and has no children")
                _check_label(f"{where}.action_label", s.action_label)
                want = "toggle" if s.kind == "settings" else "field"
                for j, c in enumerate(s.controls):
                    _check_label(f"{where}.controls[{j}].label", c.label)
                    if c.kind != want or (want == "toggle" and not isinstance(c.initial, bool)) or (want == "field" and c.initial != ""):
                        raise TaskError(f"{where}.controls[{j}]: a {s.kind} page holds {want}s (toggle initial bool, field initial '')")
                labels = [c.label for c in s.controls] + [s.action_label]
            if clashes := label_clashes(labels):
                raise TaskError(
                    f"{where}: labels {clashes} are one label to a click, which ignores case and runs of spaces "
                    "(one of them could never be clicked): rename them apart"
                )
        g = self.goal
        if not 0 < g.page < n or self.screens[g.page].kind == "menu":
            raise TaskError(f"goal.page={g.page} must be a page (settings or form) of the app")
        page = self.screens[g.page]
        if not g.targets or len({t[0] for t in g.targets}) != len(g.targets):
            raise TaskError("goal.targets must list distinct controls")
        for idx, value in g.targets:
            if not 0 <= idx < len(page.controls):
                raise TaskError(f"goal.targets: control {idx} is not on page {page.title!r}")
            ctl = page.controls[idx]
            if (ctl.kind == "toggle") != isinstance(value, bool) or (
                ctl.kind == "field"
                and not (isinstance(value, str) and value.strip() == value and value and value.isascii() and '"' not in value)
            ):
                raise TaskError(
                    f"goal.targets: value {value!r} does not suit the {ctl.kind} {ctl.label!r} (toggle: bool; field: ASCII text without quotes)"
                )
        if is_solved(self, initial_state(self)):
            raise TaskError("goal already holds at the start; pick targets that differ from the initial values")

    # ------------------------------------------------------------------ identity
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (round-trips through :meth:`from_dict`)."""
        return {
            "name": self.name,
            "layout": self.layout,
            "align": self.align,
            "screens": [
                {
                    "title": s.title,
                    "kind": s.kind,
                    "parent": s.parent,
                    "children": list(s.children),
                    "controls": [{"label": c.label, "kind": c.kind, "initial": c.initial} for c in s.controls],
                    "action_label": s.action_label,
                    "confirm": s.confirm,
                }
                for s in self.screens
            ],
            "goal": {"page": self.goal.page, "targets": [[i, v] for i, v in self.goal.targets]},
        }

    def to_json(self) -> str:
        """Canonical JSON text (sorted keys, no spaces): the dataset's ``app`` column."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> App:
        """Build from :meth:`to_dict` output.

        Raises:
            TaskError: a key is missing or a value is invalid (names it).
        """
        try:
            screens = tuple(
                Screen(
                    title=s["title"],
                    kind=s["kind"],
                    parent=s.get("parent"),
                    children=tuple(int(c) for c in s.get("children", ())),
                    controls=tuple(Control(c["label"], c["kind"], c["initial"]) for c in s.get("controls", ())),
                    action_label=s.get("action_label", ""),
                    confirm=bool(s.get("confirm", False)),
                )
                for s in data["screens"]
            )
            goal = Goal(int(data["goal"]["page"]), tuple((int(i), v) for i, v in data["goal"]["targets"]))
            return cls(name=data["name"], screens=screens, goal=goal, layout=data.get("layout", "list"), align=data.get("align", "right"))
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, TaskError):
                raise
            raise TaskError(f"app JSON is invalid ({type(e).__name__}: {e}); write it with App.to_json()") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> App:
        """Parse :meth:`to_json` text.

        Raises:
            TaskError: the text is not JSON or does not describe a valid app.
        """
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, TypeError) as e:
            raise TaskError(f"app JSON is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise TaskError("app JSON must be an object; write it with App.to_json()")
        return cls.from_dict(data)

    @cached_property
    def content_hash(self) -> str:
        """sha256 hex of :meth:`to_json`: the identity used to keep splits disjoint."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    def __hash__(self) -> int:
        return hash(self.content_hash)

    # ------------------------------------------------------------------ structure
    def path_to(self, screen: int) -> tuple[int, ...]:
        """Screen indices from home (excluded) down to ``screen`` (included)."""
        out: list[int] = []
        while screen:
            out.append(screen)
            screen = self.screens[screen].parent or 0
        return tuple(reversed(out))

    @property
    def depth(self) -> int:
        """Menu clicks from home to the goal page."""
        return len(self.path_to(self.goal.page))

    @property
    def goal_kind(self) -> str:
        """``"settings"`` or ``"form"``: the goal page's kind."""
        return self.screens[self.goal.page].kind

    @cached_property
    def shortest_path_length(self) -> int:
        """Fewest actions from the start to the goal."""
        return distance_to_goal(self, initial_state(self))


@dataclass(frozen=True, slots=True)
class State:
    """The runtime state of an app.

    Attributes:
        screen: Index of the screen shown.
        dialog: The confirmation dialog is open (only its buttons can be clicked).
        focus: Index of the focused text field on the page shown, or None.
        pending: Values of the page shown, as edited and not yet saved (``()`` on a menu).
        saved: Saved values of every screen's controls (``()`` for menus).
    """

    screen: int
    dialog: bool = False
    focus: int | None = None
    pending: tuple[Value, ...] = ()
    saved: tuple[tuple[Value, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class Element:
    """A clickable element on the screen.

    Attributes:
        label: Its visible label.
        role: ``"open"`` (menu button), ``"toggle"``, ``"field"``, ``"commit"`` (page button),
            ``"ok"`` or ``"cancel"`` (dialog buttons).
        index: Screen index (``open``) or control index (``toggle``, ``field``); -1 otherwise.
    """

    label: str
    role: str
    index: int = -1


@dataclass(frozen=True, slots=True)
class Action:
    """One parsed action.

    Attributes:
        kind: ``"click"`` (by ``label``), ``"click_xy"`` (pixel ``x``, ``y`` of the image shown),
            ``"type"`` (``text`` into the focused field) or ``"back"``.
        label: Element label (``click``).
        x, y: Pixel coordinates, origin top-left (``click_xy``).
        text: Text to type (``type``).
    """

    kind: str
    label: str = ""
    x: int = 0
    y: int = 0
    text: str = ""

    def describe(self) -> str:
        """The action in answer syntax, e.g. ``click "Dark mode"``."""
        if self.kind == "click":
            return f'click "{self.label}"'
        if self.kind == "click_xy":
            return f"click ({self.x}, {self.y})"
        if self.kind == "type":
            return f'type "{self.text}"'
        return "back"


@dataclass(frozen=True, slots=True)
class Step:
    """Result of :func:`apply_action`.

    Attributes:
        state: The state after the action (unchanged when ``error`` is set).
        error: None when the action applied, else why not: ``"no_such_element"`` (no element with
            that label is visible), ``"no_focused_field"`` (type without a focused field),
            ``"nothing_to_go_back_to"`` (back on the home screen).
        element: The element clicked, if any.
    """

    state: State
    error: str | None = None
    element: Element | None = None


def initial_state(app: App) -> State:
    """The home screen, no dialog, nothing focused, every control at its initial value."""
    saved = tuple(tuple(c.initial for c in s.controls) for s in app.screens)
    return State(screen=0, saved=saved)


def visible_elements(app: App, state: State) -> tuple[Element, ...]:
    """The clickable elements shown in ``state``, in display order (dialog buttons only when open)."""
    if state.dialog:
        return (Element(DIALOG_OK, "ok"), Element(DIALOG_CANCEL, "cancel"))
    s = app.screens[state.screen]
    if s.kind == "menu":
        return tuple(Element(app.screens[c].title, "open", c) for c in s.children)
    role = "toggle" if s.kind == "settings" else "field"
    return (*(Element(c.label, role, j) for j, c in enumerate(s.controls)), Element(s.action_label, "commit"))


def fold_label(label: str) -> str:
    """A label as a click matches it (:func:`find_element`): runs of spaces collapsed, case
    ignored, so ``"Dark  Mode"`` and ``"dark mode"`` are one label."""
    return " ".join(label.split()).lower()


def label_clashes(labels: Iterable[str]) -> str:
    """The labels among ``labels`` that are one label to a click (:func:`fold_label`), as
    ``"'Dark mode' and 'dark  mode'"`` (groups joined by ``"; "``), or ``""`` when there are none."""
    groups: dict[str, list[str]] = {}
    for label in labels:
        groups.setdefault(fold_label(label), []).append(label)
    return "; ".join(" and ".join(repr(x) for x in group) for group in groups.values() if len(group) > 1)


def find_element(app: App, state: State, label: str) -> Element | None:
    """The visible element whose label equals ``label`` (case-insensitive, spaces collapsed), or None."""
    key = fold_label(label)
    for el in visible_elements(app, state):
        if fold_label(el.label) == key:
            return el
    return None


def _commit(state: State) -> State:
    saved = list(state.saved)
    saved[state.screen] = state.pending
    return replace(state, saved=tuple(saved), dialog=False)


def press(app: App, state: State, el: Element) -> State:
    """The state after clicking the visible element ``el``."""
    if el.role == "open":
        return State(screen=el.index, pending=state.saved[el.index], saved=state.saved)
    if el.role == "toggle":
        pending = list(state.pending)
        pending[el.index] = not pending[el.index]
        return replace(state, pending=tuple(pending), focus=None)
    if el.role == "field":
        return replace(state, focus=el.index)
    if el.role == "commit":
        return replace(state, dialog=True, focus=None) if app.screens[state.screen].confirm else replace(_commit(state), focus=None)
    if el.role == "ok":
        return _commit(state)
    return replace(state, dialog=False)  # cancel


def apply_action(app: App, state: State, action: Action) -> Step:
    """Apply one label click, typing or back (a ``click_xy`` must be resolved to a label first).

    Rules: opening a screen shows its saved values; back from a page discards its pending edits
    (back on an open dialog closes it, as Cancel); ``type`` replaces the focused field's text.

    Raises:
        TaskError: on a ``click_xy`` action (resolve it with the renderer's layout) or an unknown kind.
    """
    if action.kind == "click":
        el = find_element(app, state, action.label)
        if el is None:
            return Step(state, "no_such_element")
        return Step(press(app, state, el), None, el)
    if action.kind == "type":
        if state.dialog or state.focus is None:
            return Step(state, "no_focused_field")
        pending = list(state.pending)
        pending[state.focus] = action.text.strip()
        return Step(replace(state, pending=tuple(pending)))
    if action.kind == "back":
        if state.dialog:
            return Step(replace(state, dialog=False))
        if state.screen == 0:
            return Step(state, "nothing_to_go_back_to")
        parent = app.screens[state.screen].parent or 0
        return Step(State(screen=parent, pending=state.saved[parent], saved=state.saved))
    if action.kind == "click_xy":
        raise TaskError("click_xy actions are resolved to a label by the layout first (hyperpod_rl.tasks.ui_nav.render.element_at)")
    raise TaskError(f"action kind {action.kind!r} is not one of click, click_xy, type, back")


def is_solved(app: App, state: State) -> bool:
    """True when the goal page's saved values meet every target."""
    saved = state.saved[app.goal.page]
    return all(saved[i] == v for i, v in app.goal.targets)


# ---------------------------------------------------------------------- search
def _project(app: App, state: State) -> tuple[Any, ...]:
    """The part of ``state`` the goal depends on (see the module docstring)."""
    g = app.goal
    on_goal = state.screen == g.page
    pending = tuple(state.pending[i] == v for i, v in g.targets) if on_goal else ()
    saved = tuple(state.saved[g.page][i] == v for i, v in g.targets)
    return (state.screen, state.dialog, state.focus if on_goal else None, pending, saved)


def _search_actions(app: App, state: State) -> list[Action]:
    """Actions the search tries: every visible click, back, and typing each target text when a field is focused."""
    acts = [Action("click", el.label) for el in visible_elements(app, state)]
    acts.append(Action("back"))
    if state.focus is not None and not state.dialog:
        acts.extend(Action("type", text=v) for _, v in app.goal.targets if isinstance(v, str))
        acts.append(Action("type", text="-"))  # any other text: the field holds a wrong value
    return acts


@lru_cache(maxsize=512)
def _distance_map(app: App) -> dict[tuple[Any, ...], int]:
    """Fewest actions to the goal from every reachable projected state (BFS backwards over the state graph)."""
    start = initial_state(app)
    key0 = _project(app, start)
    reps: dict[tuple[Any, ...], State] = {key0: start}
    preds: dict[tuple[Any, ...], set[tuple[Any, ...]]] = {key0: set()}
    queue = deque([key0])
    goals = []
    while queue:
        key = queue.popleft()
        state = reps[key]
        if is_solved(app, state):
            goals.append(key)
            continue  # the episode ends on success
        for act in _search_actions(app, state):
            step = apply_action(app, state, act)
            if step.error is not None:
                continue
            nxt = _project(app, step.state)
            if nxt not in reps:
                reps[nxt] = step.state
                preds[nxt] = set()
                queue.append(nxt)
            preds[nxt].add(key)
    dist = {k: 0 for k in goals}
    queue = deque(goals)
    while queue:
        key = queue.popleft()
        for p in preds[key]:
            if p not in dist:
                dist[p] = dist[key] + 1
                queue.append(p)
    return dist


def distance_to_goal(app: App, state: State) -> int:
    """Fewest actions from ``state`` until the goal holds (0 when it holds).

    Raises:
        TaskError: ``state`` is not reachable from the app's start (it does not belong to ``app``).
    """
    d = _distance_map(app).get(_project(app, state))
    if d is None:
        raise TaskError(f"state {state} is not reachable in app {app.name!r}")
    return d


def optimal_actions(app: App, state: State) -> tuple[Action, ...]:
    """Actions (label clicks, back, typing a target text) that lower the distance by one."""
    d = distance_to_goal(app, state)
    out = []
    for act in _search_actions(app, state):
        if act.kind == "type" and act.text == "-":
            continue
        step = apply_action(app, state, act)
        if step.error is None and distance_to_goal(app, step.state) == d - 1:
            out.append(act)
    return tuple(out)


def default_max_turns(app: App) -> int:
    """The default turn limit: ``2 * shortest_path_length + 4``."""
    return 2 * app.shortest_path_length + 4
