"""Seeded, reproducible application generator, with label vocabularies split by hash.

:func:`generate_app` builds a home menu, a chain of ``depth`` menu levels down to the goal page,
and distractor siblings at every level (pages or menus with their own pages). Titles, toggle and
field labels, values and app names come from the vocabularies below; each vocabulary is split
into a ``train`` part and a ``heldout`` part by the sha256 of the word (:func:`vocabulary`), so a
held-out app never shows a label that a train app can show. Button words (``Save``, ``OK`` ...)
are shared: they are the interface's grammar, not its content.

All randomness flows from one ``random.Random`` seeded with a string built from the arguments;
the same arguments give the same :attr:`App.content_hash` on every platform.
"""

from __future__ import annotations

import hashlib
import random
from typing import Final, Literal

from hyperpod_rl.base import listed
from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.ui_nav.app import App, Control, Goal, Screen, label_clashes

__all__ = ["ACTION_LABELS", "GOAL_KINDS", "VOCABULARIES", "generate_app", "vocabulary", "vocabulary_clashes"]

GoalKind = Literal["settings", "form"]
GOAL_KINDS: Final[tuple[str, ...]] = ("settings", "form")
LabelPool = Literal["train", "heldout", "all"]

#: Commit-button labels (shared by every split).
ACTION_LABELS: Final[dict[str, tuple[str, ...]]] = {"settings": ("Save", "Apply", "Done"), "form": ("Submit", "Send", "Save")}

_APPS = (
    "PhotoBox Mailer Notely Tasker Cloudy Spendwise Trackly Chatter Beacon Orbit Pixel Harbor Quill Ledger Canvas "
    "Pulse Nimbus Atlas Ember Willow Sprout Comet Lumen Vertex Falcon Meadow Cobalt Juniper Tidal Summit Mosaic Zephyr"
).split()
_SECTIONS = (
    "Settings|Account|Privacy|Display|Sound|Network|Storage|Notifications|Security|Language|Accessibility|Updates|"
    "Devices|Battery|Keyboard|Mouse|Printers|Profile|Billing|Sharing|Calendar|Mail|Search|History|Downloads|"
    "Appearance|Advanced|General|About|Camera|Photos|Music|Video|Contacts|Messages|Maps|Weather|Clock|Files|"
    "Themes|Widgets|Gestures|Payments|Family|Sync|Cloud|Location|Reminders|Health|Wallet|Editor|Export|Import|"
    "Plugins|Shortcuts|Filters|Alerts|Library|Inbox|Archive|Workspace|Teams|Projects|Reports|Dashboard|Tools"
).split("|")
_TOGGLES = (
    "Dark mode|Auto update|Sync photos|Show hints|Autosave|Location access|Bluetooth|Wi-Fi|Airplane mode|"
    "Do not disturb|Night light|Captions|Spell check|Auto brightness|Sound effects|Vibration|Read receipts|"
    "Two-step login|Show previews|Compact view|Large text|Reduce motion|Auto play|Offline mode|Data saver|"
    "Email alerts|Push alerts|Weekly digest|Show badges|Smart reply|Auto lock|Face unlock|Cookies|Tracking|"
    "Crash reports|Beta features|Hotspot|Roaming|Auto rotate|Screen saver|Keyboard sounds|Haptics|"
    "Mono audio|High contrast|Grid lines|Auto correct|Word wrap|Line numbers|Live preview|Share usage|"
    "Background refresh|Low power|Quiet hours|Show seconds|Metric units|Auto translate|Safe search|Guest mode"
).split("|")
_FIELDS = (
    "Name|Email|City|Phone|Nickname|Company|Country|Website|Title|Street|Zip code|Username|Team|Subject|"
    "Tag|Folder|Label|Note|Alias|Room|Display name|Job title|Region|Postcode|Mobile|Department|Office|Floor|"
    "Desk|Badge|Locale|Timezone|Currency|Project|Channel|Topic|Group|Role|Manager|Home page|Pronouns|Bio|"
    "Status|Hobby|School|Major|Initials|Signature|Greeting|Motto|Pet name|Team name|Owner|Sponsor"
).split("|")
_VALUES = (
    "Ada|Grace|Alan|Linus|Marie|Oslo|Lima|Cairo|Quito|Berlin|Paris|Tokyo|Delta|Echo|Nova|Vega|Rio|Kyoto|"
    "Blue|Green|Amber|Jade|Ruby|Onyx|Sky|Moss|Fern|Pine|Cedar|Maple|Otter|Lynx|Heron|Robin|Wren|Finch"
).split("|")

