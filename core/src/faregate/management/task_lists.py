"""new-api's lists of asynchronous tasks (``/api/task/``) and Midjourney jobs (``/api/mj/``), for a
gateway that runs neither: each list is an empty page in new-api's shape. new-api's console opens
those pages from its sidebar or a bookmarked address, and a 404 there was an error toast and an
uncaught error; an empty list is the truth (there are no tasks), in the paging the page reads."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response
from quart_schema import document_response

from faregate.db import models as m
from faregate.management.common import ok, paging, require
from faregate.management.openapi import Ok, Page
from faregate.principals import Principal

blueprint = Blueprint("task_lists", __name__)


def _empty() -> Response:
    page, size = paging()
    return ok({"page": page, "page_size": size, "total": 0, "items": []})


@blueprint.get("/api/task/")
@require(m.ROLE_ADMIN)
@document_response(Ok[Page[dict[str, Any]]])
async def all_tasks(me: Principal) -> Response:
    """Every user's asynchronous tasks (Suno, video …): none, Faregate runs no task relay."""
    return _empty()


@blueprint.get("/api/task/self")
@require(m.ROLE_USER)
@document_response(Ok[Page[dict[str, Any]]])
async def own_tasks(me: Principal) -> Response:
    """The caller's asynchronous tasks: none."""
    return _empty()


@blueprint.get("/api/mj/")
@require(m.ROLE_ADMIN)
@document_response(Ok[Page[dict[str, Any]]])
async def all_jobs(me: Principal) -> Response:
    """Every user's Midjourney jobs: none, Faregate has no Midjourney relay."""
    return _empty()


@blueprint.get("/api/mj/self")
@require(m.ROLE_USER)
@document_response(Ok[Page[dict[str, Any]]])
async def own_jobs(me: Principal) -> Response:
    """The caller's Midjourney jobs: none."""
    return _empty()
