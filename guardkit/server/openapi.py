"""The OpenAPI 3.1 document of the server, written as data (bodies come from ``bodies.py``)."""

from __future__ import annotations

import functools

from guardkit._version import __version__
from guardkit.decisions import JSONObject, JSONValue
from guardkit.server.bodies import BODIES
from guardkit.server.wire import Field

__all__ = ["openapi_document"]

_KINDS: dict[str, JSONObject] = {"any": {}, "null": {"type": "null"}}


def _field_schema(spec: Field) -> JSONObject:
    kinds = [_KINDS.get(kind, {"type": kind}) for kind in spec.kinds]
    return kinds[0] if len(kinds) == 1 else {"anyOf": [*kinds]}


def _body_schema(name: str) -> JSONObject:
    fields = BODIES[name]
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {key: _field_schema(spec) for key, spec in fields.items()},
        "required": [key for key, spec in fields.items() if spec.required],
    }


def _ref(name: str) -> JSONObject:
    return {"$ref": f"#/components/schemas/{name}"}


_OBJ: JSONObject = {"type": "object"}
_SCHEMAS: JSONObject = {
    "Error": {
        "type": "object",
        "required": ["error", "code"],
        "properties": {"error": {"type": "string"}, "code": {"type": "string"}},
    },
    "Head": {
        "type": "object",
        "properties": {"seq": {"type": "integer"}, "hash": {"type": "string"}},
    },
    "AgentStatus": {
        "type": "object",
        "required": ["agent_id", "alive", "budget", "spent", "remaining", "scars", "head"],
        "properties": {
            "agent_id": {"type": "string"},
            "alive": {"type": "boolean"},
            "termination_reason": {"type": ["string", "null"]},
            "budget": {"type": "integer"},
            "spent": {"type": "integer"},
            "remaining": {"type": "integer"},
            "scar_score": {"type": "integer"},
            "scar_limit": {"type": "integer"},
            "scars": {"type": "array", "items": _OBJ},
            "actions_allowed": {"type": "integer"},
            "actions_denied": {"type": "integer"},
            "actions_pending": {"type": "integer"},
            "head": _ref("Head"),
            "public_key": {"type": ["string", "null"]},
        },
    },
    "Decision": {
        "type": "object",
        "required": ["decision", "action_id"],
        "properties": {
            "decision": {"enum": ["allowed", "denied", "pending_approval"]},
            "action_id": {"type": "string"},
            "cost": {"type": "integer"},
            "remaining": {"type": "integer"},
            "reason": _OBJ,
        },
    },
    "Action": {
        "type": "object",
        "required": ["action_id", "tool", "cost", "status", "outcome"],
        "properties": {
            "action_id": {"type": "string"},
            "tool": {"type": "string"},
            "input": {},
            "cost": {"type": "integer"},
            "status": {"enum": ["requested", "pending_approval", "allowed", "denied", "completed"]},
            "outcome": {"enum": [None, "success", "failure", "harmful"]},
            "approval_reason": _OBJ,
        },
    },
    "Created": {
        "type": "object",
        "required": ["agent", "token"],
        "properties": {"agent": _ref("AgentStatus"), "token": {"type": "string"}},
    },
}

_ERRORS = {
    "400": "bad request (invalid JSON, unknown or mistyped field, bad value)",
    "401": "no token, or an unknown one (code unauthorized)",
    "403": "the token's role may not do this, or it is another agent's (code forbidden)",
    "404": "unknown agent (not_found) or action (unknown_action)",
    "409": "agent_exists, invalid_state, already_terminated, already_consumed, ...",
    "413": "request body too large (payload_too_large)",
    "503": "the agent's ledger failed verification (quarantined)",
}

_AGENT_ID: JSONObject = {
    "name": "agent_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
}
_ACTION_ID: JSONObject = {
    "name": "action_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
}