#: Every vocabulary by name (before the train / held-out split).
VOCABULARIES: Final[dict[str, tuple[str, ...]]] = {
    "apps": tuple(_APPS),
    "sections": tuple(_SECTIONS),
    "toggles": tuple(_TOGGLES),
    "fields": tuple(_FIELDS),
    "values": tuple(_VALUES),
}
#: One word in this many goes to the held-out part of each vocabulary (by sha256 of the word).
HELDOUT_ONE_IN: Final[int] = 4


def vocabulary_clashes() -> list[str]:
    """Words a generated screen could show together that are one label to a click
    (:func:`~hyperpod_rl.tasks.ui_nav.app.label_clashes`: the same once case and runs of spaces
    are ignored), one line each; ``[]`` for the vocabularies above, which is what lets
    :func:`generate_app` draw labels without ever producing such a screen. A menu lists section
    titles; a page shows toggles or fields and its commit button."""
    out = []
    for name in ("sections", "toggles", "fields"):
        if clash := label_clashes(VOCABULARIES[name]):
            out.append(f"the {name} vocabulary: {clash}")
    for name, kind in (("toggles", "settings"), ("fields", "form")):
        if clash := label_clashes([*dict.fromkeys(VOCABULARIES[name]), *ACTION_LABELS[kind]]):
            out.append(f"the {name} vocabulary and the {kind} buttons: {clash}")
    return out


if _CLASHES := vocabulary_clashes():  # an edit of the words above: refused when the module loads, not in a played app
    raise TaskError("ui_nav label vocabularies hold labels a click cannot tell apart: " + "; ".join(_CLASHES))


def _is_heldout(word: str) -> bool:
    return int.from_bytes(hashlib.sha256(f"ui_nav:{word}".encode()).digest()[:4], "big") % HELDOUT_ONE_IN == 0


def vocabulary(name: str, pool: LabelPool) -> tuple[str, ...]:
    """The ``train``, ``heldout`` or ``all`` part of a vocabulary (disjoint train / held-out parts).

    Raises:
        TaskError: unknown vocabulary or pool.
    """
    if name not in VOCABULARIES:
        raise TaskError(f"vocabulary {name!r} is unknown; use one of {listed(sorted(VOCABULARIES))}")
    words = VOCABULARIES[name]
    if pool == "all":
        return words
    if pool not in ("train", "heldout"):
        raise TaskError(f"label pool {pool!r} is unknown; use 'train', 'heldout' or 'all'")
    return tuple(w for w in words if _is_heldout(w) == (pool == "heldout"))


def _page(rng: random.Random, kind: str, title: str, controls: int, toggles: list[str], fields: list[str], confirm: float) -> Screen:
    if kind == "settings":
        labels = rng.sample(toggles, controls)
        ctls = tuple(Control(lbl, "toggle", rng.random() < 0.5) for lbl in labels)
    else:
        labels = rng.sample(fields, controls)
        ctls = tuple(Control(lbl, "field", "") for lbl in labels)
    return Screen(
        title=title, kind=kind, parent=None, controls=ctls, action_label=rng.choice(ACTION_LABELS[kind]), confirm=rng.random() < confirm
    )


