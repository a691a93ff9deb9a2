"""The refusals of the account rules, as values: the HTTP layer (:mod:`faregate.management`)
answers each in new-api's ``{success: false, message}`` envelope at its status."""

from __future__ import annotations


class Refused(Exception):
    """A request the account rules refuse: ``message`` for the user, the HTTP ``status``
    (new-api answers most refusals with 200), ``retry_after`` whole seconds when waiting helps."""

    def __init__(self, message: str, status: int = 200, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after


def too_many(what: str, wait: float) -> Refused:
    """The 429 of a throttle or rate limit: "too many ``what``", to retry after ``wait`` seconds."""
    return Refused(f"too many {what}; try again in {int(wait)} seconds", status=429, retry_after=int(wait))
