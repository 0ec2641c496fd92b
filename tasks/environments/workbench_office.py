"""Workbench tools for the business: project management and CRM (9 tools; OFFICE_TOOLS adds analytics).

Names, parameters, validation rules and observations follow NeMo Gym's workplace assistant
schemas; ``WorkbenchEnvironment`` binds these functions as its methods (``self._state``).
Date filters compare text, as NeMo Gym's do, so ISO dates order correctly.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tasks.environments.tooling import ToolError, tool
from tasks.environments.workbench_analytics import ANALYTICS_TOOLS, choose
from tasks.environments.workbench_data import next_id
from tasks.environments.workbench_mail import PAGE_SIZE, page_of

LISTS = ("Backlog", "In Progress", "In Review", "Completed")
BOARDS = ("Back end", "Front end", "Design")
STATUSES = ("Qualified", "Won", "Lost", "Lead", "Proposal")
PRODUCTS = ("Software", "Hardware", "Services", "Consulting", "Training")
TASK_COLUMNS = ("task_id", "task_name", "assigned_to_email", "list_name", "due_date", "board")
CRM_COLUMNS = (
    "customer_id",
    "assigned_to_email",
    "customer_name",
    "customer_email",
    "customer_phone",
    "last_contact_date",
    "product_interest",
    "status",
    "follow_up_by",
    "notes",
)
_EMAIL = re.compile(r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$")


def _task(self, task_id: str) -> dict[str, Any]:
    for task in self._state["project_tasks"]:
        if task["task_id"] == task_id:
            return task
    raise ToolError("Task not found.")


def _team(self) -> set[str]:
    return {str(t["assigned_to_email"]).lower() for t in self._state["project_tasks"]}


def _assignee(self, email: str) -> str:
    if email.lower() not in _team(self):
        raise ToolError("Assignee email not valid. Please choose from the list of team members.")
    return email.lower()


@tool(writes=False)
def project_management_get_task_information_by_id(self, task_id: str, field: str) -> str:
    """Returns the task information for a given ID.

    Args:
        task_id: 8-digit ID of the task
        field: Field to return. Available fields are: 'task_id', 'task_name', 'assigned_to_email', 'list_name',
            'due_date', 'board'
    """
    task = _task(self, task_id)
    if field not in task:
        raise ToolError("Field not found.")
    return json.dumps({field: task[field]})


@tool(writes=False)
def project_management_search_tasks(
    self,
    task_name: str = "",
    assigned_to_email: str = "",
    list_name: str = "",
    due_date: str = "",
    board: str = "",
) -> str:
    """Searches for tasks based on the given parameters.

    Args:
        task_name: Name of the task
        assigned_to_email: Email address of the person assigned to the task
        list_name: Name of the list the task belongs to
        due_date: Due date of the task in YYYY-MM-DD format
        board: Name of the board the task belongs to
    """
    if not any((task_name, assigned_to_email, list_name, due_date, board)):
        raise ToolError("No search parameters provided.")
    if assigned_to_email and not _EMAIL.match(assigned_to_email):
        raise ToolError("Invalid email format for assigned_to_email.")
    wanted = {"task_name": task_name, "list_name": list_name, "due_date": due_date, "board": board}
    found = [
        t
        for t in self._state["project_tasks"]
        if all(v.lower() in str(t[k]).lower() for k, v in wanted.items() if v)
        and (not assigned_to_email or str(t["assigned_to_email"]).lower() == assigned_to_email.lower())
    ]
    return json.dumps(found)


@tool(writes=True)
def project_management_create_task(
    self, task_name: str, assigned_to_email: str, list_name: str, due_date: str, board: str
) -> str:
    """Creates a new task.

    Args:
        task_name: Name of the task
        assigned_to_email: Email address of the person assigned to the task
        list_name: Name of the list the task belongs to. One of: 'Backlog', 'In Progress', 'In Review', 'Completed'
        due_date: Due date of the task in YYYY-MM-DD format
        board: Name of the board the task belongs to. One of: 'Back end', 'Front end', 'Design'
    """
    if not all((task_name, assigned_to_email, list_name, due_date, board)):
        raise ToolError("Missing task details.")
    values = (
        next_id(self._state["project_tasks"], "task_id"),
        task_name,
        _assignee(self, assigned_to_email),
        choose(list_name, LISTS, "List"),
        due_date,
        choose(board, BOARDS, "Board"),
    )
    self._state["project_tasks"].append(dict(zip(TASK_COLUMNS, values, strict=True)))
    return values[0]


@tool(writes=True)
def project_management_delete_task(self, task_id: str) -> str:
    """Deletes a task by ID.

    Args:
        task_id: 8-digit ID of the task
    """
    self._state["project_tasks"].remove(_task(self, task_id))
    return "Task deleted successfully."


@tool(writes=True)
def project_management_update_task(self, task_id: str, field: str, new_value: str) -> str:
    """Updates a task by ID.

    Args:
        task_id: 8-digit ID of the task
        field: Field to update. Available fields are: 'task_name', 'assigned_to_email', 'list_name', 'due_date',
            'board'
        new_value: New value for the field
    """
    if not (task_id and field and new_value):
        raise ToolError("Task ID, field, or new value not provided.")
    checks = {
        "assigned_to_email": lambda v: _assignee(self, v),
        "board": lambda v: choose(v, BOARDS, "Board"),
        "list_name": lambda v: choose(v, LISTS, "List"),
    }
    value = checks.get(field, lambda v: v)(new_value)
    task = _task(self, task_id)
    if field not in TASK_COLUMNS:
        raise ToolError("Field not valid.")
    task[field] = value
    return "Task updated successfully."


@tool(writes=False)
def customer_relationship_manager_search_customers(
    self,
    customer_name: str = "",
    customer_email: str = "",
    product_interest: str = "",
    status: str = "",
    assigned_to_email: str = "",
    last_contact_date_min: str = "",
    last_contact_date_max: str = "",
    follow_up_by_min: str = "",
    follow_up_by_max: str = "",
    page: int = 1,
    page_size: int = PAGE_SIZE,
) -> str:
    """Searches for customers based on the given parameters with pagination support.

    Args:
        customer_name: Name of the customer
        customer_email: Email address of the customer
        product_interest: Product interest of the customer
        status: Current status of the customer
        assigned_to_email: Email address of the person assigned to the customer
        last_contact_date_min: Minimum last contact date. Format: YYYY-MM-DD
        last_contact_date_max: Maximum last contact date. Format: YYYY-MM-DD
        follow_up_by_min: Minimum follow up date. Format: YYYY-MM-DD
        follow_up_by_max: Maximum follow up date. Format: YYYY-MM-DD
        page: Page number of results to return
        page_size: Number of customers per page
    """
    contains = {
        "customer_name": customer_name,
        "customer_email": customer_email,
        "product_interest": product_interest,
        "status": status,
        "assigned_to_email": assigned_to_email,
    }
    bounds = {  # column -> (lowest, highest), compared as text
        "last_contact_date": (last_contact_date_min, last_contact_date_max),
        "follow_up_by": (follow_up_by_min, follow_up_by_max),
    }
    if not any(contains.values()) and not any(v for pair in bounds.values() for v in pair):
        raise ToolError("No search parameters provided. Please provide at least one parameter.")

    def keep(c: dict[str, Any]) -> bool:
        for column, value in contains.items():
            if value and (c[column] is None or value.lower() not in c[column].lower()):
                return False
        for column, (low, high) in bounds.items():
            if (low or high) and c[column] is None:
                return False
            if (low and c[column] < low) or (high and c[column] > high):
                return False
        return True

    found = [c for c in self._state["crm"] if keep(c)]
    if not found:
        return "No customers found."
    return page_of(found, "customers", page, page_size)


def _customer(self, customer_id: str) -> dict[str, Any]:
    for customer in self._state["crm"]:
        if customer["customer_id"] == customer_id:
            return customer
    raise ToolError("Customer not found.")


@tool(writes=True)
def customer_relationship_manager_update_customer(self, customer_id: str, field: str, new_value: str) -> str:
    """Updates a customer record by ID.

    Args:
        customer_id: ID of the customer
        field: Field to update. Available fields are: 'customer_name', 'assigned_to_email', 'customer_email',
            'customer_phone', 'last_contact_date', 'product_interest', 'status', 'notes', 'follow_up_by'
        new_value: New value for the field
    """
    if not (customer_id and field and new_value):
        raise ToolError("Customer ID, field, or new value not provided.")
    if field == "status":
        choose(new_value, STATUSES, "Status")
    if field == "product_interest":
        choose(new_value, PRODUCTS, "Product interest")
    value = new_value.lower() if field in ("customer_email", "assigned_to_email") else new_value
    customer = _customer(self, customer_id)
    if field not in CRM_COLUMNS:
        raise ToolError(f"Field not valid. Please choose from: {', '.join(CRM_COLUMNS[1:])}")
    customer[field] = value
    return "Customer updated successfully."


@tool(writes=True)
def customer_relationship_manager_add_customer(
    self,
    customer_name: str,
    assigned_to_email: str,
    status: str,
    customer_email: str = "",
    customer_phone: str = "",
    last_contact_date: str = "",
    product_interest: str = "",
    notes: str = "",
    follow_up_by: str = "",
) -> str:
    """Adds a new customer record.

    Args:
        customer_name: Name of the customer
        assigned_to_email: Email address of the person assigned to the customer
        status: Current status of the customer. One of: 'Qualified', 'Won', 'Lost', 'Lead', 'Proposal'
        customer_email: Email address of the customer
        customer_phone: Phone number of the customer
        last_contact_date: The last date the customer was contacted. Format: YYYY-MM-DD
        product_interest: Product interest of the customer. One of: 'Software', 'Hardware', 'Services', 'Consulting',
            'Training'
        notes: Notes about the customer
        follow_up_by: Date for the next follow up. Format: YYYY-MM-DD
    """
    if not (customer_name and assigned_to_email and status):
        raise ToolError("Please provide all required fields: customer_name, assigned_to_email, status.")
    # Omitted optional fields are missing values, as in the tables read from CSV
    customer_id = next_id(self._state["crm"], "customer_id")
    given = {
        "customer_id": customer_id,
        "assigned_to_email": assigned_to_email.lower(),
        "customer_name": customer_name,
        "customer_email": customer_email.lower() or None,
        "customer_phone": customer_phone or None,
        "last_contact_date": last_contact_date or None,
        "product_interest": product_interest or None,
        "status": status,
        "follow_up_by": follow_up_by or None,
        "notes": notes,
    }
    self._state["crm"].append(given)
    return customer_id


@tool(writes=True)
def customer_relationship_manager_delete_customer(self, customer_id: str) -> str:
    """Deletes a customer record by ID.

    Args:
        customer_id: ID of the customer
    """
    self._state["crm"].remove(_customer(self, customer_id))
    return "Customer deleted successfully."


OFFICE_TOOLS = ANALYTICS_TOOLS + (
    project_management_get_task_information_by_id,
    project_management_search_tasks,
    project_management_create_task,
    project_management_delete_task,
    project_management_update_task,
    customer_relationship_manager_search_customers,
    customer_relationship_manager_update_customer,
    customer_relationship_manager_add_customer,
    customer_relationship_manager_delete_customer,
)