def generate_app(
    *,
    seed: int,
    depth: int = 1,
    branching: tuple[int, int] = (2, 3),
    controls: tuple[int, int] = (2, 3),
    goal_kind: GoalKind = "settings",
    targets: int = 1,
    confirm: float = 0.5,
    layout: str | None = None,
    labels: LabelPool = "train",
) -> App:
    """Generate a seeded app whose goal page sits ``depth`` menu clicks below home.

    Args:
        seed: Any int; the same arguments give the same app.
        depth: Menu clicks from home to the goal page (1..6).
        branching: Inclusive range of buttons per menu (2..4 fit every window size).
        controls: Inclusive range of controls per page (targets..4).
        goal_kind: ``"settings"`` (turn toggles on or off) or ``"form"`` (type text into fields).
        targets: Controls the goal sets (1..controls[0]).
        confirm: Probability that a page's commit button asks for confirmation.
        layout: ``"list"`` or ``"grid"`` menus; None draws one.
        labels: Vocabulary part: ``"train"``, ``"heldout"`` or ``"all"``.

    Returns:
        A valid :class:`App` (its goal never holds at the start).

    Raises:
        TaskError: naming the bad argument.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TaskError(f"seed must be an int, got {seed!r}")
    if not 1 <= depth <= 6:
        raise TaskError(f"depth={depth} must be in 1..6 menu levels")
    if not 2 <= branching[0] <= branching[1] <= 4:
        raise TaskError(f"branching={branching} must satisfy 2 <= low <= high <= 4 buttons per menu")
    if not 1 <= targets <= controls[0] <= controls[1] <= 4:
        raise TaskError(f"controls={controls} and targets={targets} must satisfy 1 <= targets <= low <= high <= 4")
    if goal_kind not in GOAL_KINDS:
        raise TaskError(f"goal_kind={goal_kind!r}: use one of {GOAL_KINDS}")
    if not 0.0 <= confirm <= 1.0:
        raise TaskError(f"confirm={confirm} must be a probability in [0, 1]")
    if layout not in (None, "list", "grid"):
        raise TaskError(f"layout={layout!r}: use 'list', 'grid' or None")
    rng = random.Random(f"hyperpod_rl.ui_nav:{seed}:{depth}:{branching}:{controls}:{goal_kind}:{targets}:{confirm}:{layout}:{labels}")
    sections = list(vocabulary("sections", labels))
    rng.shuffle(sections)
    toggles, fields, values = list(vocabulary("toggles", labels)), list(vocabulary("fields", labels)), list(vocabulary("values", labels))
    if len(fields) < controls[1] or len(toggles) < controls[1]:
        raise TaskError(f"the {labels!r} vocabulary has too few labels for controls={controls}")
    screens: list[dict] = [{"title": "Home", "kind": "menu", "parent": None, "children": []}]
    pages: dict[int, Screen] = {}

    def new_title() -> str:
        if not sections:
            raise TaskError(f"the {labels!r} section vocabulary ran out: lower depth or branching")
        return sections.pop()

    goal_page = -1
    parent = 0
    for level in range(depth):
        width = rng.randint(*branching)
        on_path = rng.randrange(width)
        for k in range(width):
            idx = len(screens)
            screens[parent]["children"].append(idx)
            title = new_title()
            if k == on_path:
                kind: str = "menu" if level < depth - 1 else goal_kind
                screens.append({"title": title, "kind": kind, "parent": parent, "children": []})
                if kind != "menu":
                    goal_page = idx
                    pages[idx] = _page(rng, kind, title, rng.randint(*controls), toggles, fields, confirm)
                continue
            # A distractor: a page, or (above the last level) a small menu of pages.
            if level < depth - 1 and rng.random() < 0.4:
                screens.append({"title": title, "kind": "menu", "parent": parent, "children": []})
                for _ in range(2):
                    sub = len(screens)
                    screens[idx]["children"].append(sub)
                    kind = rng.choice(GOAL_KINDS)
                    sub_title = new_title()
                    screens.append({"title": sub_title, "kind": kind, "parent": idx, "children": []})
                    pages[sub] = _page(rng, kind, sub_title, rng.randint(*controls), toggles, fields, confirm)
            else:
                kind = rng.choice(GOAL_KINDS)
                screens.append({"title": title, "kind": kind, "parent": parent, "children": []})
                pages[idx] = _page(rng, kind, title, rng.randint(*controls), toggles, fields, confirm)
        parent = screens[parent]["children"][on_path]
    built = []
    for i, s in enumerate(screens):
        if i in pages:
            built.append(Screen(**{**_screen_fields(pages[i]), "parent": s["parent"]}))
        else:
            built.append(Screen(title=s["title"], kind="menu", parent=s["parent"], children=tuple(s["children"])))
    page = built[goal_page]
    chosen = sorted(rng.sample(range(len(page.controls)), targets))
    goal_targets: tuple[tuple[int, bool | str], ...]
    if goal_kind == "settings":
        goal_targets = tuple((i, not page.controls[i].initial) for i in chosen)
    else:
        picked = rng.sample(values, targets)
        goal_targets = tuple((i, v) for i, v in zip(chosen, picked, strict=True))
    return App(
        name=rng.choice(vocabulary("apps", labels)),
        screens=tuple(built),
        goal=Goal(goal_page, goal_targets),
        layout=layout or rng.choice(("list", "grid")),
        align=rng.choice(("left", "right")),
    )


def _screen_fields(s: Screen) -> dict:
    return {"title": s.title, "kind": s.kind, "controls": s.controls, "action_label": s.action_label, "confirm": s.confirm}