#: (method, path, roles, summary, body schema or None, response schema, extra parameters)
_OPERATIONS: list[tuple[str, str, str, str, str | None, JSONObject, list[JSONValue]]] = [
    (
        "get",
        "/healthz",
        "none",
        "Liveness",
        None,
        {"type": "object", "properties": {"ok": {"const": True}}},
        [],
    ),
    ("get", "/v1/public-key", "none", "The ledger's Ed25519 public key", None, _OBJ, []),
    (
        "post",
        "/v1/agents",
        "admin",
        "Create an agent with a fixed policy",
        "CreateAgent",
        _ref("Created"),
        [],
    ),
    ("get", "/v1/agents", "admin", "All agents, sorted by id", None, _OBJ, []),
    (
        "get",
        "/v1/notifications",
        "admin",
        "guardkit: each notification sink's deliveries (pending, attempts, failures, last error)",
        None,
        {"type": "object", "required": ["sinks"]},
        [],
    ),
    (
        "get",
        "/v1/pending",
        "admin",
        "guardkit: every agent's pending approvals, newest first, with why each waits",
        None,
        {"type": "object", "required": ["pending"]},
        [
            {
                "name": name,
                "in": "query",
                "required": False,
                "schema": {"type": "array", "items": {"type": "string"}},
                "style": "form",
                "explode": True,
            }
            for name in ("agent", "tool")
        ],
    ),
    ("get", "/v1/agents/{agent_id}", "agent, admin", "Agent status", None, _ref("AgentStatus"), []),
    ("get", "/v1/agents/{agent_id}/token", "admin", "Re-issue the agent's token", None, _OBJ, []),
    (
        "get",
        "/v1/agents/{agent_id}/policy",
        "agent, admin",
        "guardkit: the agent's policy (its check sections apply to HTTP agents too)",
        None,
        {"type": "object", "required": ["agent_id", "policy"]},
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/spawn",
        "agent (the parent), admin",
        "guardkit: create a sub-agent funded from this agent's budget",
        "Spawn",
        _ref("Created"),
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/actions",
        "agent, admin",
        "Request an action; a denial is a 200 decision",
        "Request",
        _ref("Decision"),
        [
            {
                "name": "Idempotency-Key",
                "in": "header",
                "required": False,
                "schema": {"type": "string", "pattern": "^[\\x21-\\x7e]{1,255}$"},
            }
        ],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/denials",
        "agent, admin",
        "guardkit: record a denial a local check decided (path, egress...)",
        "Denial",
        _ref("Decision"),
        [],
    ),
    ("get", "/v1/agents/{agent_id}/actions/pending", "admin", "The approval queue", None, _OBJ, []),
    (
        "get",
        "/v1/agents/{agent_id}/actions/{action_id}",
        "agent, backend, admin",
        "One action; ?wait=SECONDS long-polls while it is pending_approval",
        None,
        _ref("Action"),
        [
            {
                "name": "wait",
                "in": "query",
                "required": False,
                "schema": {"type": "number", "minimum": 0, "maximum": 60},
            }
        ],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/actions/{action_id}/outcome",
        "agent, admin (harmful: admin only)",
        "Report the action's outcome",
        "Outcome",
        _ref("AgentStatus"),
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/actions/{action_id}/withdraw",
        "agent, admin",
        "guardkit: the agent stops waiting; a pending action is denied (approval_timeout)",
        "Withdraw",
        _ref("Action"),
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/actions/{action_id}/approve",
        "admin",
        "Approve a pending action (checks run again)",
        "Approve",
        _ref("Decision"),
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/actions/{action_id}/reject",
        "admin",
        "Reject a pending action, optionally with a scar",
        "Reject",
        _ref("Decision"),
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/actions/{action_id}/consume",
        "backend, admin",
        "guardkit: verify an allowed action's tool and input and use it once",
        "Consume",
        _ref("Action"),
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/actions/{action_id}/link",
        "none (a signed approval link in the body)",
        "guardkit: the action a signed approval link may decide",
        "Link",
        _OBJ,
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/actions/{action_id}/link/approve",
        "none (a signed approval link in the body)",
        "guardkit: approve with a signed approval link (its action and input only, once)",
        "LinkApprove",
        _ref("Decision"),
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/actions/{action_id}/link/reject",
        "none (a signed approval link in the body)",
        "guardkit: reject with a signed approval link (its action and input only, once)",
        "LinkReject",
        _ref("Decision"),
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/scars",
        "admin",
        "Scar the agent",
        "Scar",
        _ref("AgentStatus"),
        [],
    ),
    (
        "post",
        "/v1/agents/{agent_id}/terminate",
        "admin",
        "Terminate the agent",
        "Terminate",
        _ref("AgentStatus"),
        [],
    ),
    (
        "get",
        "/v1/agents/{agent_id}/log",
        "admin",
        "Ledger records with seq > after",
        None,
        _OBJ,
        [
            {"name": "after", "in": "query", "required": False, "schema": {"type": "integer"}},
            {
                "name": "limit",
                "in": "query",
                "required": False,
                "schema": {"type": "integer", "minimum": 1, "maximum": 5000},
            },
        ],
    ),
    ("get", "/v1/agents/{agent_id}/verify", "admin", "Verify the agent's chain", None, _OBJ, []),
    (
        "get",
        "/v1/agents/{agent_id}/export",
        "admin",
        "guardkit: the ledger as Lineage JSON Lines",
        None,
        {"type": "string"},
        [],
    ),
]


def _operation(
    method: str,
    path: str,
    roles: str,
    summary: str,
    body: str | None,
    result: JSONObject,
    extra: list[JSONValue],
) -> JSONObject:
    params: list[JSONValue] = [
        p for p, name in ((_AGENT_ID, "{agent_id}"), (_ACTION_ID, "{action_id}")) if name in path
    ]
    media = "application/x-ndjson" if path.endswith("/export") else "application/json"
    error: JSONObject = {"content": {"application/json": {"schema": _ref("Error")}}}
    op: JSONObject = {
        "summary": summary,
        "description": f"Roles: {roles}.",
        "parameters": params + extra,
        "responses": {
            "200": {"description": "OK", "content": {media: {"schema": result}}},
            **{code: {"description": text, **error} for code, text in _ERRORS.items()},
        },
    }
    if not roles.startswith("none"):
        op["security"] = [{"bearer": []}]
    if body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(body)}},
        }
    return op


@functools.cache
def openapi_document() -> JSONObject:
    paths: JSONObject = {
        path: {op[0]: _operation(*op) for op in _OPERATIONS if op[1] == path}
        for path in dict.fromkeys(op[1] for op in _OPERATIONS)
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "guardkit guard server (Lineage-compatible)", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": {**_SCHEMAS, **{name: _body_schema(name) for name in BODIES}},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
