"""The workplace environment: in-memory email, contacts, calendar and todos behind 16 tools.

One instance per rollout (TRL's ``environment_factory`` product): public methods are the
tools, ``reset(**row)`` loads the row's task, and all state lives on the instance.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from tasks.environments.tooling import (
    CallRecord,
    ToolError,
    call_tool,
    compare_episode,
    normalize,
    tool,
)
from verifiers.verdict import Verdict

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MAX_LISTED = 10  # observations stay short: a tiny model reads them back in its context
TABLES = ("contacts", "emails", "events", "todos")


def empty_state() -> dict[str, list[dict[str, Any]]]:
    return {table: [] for table in TABLES}


def task_of(row: Mapping[str, Any], environment: str = "workplace") -> dict[str, Any] | None:
    """The ``environment`` task in a row's reference, or None for rows of other environments."""
    reference = row.get("reference")
    if isinstance(reference, str):
        try:
            reference = json.loads(reference)
        except json.JSONDecodeError:
            return None
    if not isinstance(reference, Mapping) or reference.get("environment") != environment:
        return None
    task = reference.get("task")
    return dict(task) if isinstance(task, Mapping) else None


class WorkplaceEnvironment:
    """Email, contacts, calendar and todos for one episode. Scored by ``episode_verdict``."""

    def __init__(self) -> None:
        self._state = empty_state()
        self._task: dict[str, Any] | None = None
        self._calls: list[CallRecord] = []

    def reset(self, **row: Any) -> None:
        """Start an episode from a dataset row (its ``reference`` holds the task)."""
        self._task = task_of(row)
        self._load((self._task or {}).get("state") or empty_state())
        return None  # the instruction is already in the row's prompt

    def _load(self, state: Mapping[str, Any]) -> None:
        self._state = {table: copy.deepcopy(list(state.get(table, []))) for table in TABLES}
        self._calls = []

    # -- helpers (private: TRL exposes every public method as a tool) --

    def _find(self, table: str, key: str, value: Any) -> dict[str, Any]:
        for item in self._state[table]:
            if normalize(item[key]) == normalize(value):
                return item
        raise ToolError(f"no {table[:-1]} with {key} {value!r}")

    def _next_id(self, table: str) -> int:
        return max((item["id"] for item in self._state[table]), default=0) + 1

    def _listing(self, items: list[dict[str, Any]], fields: tuple[str, ...]) -> str:
        if not items:
            return "none"
        lines = [" | ".join(f"{f} {item[f]}" for f in fields) for item in items[:MAX_LISTED]]
        more = len(items) - MAX_LISTED
        return "\n".join(lines + ([f"... {more} more"] if more > 0 else []))

    # -- email --

    @tool(writes=True)
    def send_email(self, to: str, body: str, subject: str = "") -> str:
        """Send an email to a saved contact.

        Args:
            to: Name of a saved contact.
            body: Text of the email.
            subject: Subject line.
        """
        contact = self._find("contacts", "name", to)
        email_id = self._next_id("emails")
        self._state["emails"].append(
            {
                "id": email_id,
                "folder": "sent",
                "from": "me",
                "to": contact["name"],
                "subject": subject,
                "body": body,
            }
        )
        return f"sent email {email_id} to {contact['name']}"

    @tool(writes=False)
    def search_emails(self, query: str) -> str:
        """Find emails whose sender, subject or body contains the query.

        Args:
            query: Text to look for.
        """
        q = normalize(query)
        hits = [e for e in self._state["emails"] if any(q in normalize(e[f]) for f in ("from", "subject", "body"))]
        return self._listing(hits, ("id", "from", "subject"))

    @tool(writes=False)
    def read_email(self, email_id: int) -> str:
        """Read one email.

        Args:
            email_id: Id of the email.
        """
        e = self._find("emails", "id", email_id)
        return f"id {e['id']} | from {e['from']} | to {e['to']} | subject {e['subject']} | {e['body']}"

    @tool(writes=True)
    def reply_email(self, email_id: int, body: str) -> str:
        """Reply to the sender of an email.

        Args:
            email_id: Id of the email to answer.
            body: Text of the reply.
        """
        original = self._find("emails", "id", email_id)
        if original["from"] == "me":
            raise ToolError(f"email {email_id} was sent by you; reply to a received email")
        return self.send_email.__wrapped__(self, original["from"], body, "re: " + original["subject"])

    @tool(writes=True)
    def delete_email(self, email_id: int) -> str:
        """Delete an email.

        Args:
            email_id: Id of the email.
        """
        self._state["emails"].remove(self._find("emails", "id", email_id))
        return f"deleted email {email_id}"

    # -- contacts --

    @tool(writes=False)
    def find_contact(self, query: str) -> str:
        """Find contacts whose name, email or phone contains the query.

        Args:
            query: Text to look for.
        """
        q = normalize(query)
        hits = [c for c in self._state["contacts"] if any(q in normalize(c[f]) for f in ("name", "email", "phone"))]
        return self._listing(hits, ("name", "email", "phone"))

    @tool(writes=True)
    def add_contact(self, name: str, email: str, phone: str = "") -> str:
        """Save a new contact.

        Args:
            name: Contact name.
            email: Email address.
            phone: Phone number.
        """
        if not name.strip() or "@" not in email:
            raise ToolError("add_contact needs a name and an email address containing '@'")
        if any(normalize(c["name"]) == normalize(name) for c in self._state["contacts"]):
            raise ToolError(f"contact {name!r} already exists")
        self._state["contacts"].append({"name": name.strip(), "email": email.strip(), "phone": phone.strip()})
        return f"added contact {name.strip()}"

    @tool(writes=True)
    def delete_contact(self, name: str) -> str:
        """Delete a saved contact.

        Args:
            name: Contact name.
        """
        self._state["contacts"].remove(self._find("contacts", "name", name))
        return f"deleted contact {name}"

    # -- calendar --

    def _day(self, day: str) -> str:
        if normalize(day) not in DAYS:
            raise ToolError(f"day must be one of {', '.join(DAYS)}")
        return normalize(day)

    @tool(writes=True)
    def add_event(self, title: str, day: str, time: str = "") -> str:
        """Add an event to the calendar.

        Args:
            title: Event title.
            day: Day of the week (choices: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"])
            time: Start time as HH:MM.
        """
        day = self._day(day)
        if not title.strip():
            raise ToolError("add_event needs a title")
        event_id = self._next_id("events")
        self._state["events"].append({"id": event_id, "title": title.strip(), "day": day, "time": time.strip()})
        return f"added event {event_id} on {day}"

    @tool(writes=False)
    def list_events(self, day: str = "") -> str:
        """List calendar events, optionally only those on one day.

        Args:
            day: Day of the week; empty for all days.
        """
        wanted = self._day(day) if day.strip() else None
        events = [e for e in self._state["events"] if wanted is None or e["day"] == wanted]
        return self._listing(events, ("id", "title", "day", "time"))

    @tool(writes=True)
    def cancel_event(self, event_id: int) -> str:
        """Remove an event from the calendar.

        Args:
            event_id: Id of the event.
        """
        self._state["events"].remove(self._find("events", "id", event_id))
        return f"cancelled event {event_id}"

    @tool(writes=True)
    def move_event(self, event_id: int, day: str) -> str:
        """Move an event to another day.

        Args:
            event_id: Id of the event.
            day: New day of the week (choices: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"])
        """
        event = self._find("events", "id", event_id)
        event["day"] = self._day(day)
        return f"moved event {event_id} to {event['day']}"

    # -- todos --

    @tool(writes=True)
    def add_todo(self, title: str) -> str:
        """Add an item to the todo list.

        Args:
            title: What needs doing.
        """
        if not title.strip():
            raise ToolError("add_todo needs a title")
        todo_id = self._next_id("todos")
        self._state["todos"].append({"id": todo_id, "title": title.strip(), "done": False})
        return f"added todo {todo_id}"

    @tool(writes=False)
    def list_todos(self) -> str:
        """List the todo items."""
        return self._listing(self._state["todos"], ("id", "title", "done"))

    @tool(writes=True)
    def complete_todo(self, todo_id: int) -> str:
        """Mark a todo item as done.

        Args:
            todo_id: Id of the todo item.
        """
        self._find("todos", "id", todo_id)["done"] = True
        return f"completed todo {todo_id}"

    @tool(writes=True)
    def delete_todo(self, todo_id: int) -> str:
        """Delete a todo item.

        Args:
            todo_id: Id of the todo item.
        """
        self._state["todos"].remove(self._find("todos", "id", todo_id))
        return f"deleted todo {todo_id}"

    # -- scoring --

    def _snapshot(self) -> dict[str, list[Any]]:
        """Final state in comparison form (case and spacing of strings do not count)."""
        return {
            table: sorted(json.dumps({k: normalize(v) for k, v in item.items()}, sort_keys=True) for item in items)
            for table, items in self._state.items()
        }

    def _verdict(self) -> Verdict | None:
        """Score this episode against the task's gold calls; None when no task is loaded."""
        if self._task is None:
            return None
        gold = type(self)()
        gold._task = self._task
        gold._load(self._task.get("state") or empty_state())
        for call in self._task.get("calls", []):
            call_tool(gold, call["name"], call.get("arguments", {}))
        if not all(c.ok for c in gold._calls):
            return Verdict.error("the task's gold calls fail against its own initial state")
        return compare_episode(self._calls, gold._calls, self._snapshot(), gold._snapshot())
