"""One request to the API server, raw JSON in and out, over the urllib3 pool of a
Connection's ApiClient: the headers (auth from the client's Configuration), the
timeouts, no retries, and the one error for a server that did not answer at all.
Every request the project sends outside the informer's streaming reads goes through
send(): lister.Connection.get_json, the PolicyReport writer, the deletion-cost
keeper and the Eviction writer; the informer builds its headers with
request_headers().

    reply = send(conn, "PATCH", path, patch, content_type=MERGE_PATCH)
    reply.status, reply.json(), reply.retry_after
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

import urllib3

from webhook.errors import TopospreadError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from kubernetes.client import ApiClient

__all__ = ["ClusterError", "Reply", "Unreachable", "request_headers", "send"]


class ClusterError(TopospreadError):
    """The cluster could not be read: unreachable, refused, or an unusable answer."""


class Unreachable(ClusterError):
    """Nothing answered: `<METHOD> <host><path>: <error>`; the urllib3 or OS error is
    the exception's __cause__."""


class Connection(Protocol):
    """What a request needs of lister.Connection."""

    api: ApiClient
    timeout: float

    @property
    def host(self) -> str: ...


@dataclass(frozen=True)
class Reply:
    """The API server's answer: status, raw body, headers."""

    status: int
    data: bytes
    headers: Mapping[str, str]

    def json(self) -> Any:
        """The body parsed as JSON; None when it is empty or not JSON."""
        try:
            return json.loads(self.data) if self.data else None
        except ValueError:
            return None

    @property
    def retry_after(self) -> float | None:
        """Retry-After in seconds (never below 0); None when absent or not a number."""
        raw = self.headers.get("Retry-After") if self.headers else None
        if raw is None:
            return None
        try:
            return max(0.0, float(raw))
        except ValueError:
            return None


def request_headers(api: ApiClient) -> dict[str, str]:
    """Accept JSON, our User-Agent, and the auth headers of the client's Configuration
    (its bearer token)."""
    headers = {"Accept": "application/json", "User-Agent": "topospread"}
    for setting in api.configuration.auth_settings().values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[setting["key"]] = setting["value"]
    return headers


def send(
    conn: Connection,
    method: str,
    path: str,
    body: Any = None,
    *,
    query: Mapping[str, Any] | None = None,
    content_type: str = "application/json",
) -> Reply:
    """`method` on conn.host + path (+ query), `body` sent as JSON with `content_type`
    when given; Unreachable when nothing answered (connect timeout at most 10 s, read
    timeout conn.timeout)."""
    api = conn.api
    headers = request_headers(api)
    data = None
    if body is not None:
        headers["Content-Type"] = content_type
        data = json.dumps(body).encode()
    url = conn.host + path + ("?" + urlencode(query) if query else "")
    try:
        response = api.rest_client.pool_manager.request(
            method,
            url,
            body=data,
            headers=headers,
            retries=False,
            timeout=urllib3.Timeout(connect=min(conn.timeout, 10.0), read=conn.timeout),
        )
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise Unreachable(f"{method} {conn.host}{path}: {exc}") from exc
    return Reply(int(response.status), response.data, response.headers)
