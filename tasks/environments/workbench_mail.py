"""Workbench tools for people and time: company directory, email and calendar (12 tools).

Names, parameters, validation rules and observations follow NeMo Gym's workplace assistant
schemas; ``WorkbenchEnvironment`` binds these functions as its methods, so ``self`` is the
environment (``_state`` tables, ``_directory`` addresses).
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

from tasks.environments.tooling import ToolError, tool
from tasks.environments.workbench_data import CURRENT_TIME, next_id

PAGE_SIZE = 5
EMAIL_FIELDS = ("email_id", "inbox/outbox", "sender/recipient", "subject", "sent_datetime", "body")
EVENT_FIELDS = ("event_id", "event_name", "participant_email", "event_start", "duration")


def timestamp(value: str, what: str, fmt: str = "YYYY-MM-DD HH:MM:SS") -> datetime:
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        raise ToolError(f"Invalid {what} format. Expected {fmt}.") from None


def page_of(items: list[dict[str, Any]], key: str, page: int, page_size: int) -> str:
    """NeMo Gym's pagination: the page is clamped into range, totals are reported."""
    if page_size < 1:
        raise ToolError("page_size must be at least 1.")
    total = len(items)
    pages = (total + page_size - 1) // page_size
    page = max(1, min(page, pages)) if pages else 1
    start = (page - 1) * page_size
    pagination = {f"total_{key}": total, "page": page, "page_size": page_size, "total_pages": pages}
    return json.dumps({key: items[start : start + page_size], "pagination": pagination})


def _valid_address(address: str) -> str:
    if "@" not in address or "." not in address:
        raise ToolError("Invalid recipient email address.")
    return address.lower()


def _find(self, table: str, column: str, record_id: str, what: str) -> dict[str, Any]:
    for row in self._state[table]:
        if row[column] == record_id:
            return row
    raise ToolError(f"{what} not found.")


def _eight_digits(event_id: str) -> None:
    if not (len(event_id) == 8 and event_id.isdigit()):
        raise ToolError("Invalid event ID format. Expected 8-digit ID.")


@tool(writes=False)
def company_directory_find_email_address(self, name: str = "") -> str:
    """Finds all email addresses containing the given name (case-insensitive search).

    Args:
        name: Name or partial name to search for in email addresses
    """
    if not name:
        raise ToolError("Name not provided.")
    return json.dumps([a for a in self._directory if name.lower() in a.lower()])


@tool(writes=False)
def email_get_email_information_by_id(self, email_id: str, field: str) -> str:
    """Retrieves specific details of an email by its ID.

    Args:
        email_id: Unique ID of the email
        field: Specific field to return. Available fields: 'email_id', 'inbox/outbox', 'sender/recipient', 'subject',
            'sent_datetime', 'body'
    """
    email = _find(self, "emails", "email_id", email_id, "Email")
    if field not in email:
        raise ToolError(f"Field '{field}' not found. Available fields: {', '.join(EMAIL_FIELDS)}")
    return json.dumps({field: email[field]})


@tool(writes=False)
def email_search_emails(
    self,
    query: str = "",
    date_min: str = "",
    date_max: str = "",
    page: int = 1,
    page_size: int = PAGE_SIZE,
) -> str:
    """Searches for emails matching the given query across subject, body, or sender fields. \
The function matches an email if all words in the query appear in any of these fields.

    Args:
        query: Search query, matching terms in subject, body, or sender/recipient fields
        date_min: Lower date limit for the email's sent date (inclusive). Format: YYYY-MM-DD
        date_max: Upper date limit for the email's sent date (inclusive). Format: YYYY-MM-DD
        page: Page number of results to return
        page_size: Number of emails per page
    """
    low = timestamp(date_min, "date_min", "YYYY-MM-DD").date() if date_min else date.min
    high = timestamp(date_max, "date_max", "YYYY-MM-DD").date() if date_max else date.max
    words = query.lower().split()
    found = []
    for email in self._state["emails"]:
        text = f"{email['subject']} {email['body']} {email['sender/recipient']}".lower()
        sent = datetime.fromisoformat(str(email["sent_datetime"])).date()
        if all(w in text for w in words) and low <= sent <= high:
            found.append(email)
    found.sort(key=lambda e: str(e["sent_datetime"]), reverse=True)  # newest first
    if not found:
        return "No emails found."
    return page_of(found, "emails", page, page_size)


@tool(writes=True)
def email_send_email(self, recipient: str, subject: str, body: str) -> str:
    """Sends an email to the specified recipient.

    Args:
        recipient: Email address of the recipient
        subject: Subject line of the email
        body: Body content of the email
    """
    if not recipient or not subject or not body:
        raise ToolError("Recipient, subject, or body not provided.")
    emails = self._state["emails"]
    emails.append(
        {
            "email_id": next_id(emails, "email_id", width=0),
            "inbox/outbox": "outbox",
            "sender/recipient": _valid_address(recipient),
            "subject": subject,
            "sent_datetime": CURRENT_TIME,
            "body": body,
        }
    )
    return "Email sent successfully."


@tool(writes=True)
def email_delete_email(self, email_id: str) -> str:
    """Deletes an email by its ID.

    Args:
        email_id: Unique ID of the email to be deleted
    """
    self._state["emails"].remove(_find(self, "emails", "email_id", email_id, "Email"))
    return "Email deleted successfully."


