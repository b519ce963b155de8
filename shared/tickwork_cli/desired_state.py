"""Jobs as code, the pure part of `tickwork plan` and `tickwork apply` (docs/jobs-as-code.md): the definitions the
files give, against what the API has, make a plan: what to create, what to change (a field diff), what to cancel,
in the order to do it (calendars before the jobs and workflows that name them). No I/O: the files are read by
tickwork_cli.definition_files, the API called by tickwork_cli.jobs_as_code.

What a definition manages: the fields it gives, at every depth of an object (`schedule: {cron: ...}` manages the
cron and leaves the time zone the API defaulted alone), lists whole, and `tags` whole (its own and
`managed_by: <source>`, the label that marks a job or a workflow as this source's). A calendar has no tags: it is
matched by its name, and never cancelled by a prune.

A name already used by a job or a workflow this source does not manage is a conflict, never a second object of the
name beside it: one made by hand is taken over (adopted: tagged this source's, its fields made the file's) only when
asked; another source's is never taken.

A freeze has neither a name nor tags, and is lifted, never changed: its source and name ride at the end of its
reason (`... [managed_by: <source>, name: <name>]`); a changed one is replaced (a new one made, then the old one
lifted), a pruned one lifted, and one whose window has ended is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

KINDS = ("calendar", "job", "workflow", "freeze")  # in the order they are applied: a calendar before what names it
MANAGED_BY = "managed_by"
ActionKind = Literal["create", "adopt", "change", "replace", "cancel"]
FREEZE_MARK = re.compile(rf" \[{MANAGED_BY}: (?P<source>.+?), name: (?P<name>.+)\]$")


class DefinitionError(ValueError):
    """A definition the plan cannot be made of; `where` names its file and line."""

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Definition:
    """One object as a file defines it: its kind, its name (its key within the tenant, per kind), the API's
    request body it stands for (with its name), and where it is (`file:line`, and each field path's line)."""

    kind: str
    name: str
    body: dict[str, Any]
    where: str
    lines: Mapping[str, str] = field(default_factory=dict)  # a field path (`schedule.cron`) -> `file:line`

    def where_is(self, path: str) -> str:
        """The line of a field path the API named, or of its closest parent the file has."""
        parts = path.split(".")
        while parts:
            found = self.lines.get(".".join(parts))
            if found:
                return found
            parts.pop()
        return self.where


@dataclass(frozen=True)
class Difference:
    path: str
    live: Any
    desired: Any


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    object_kind: str
    name: str
    definition: Definition | None = None  # none for a cancel
    live_id: str | None = None  # none for a create
    differences: tuple[Difference, ...] = ()
    body: dict[str, Any] = field(default_factory=dict)  # what to send: the whole body, or a change's fields


@dataclass(frozen=True)
class Conflict:
    """A definition whose name a live object this source does not manage already has: `owner` its source (None: made
    by hand), `ids` every such object's (more than one hand-made: none can be adopted)."""

    object_kind: str
    name: str
    definition: Definition
    ids: tuple[str, ...]
    owner: str | None

    @property
    def reason(self) -> str:
        held = f"{self.object_kind} {', '.join(self.ids)}"
        if self.owner is not None:
            return f"the name is {held}'s, managed by source {self.owner!r}: rename one"
        if len(self.ids) > 1:
            return f"the name is {len(self.ids)} hand-made {self.object_kind}s': {', '.join(self.ids)}; rename or cancel all but one"
        return f"the name is {held}'s, made by hand: --adopt makes it this source's, or rename one"


@dataclass(frozen=True)
class Plan:
    actions: tuple[Action, ...]
    conflicts: tuple[Conflict, ...] = ()

    @property
    def changes_anything(self) -> bool:
        return bool(self.actions)

    def count(self, kind: ActionKind) -> int:
        return sum(1 for action in self.actions if action.kind == kind)


def check_unique(definitions: Iterable[Definition]) -> list[Definition]:
    """The definitions, each (kind, name) once: a name defined twice is an error naming both places."""
    seen: dict[tuple[str, str], Definition] = {}
    for definition in definitions:
        key = (definition.kind, definition.name)
        if key in seen:
            raise DefinitionError(
                definition.where, f"{definition.kind} {definition.name!r} is defined twice (also at {seen[key].where})"
            )
        seen[key] = definition
    return list(seen.values())


def managed_by(item: Mapping[str, Any], source: str) -> bool:
    return (item.get("tags") or {}).get(MANAGED_BY) == source


def plan(
    definitions: Iterable[Definition],
    live: Mapping[str, Iterable[Mapping[str, Any]]],
    source: str,
    *,
    now: datetime,
    prune: bool = False,
    adopt: bool = False,
) -> Plan:
    """The actions that make `live` (by kind: the API's calendars, jobs and workflows, none CANCELLED, of the jobs
    and workflows at least those managed by `source` and those of a name a definition gives; and its freezes) what
    the definitions say: calendars first, then jobs, workflows and freezes, then the cancels and lifts. A definition
    whose name only another's object has is a conflict, or with `adopt` and one hand-made object of the name, an
    adoption of it."""
    wanted = check_unique(definitions)
    calendars = {c["name"]: c for c in live.get("calendar", ())}
    calendar_names = {c["id"]: c["name"] for c in calendars.values()}
    defined_calendars = {d.name for d in wanted if d.kind == "calendar"}
    actions: list[Action] = []
    conflicts: list[Conflict] = []
    for kind in ("calendar", "job", "workflow"):
        items = list(live.get(kind, ()))
        existing = {i["name"]: i for i in items if kind == "calendar" or managed_by(i, source)}
        others: dict[str, list[Mapping[str, Any]]] = {}
        for item in items:
            if item["name"] not in existing:
                others.setdefault(item["name"], []).append(item)
        for definition in (d for d in wanted if d.kind == kind):
            desired = dict(definition.body)
            if kind != "calendar":
                desired["tags"] = {**(desired.get("tags") or {}), MANAGED_BY: source}
                _check_calendar_names(definition, desired, calendars.keys() | defined_calendars)
            current = existing.get(definition.name)
            taken = others.get(definition.name, [])
            if current is None and not taken:
                actions.append(Action("create", kind, definition.name, definition, body=desired))
                continue
            if current is None:
                conflict = _conflict(definition, taken)
                if not adopt or conflict.owner is not None or len(conflict.ids) > 1:
                    conflicts.append(conflict)
                    continue
                current = taken[0]
            shown = dict(current)
            if kind != "calendar":
                shown["calendars"] = [calendar_names.get(i, i) for i in current.get("calendars") or []]
            differences = tuple(differences_of(desired, shown))
            if differences:
                # A calendar is replaced whole (PUT); a job or a workflow takes the fields that differ (PATCH).
                fields = {d.path.split(".")[0] for d in differences}
                body = desired if kind == "calendar" else {name: desired[name] for name in sorted(fields)}
                how: ActionKind = "change" if managed_by(current, source) or kind == "calendar" else "adopt"
                actions.append(Action(how, kind, definition.name, definition, current["id"], differences, body))
        if prune and kind != "calendar":
            defined = {d.name for d in wanted if d.kind == kind}
            for name, item in sorted(existing.items()):
                if name not in defined:
                    actions.append(Action("cancel", kind, name, live_id=item["id"]))
    actions += _freeze_actions(wanted, live.get("freeze", ()), source, now, prune=prune)
    cancels = [a for a in actions if a.kind == "cancel"]
    return Plan(tuple([a for a in actions if a.kind != "cancel"] + cancels), tuple(conflicts))


def freeze_reason(reason: str, source: str, name: str) -> str:
    """A managed freeze's reason: the file's, and which source's and name's it is."""
    return f"{reason} [{MANAGED_BY}: {source}, name: {name}]"


def _freeze_actions(
    wanted: Iterable[Definition], live: Iterable[Mapping[str, Any]], source: str, now: datetime, *, prune: bool
) -> list[Action]:
    """The freezes: each definition's made when none of its name stands (not lifted, not ended), replaced when one
    differs; with `prune`, the source's standing ones the files no longer define lifted."""
    standing: dict[str, Mapping[str, Any]] = {}
    for item in sorted(live, key=lambda f: str(f.get("created_at"))):  # the newest of a name wins
        mark = FREEZE_MARK.search(str(item.get("reason")))
        if mark and mark["source"] == source and not item.get("lifted_at") and not _ended(item.get("until"), now):
            standing[mark["name"]] = {
                **item,
                "reason": item["reason"][: mark.start()],
                "every_tenant": item.get("tenant") == "*",
            }
    actions = []
    defined = set()
    for definition in (d for d in wanted if d.kind == "freeze"):
        desired = _freeze_fields(definition)
        current = standing.get(definition.name)
        defined.add(definition.name)
        if _ended(desired["until"], now):  # the API takes no freeze that has ended: one the file ends now is lifted
            if current is not None:
                actions.append(Action("cancel", "freeze", definition.name, definition, current["id"]))
            continue
        body = {**desired, "reason": freeze_reason(desired["reason"], source, definition.name)}
        if current is None:
            actions.append(Action("create", "freeze", definition.name, definition, body=body))
            continue
        differences = tuple(differences_of(desired, current, whole=("selector",)))
        if differences:
            actions.append(Action("replace", "freeze", definition.name, definition, current["id"], differences, body))
    if prune:
        actions += [
            Action("cancel", "freeze", name, live_id=item["id"])
            for name, item in sorted(standing.items())
            if name not in defined
        ]
    return actions


def _freeze_fields(definition: Definition) -> dict[str, Any]:
    """A freeze definition's request body, without its name (the API's freeze has none); its window given as
    instants, so that the same file means the same freeze at every apply."""
    body = {k: v for k, v in definition.body.items() if k != "name"}
    if "for_seconds" in body:
        raise DefinitionError(
            definition.where_is("for_seconds"),
            "for_seconds: a freeze in a file ends at an instant (`until`): for_seconds would count from each apply",
        )
    if not isinstance(body.get("until"), str) or not isinstance(body.get("reason"), str):
        raise DefinitionError(definition.where, "a freeze needs its `until` (an instant) and its `reason`")
    return body


def _ended(until: Any, now: datetime) -> bool:
    end = _instant(until) if isinstance(until, str) else None
    return end is not None and end.tzinfo is not None and end <= now


def _conflict(definition: Definition, taken: Iterable[Mapping[str, Any]]) -> Conflict:
    """Another source's object of the name wins the telling over hand-made ones: it can never be adopted."""
    owners = {(i.get("tags") or {}).get(MANAGED_BY) for i in taken}
    owner = next((o for o in sorted(owners, key=str) if o is not None), None)
    held = [i for i in taken if (i.get("tags") or {}).get(MANAGED_BY) == owner]
    return Conflict(definition.kind, definition.name, definition, tuple(sorted(i["id"] for i in held)), owner)


def _check_calendar_names(definition: Definition, desired: Mapping[str, Any], known: Iterable[str]) -> None:
    names = set(known)
    for name in desired.get("calendars") or []:
        if not isinstance(name, str) or name not in names:
            raise DefinitionError(
                definition.where_is("calendars"),
                f"calendars: no calendar named {name!r}, in the files or the tenant's (a job names its calendars "
                "by name)",
            )


def with_calendar_ids(body: Mapping[str, Any], ids: Mapping[str, str]) -> dict[str, Any]:
    """The body as the API takes it: its calendars named by id (a name the files or the tenant give, resolved)."""
    if not body.get("calendars"):
        return dict(body)
    return {**body, "calendars": [ids.get(name, name) for name in body["calendars"]]}


def differences_of(desired: Any, live: Any, path: str = "", *, whole: tuple[str, ...] = ("tags",)) -> list[Difference]:
    """Where `live` differs from what `desired` gives: objects by the keys desired gives (those at a `whole` path,
    the tags, whole, a null the same as absent), lists and values whole, instants as instants (the API writes them
    back in its own format)."""
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        found = []
        for key, value in desired.items():
            at = f"{path}.{key}" if path else key
            if at in whole:
                current = live.get(key)
                shown = {k: v for k, v in current.items() if v is not None} if isinstance(current, Mapping) else {}
                if not isinstance(value, Mapping) or dict(value) != shown:
                    found.append(Difference(at, shown if isinstance(current, Mapping) else current, value))
                continue
            found += differences_of(value, live.get(key), at, whole=whole)
        return found
    return [] if _same(desired, live) else [Difference(path, live, desired)]


def _same(desired: Any, live: Any) -> bool:
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        return not differences_of(desired, live)
    if isinstance(desired, list) and isinstance(live, list):
        return len(desired) == len(live) and all(_same(d, v) for d, v in zip(desired, live, strict=True))
    if isinstance(desired, str) and isinstance(live, str) and desired != live:
        return _instant(desired) is not None and _instant(desired) == _instant(live)
    if isinstance(desired, bool) or isinstance(live, bool):
        return desired is live
    return bool(desired == live)


def _instant(text: str) -> datetime | None:
    if not re.match(r"^\d{4}-\d{2}-\d{2}T", text):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
