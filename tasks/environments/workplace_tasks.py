"""Procedural workplace tasks with graded difficulty, deterministic by seed, in short prompts.

Difficulty 1: one call ("Email bob: hi"). 2: two independent calls. 3: a lookup, then an
action on what it found ("Done: buy milk" -> list_todos, complete_todo). 4: a lookup-then-act
task followed by one more call. Every task carries its initial state and gold calls.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from tasks.environments.workplace import DAYS
from tasks.schema import make_row

NAMES = ("ann", "bob", "cal", "dan", "eve", "fay", "gus", "hal", "ivy", "jon", "kim", "lee")
WORDS = ("hi", "ok", "yes", "no", "thanks", "soon", "later", "done", "sure", "bye")
TODOS = ("buy milk", "call mom", "pay rent", "walk dog", "fix sink", "read book", "wash car")
TITLES = ("gym", "lunch", "demo", "call", "trip", "dentist", "review")
SUBJECTS = ("lunch", "report", "trip", "invoice", "party", "budget", "memo")
MAX_DIFFICULTY = 4

Call = dict[str, Any]
Step = tuple[str, list[Call]]  # prompt fragment and its gold calls


def gold_call(tool: str, /, **arguments: Any) -> Call:
    return {"name": tool, "arguments": arguments}


def initial_state(
    rng: random.Random,
    names: tuple[str, ...] = NAMES,
    words: tuple[str, ...] = WORDS,
    todos: tuple[str, ...] = TODOS,
) -> dict[str, list[dict[str, Any]]]:
    """A small random workplace: 3 contacts, 3 received emails, 2 events, 2 todos, drawn from
    the given pools (the defaults are the full workplace's)."""
    contact_names = rng.sample(names, 3)
    contacts = [
        {"name": n, "email": f"{n}@mail.com", "phone": f"555-{rng.randrange(1000, 9999)}"} for n in contact_names
    ]
    emails = [
        {
            "id": i + 1,
            "folder": "inbox",
            "from": rng.choice(contact_names),
            "to": "me",
            "subject": s,
            "body": rng.choice(words),
        }
        for i, s in enumerate(rng.sample(SUBJECTS, 3))
    ]
    events = [
        {"id": i + 1, "title": t, "day": rng.choice(DAYS), "time": f"{rng.randrange(8, 18)}:00"}
        for i, t in enumerate(rng.sample(TITLES, 2))
    ]
    open_todos = [{"id": i + 1, "title": t, "done": False} for i, t in enumerate(rng.sample(todos, 2))]
    return {"contacts": contacts, "emails": emails, "events": events, "todos": open_todos}


# -- one-call steps (difficulty 1) --


def _email(rng: random.Random, state: dict[str, Any]) -> Step:
    name, word = rng.choice(state["contacts"])["name"], rng.choice(WORDS)
    return f"Email {name}: {word}", [gold_call("send_email", to=name, body=word)]


def _todo(rng: random.Random, state: dict[str, Any]) -> Step:
    title = rng.choice([t for t in TODOS if t not in {x["title"] for x in state["todos"]}])
    return f"Todo: {title}", [gold_call("add_todo", title=title)]


def _event(rng: random.Random, state: dict[str, Any]) -> Step:
    title, day = rng.choice(TITLES), rng.choice(DAYS)
    return f"Add {title} on {day}", [gold_call("add_event", title=title, day=day)]


# -- lookup-then-act steps (difficulty 3) --


def _complete(rng: random.Random, state: dict[str, Any]) -> Step:
    todo = rng.choice(state["todos"])
    return f"Done: {todo['title']}", [
        gold_call("list_todos"),
        gold_call("complete_todo", todo_id=todo["id"]),
    ]


def _delete_mail(rng: random.Random, state: dict[str, Any]) -> Step:
    email = rng.choice(state["emails"])
    subject = email["subject"]
    return f"Delete {subject} mail", [
        gold_call("search_emails", query=subject),
        gold_call("delete_email", email_id=email["id"]),
    ]


def _reply(rng: random.Random, state: dict[str, Any]) -> Step:
    email, word = rng.choice(state["emails"]), rng.choice(WORDS)
    calls = [
        gold_call("search_emails", query=email["subject"]),
        gold_call("reply_email", email_id=email["id"], body=word),
    ]
    return f"Reply to {email['subject']} mail: {word}", calls


def _cancel(rng: random.Random, state: dict[str, Any]) -> Step:
    event = rng.choice(state["events"])
    calls = [
        gold_call("list_events", day=event["day"]),
        gold_call("cancel_event", event_id=event["id"]),
    ]
    return f"Cancel {event['title']} on {event['day']}", calls


def _move(rng: random.Random, state: dict[str, Any]) -> Step:
    event = rng.choice(state["events"])
    day = rng.choice([d for d in DAYS if d != event["day"]])
    calls = [gold_call("list_events"), gold_call("move_event", event_id=event["id"], day=day)]
    return f"Move {event['title']} to {day}", calls


SIMPLE: tuple[Callable[[random.Random, dict[str, Any]], Step], ...] = (_email, _todo, _event)
LOOKUP: tuple[Callable[[random.Random, dict[str, Any]], Step], ...] = (
    _complete,
    _delete_mail,
    _reply,
    _cancel,
    _move,
)


def make_task(rng: random.Random, difficulty: int) -> tuple[str, dict[str, Any]]:
    """One prompt and its task (initial state, gold calls, difficulty)."""
    state = initial_state(rng)
    if difficulty == 1:
        steps = [rng.choice(SIMPLE)(rng, state)]
    elif difficulty == 2:
        first, second = rng.sample(SIMPLE, 2)
        steps = [first(rng, state), second(rng, state)]
    elif difficulty == 3:
        steps = [rng.choice(LOOKUP)(rng, state)]
    else:
        steps = [rng.choice(LOOKUP)(rng, state), rng.choice(SIMPLE)(rng, state)]
    return compose(state, steps, difficulty)


def compose(state: dict[str, Any], steps: list[Step], difficulty: int) -> tuple[str, dict[str, Any]]:
    """The prompt (step requests joined) and the task (initial state, gold calls in order)."""
    prompt = ". ".join(text for text, _ in steps)
    calls = [call for _, step_calls in steps for call in step_calls]
    return prompt, {"state": state, "calls": calls, "difficulty": difficulty}


TaskMaker = Callable[[random.Random, int], tuple[str, dict[str, Any]]]


def task_rows(environment: str, make: TaskMaker, n: int, seed: int, difficulty: int) -> list[dict]:
    """``n`` canonical rows (domain ``agent``, verifier ``workplace``) of ``environment``,
    each from ``make(rng, difficulty)`` with one rng seeded by environment, seed and level."""
    rng = random.Random(f"{environment}-{seed}-{difficulty}")
    rows = []
    for index in range(n):
        prompt, task = make(rng, difficulty)
        rows.append(
            make_row(
                prompt=[{"role": "user", "content": prompt}],
                domain="agent",
                verifier="workplace",
                reference={"environment": environment, "task": task},
                source=f"{environment}/d{difficulty}",
                id=f"{environment}-d{difficulty}-s{seed}-{index}",
                environment=environment,
            )
        )
    return rows


def generate_workplace_tasks(n: int, seed: int, difficulty: int) -> list[dict[str, Any]]:
    """``n`` canonical rows (domain ``agent``, verifier ``workplace``, environment ``workplace``)."""
    if not 1 <= difficulty <= MAX_DIFFICULTY:
        raise ValueError(f"workplace difficulty {difficulty}; valid: 1..{MAX_DIFFICULTY}")
    return task_rows("workplace", make_task, n, seed, difficulty)
