"""The lite workplace: four short-named tools over the workplace state, and its one-step tasks.

A tiny model reads the tool listing in every agent prompt, so this environment exposes only
what the easiest tasks need (email, save a contact, add and finish todos). State, tool bodies and the
episode rule are the full
``WorkplaceEnvironment``'s: each lite tool runs a workplace tool body on a wrapped instance,
under its own ``@tool`` guard so the call log holds the lite names.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tasks.environments.tooling import CallRecord, tool
from tasks.environments.workplace import WorkplaceEnvironment, empty_state, task_of
from tasks.environments.workplace_tasks import (
    NAMES,
    TODOS,
    WORDS,
    Step,
    compose,
    gold_call,
    initial_state,
    task_rows,
)

NAME = "workplace_lite"
LEVELS: tuple[int, ...] = (1, 2)


def _body(name: str) -> Callable[..., str]:
    """The unguarded body of a workplace tool (the lite guard does the checking and logging)."""
    return getattr(WorkplaceEnvironment, name).__wrapped__


class WorkplaceLiteEnvironment:
    """Email, contacts and todos through four tools. Scored like the full workplace."""

    def __init__(self) -> None:
        self._office = WorkplaceEnvironment()
        self._task: dict[str, Any] | None = None
        self._calls: list[CallRecord] = []

    def reset(self, **row: Any) -> None:
        """Start an episode from a dataset row (its ``reference`` holds the task)."""
        self._task = task_of(row, NAME)
        self._load((self._task or {}).get("state") or empty_state())
        return None  # the instruction is already in the row's prompt

    def _load(self, state: Mapping[str, Any]) -> None:
        self._office._load(state)
        self._calls = []

    def _snapshot(self) -> dict[str, list[Any]]:
        return self._office._snapshot()

    # The same rule as the full workplace: replay the gold calls on a fresh instance of this
    # class and compare call logs and final states (it needs only _task, _load, _calls, _snapshot).
    _verdict = WorkplaceEnvironment._verdict

    @tool(writes=True)
    def email(self, to: str, body: str) -> str:
        """Email a saved contact.

        Args:
            to: Contact name.
            body: Text.
        """
        return _body("send_email")(self._office, to, body)

    @tool(writes=True)
    def contact(self, name: str, email: str) -> str:
        """Save a contact.

        Args:
            name: Contact name.
            email: Email address.
        """
        return _body("add_contact")(self._office, name, email)

    @tool(writes=True)
    def todo(self, title: str) -> str:
        """Add a todo.

        Args:
            title: What needs doing.
        """
        return _body("add_todo")(self._office, title)

    @tool(writes=True)
    def done(self, title: str) -> str:
        """Mark a todo done.

        Args:
            title: Title of the todo.
        """
        found = self._office._find("todos", "title", title)
        return _body("complete_todo")(self._office, found["id"])


# -- tasks: one call per step, requests of a few words --


@dataclass(frozen=True)
class Vocabulary:
    """The values requests are made of: contact names, message words, todo titles. Callers
    that hold some values out (the micro-suite's held-out split) pass their own pools."""

    names: tuple[str, ...] = NAMES
    words: tuple[str, ...] = WORDS
    todos: tuple[str, ...] = TODOS


DEFAULT_VOCABULARY = Vocabulary()
Maker = Callable[[random.Random, dict[str, Any], Vocabulary], Step]


def _email(rng: random.Random, state: dict[str, Any], vocab: Vocabulary) -> Step:
    name, word = rng.choice(state["contacts"])["name"], rng.choice(vocab.words)
    return f"Email {name}: {word}", [gold_call("email", to=name, body=word)]


def _contact(rng: random.Random, state: dict[str, Any], vocab: Vocabulary) -> Step:
    name = rng.choice([n for n in vocab.names if n not in {c["name"] for c in state["contacts"]}])
    address = f"{name}@x.io"
    return f"Save {name}: {address}", [gold_call("contact", name=name, email=address)]


def _todo(rng: random.Random, state: dict[str, Any], vocab: Vocabulary) -> Step:
    title = rng.choice([t for t in vocab.todos if t not in {x["title"] for x in state["todos"]}])
    return f"Todo: {title}", [gold_call("todo", title=title)]


def _done(rng: random.Random, state: dict[str, Any], vocab: Vocabulary) -> Step:
    title = rng.choice(state["todos"])["title"]
    return f"Done: {title}", [gold_call("done", title=title)]


# Steps read the initial state but never depend on each other, so any two combine.
STEPS: tuple[Maker, ...] = (_email, _contact, _todo, _done)


def make_lite_task(
    rng: random.Random, difficulty: int, vocab: Vocabulary = DEFAULT_VOCABULARY
) -> tuple[str, dict[str, Any]]:
    """One request of ``difficulty`` independent steps and its task (state, gold calls)."""
    state = initial_state(rng, vocab.names, vocab.words, vocab.todos)
    steps = [step(rng, state, vocab) for step in rng.sample(STEPS, difficulty)]
    return compose(state, steps, difficulty)


def generate_lite_tasks(
    n: int, seed: int, difficulty: int, vocab: Vocabulary = DEFAULT_VOCABULARY
) -> list[dict[str, Any]]:
    """``n`` canonical rows (domain ``agent``, verifier ``workplace``, environment ``workplace_lite``)."""
    if difficulty not in LEVELS:
        raise ValueError(f"{NAME} difficulty {difficulty}; valid: {LEVELS}")
    return task_rows(NAME, lambda rng, level: make_lite_task(rng, level, vocab), n, seed, difficulty)