@tool(writes=True)
def email_forward_email(self, email_id: str, recipient: str) -> str:
    """Forwards an email to the specified recipient.

    Args:
        email_id: Unique ID of the email to be forwarded
        recipient: Email address of the recipient
    """
    _valid_address(recipient)
    email = _find(self, "emails", "email_id", email_id, "Email")
    email_send_email.__wrapped__(self, recipient, f"FW: {email['subject']}", email["body"])
    return "Email forwarded successfully."


@tool(writes=True)
def email_reply_email(self, email_id: str, body: str) -> str:
    """Replies to an email by its ID.

    Args:
        email_id: Unique ID of the email to be replied
        body: Body content of the email
    """
    if not body:
        raise ToolError("Email ID or body not provided.")
    email = _find(self, "emails", "email_id", email_id, "Email")
    # The other party of the original, whichever way it went
    email_send_email.__wrapped__(self, email["sender/recipient"], f"RE: {email['subject']}", body)
    return "Email replied successfully."


@tool(writes=False)
def calendar_get_event_information_by_id(self, event_id: str, field: str) -> str:
    """Returns the event for a given ID.

    Args:
        event_id: 8-digit ID of the event
        field: Field to return. Available fields are: 'event_id', 'event_name', 'participant_email', 'event_start',
            'duration'
    """
    _eight_digits(event_id)
    if field not in EVENT_FIELDS:
        raise ToolError(f"Invalid field. Available fields are: {', '.join(EVENT_FIELDS)}")
    return json.dumps({field: _find(self, "calendar", "event_id", event_id, "Event")[field]})


@tool(writes=False)
def calendar_search_events(
    self,
    query: str = "",
    time_min: str = "",
    time_max: str = "",
    page: int = 1,
    page_size: int = PAGE_SIZE,
) -> str:
    """Returns the events for a given query with pagination support.

    Args:
        query: Query to search for. Terms will be matched in the event_name and participant_email fields
        time_min: Lower bound (inclusive) for an event's end time to filter by. Format: YYYY-MM-DD HH:MM:SS
        time_max: Upper bound (inclusive) for an event's start time to filter by. Format: YYYY-MM-DD HH:MM:SS
        page: Page number of results to return
        page_size: Number of events per page
    """
    low = timestamp(time_min, "time_min") if time_min else datetime.min
    high = timestamp(time_max, "time_max") if time_max else datetime.max
    needle = query.lower()
    found = [
        e
        for e in self._state["calendar"]
        if (needle in str(e["event_name"]).lower() or needle in str(e["participant_email"]).lower())
        and low <= datetime.fromisoformat(str(e["event_start"])) <= high
    ]
    if not found:
        return "No events found."
    found.sort(key=lambda e: datetime.fromisoformat(str(e["event_start"])), reverse=True)
    return page_of(found, "events", page, page_size)


def _checked_event_value(field: str, value: str) -> str:
    if field == "event_start":
        timestamp(value, "event_start")
    elif field == "duration":
        try:
            minutes = int(value)
        except ValueError:
            raise ToolError("Invalid duration format. Expected a number of minutes.") from None
        if minutes <= 0:
            raise ToolError("Duration must be a positive number of minutes.")
    elif field == "participant_email":
        return value.lower()
    return value


@tool(writes=True)
def calendar_create_event(self, event_name: str, participant_email: str, event_start: str, duration: str) -> str:
    """Creates a new event.

    Args:
        event_name: Name of the event
        participant_email: Email of the participant
        event_start: Start time of the event. Format: YYYY-MM-DD HH:MM:SS
        duration: Duration of the event in minutes
    """
    if not (event_name and participant_email and event_start and duration):
        raise ToolError("Event name, participant email, event start or duration not provided.")
    events = self._state["calendar"]
    event_id = next_id(events, "event_id")
    events.append(
        {
            "event_id": event_id,
            "event_name": event_name,
            "participant_email": participant_email.lower(),
            "event_start": _checked_event_value("event_start", event_start),
            "duration": _checked_event_value("duration", duration),
        }
    )
    return event_id


@tool(writes=True)
def calendar_delete_event(self, event_id: str) -> str:
    """Deletes an event.

    Args:
        event_id: 8-digit ID of the event
    """
    _eight_digits(event_id)
    self._state["calendar"].remove(_find(self, "calendar", "event_id", event_id, "Event"))
    return "Event deleted successfully."


@tool(writes=True)
def calendar_update_event(self, event_id: str, field: str, new_value: str) -> str:
    """Updates an event.

    Args:
        event_id: 8-digit ID of the event
        field: Field to update. Available fields are: 'event_name', 'participant_email', 'event_start', 'duration'
        new_value: New value for the field
    """
    if not (event_id and field and new_value):
        raise ToolError("Event ID, field, or new value not provided.")
    _eight_digits(event_id)
    if field not in EVENT_FIELDS[1:]:
        raise ToolError(f"Invalid field. Available fields are: {', '.join(EVENT_FIELDS[1:])}")
    value = _checked_event_value(field, new_value)
    _find(self, "calendar", "event_id", event_id, "Event")[field] = value
    return "Event updated successfully."


MAIL_TOOLS = (
    company_directory_find_email_address,
    email_get_email_information_by_id,
    email_search_emails,
    email_send_email,
    email_delete_email,
    email_forward_email,
    email_reply_email,
    calendar_get_event_information_by_id,
    calendar_search_events,
    calendar_create_event,
    calendar_delete_event,
    calendar_update_event,
)
