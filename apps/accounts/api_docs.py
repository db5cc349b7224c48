"""The API reference page: the OpenAPI schema (the same as /api/schema/) rendered on the server.

No script and no CDN, so it works offline and under the strict CSP (script-src 'self'), unlike Swagger UI
or Redoc, which load their code from a CDN and start it with an inline script.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import View
from drf_spectacular.generators import SchemaGenerator


def _type_text(schema: dict[str, Any]) -> str:
    """A short human form of a JSON schema: `string (date-time)`, `array of Item`, `one of: a, b`."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "allOf" in schema or "oneOf" in schema or "anyOf" in schema:
        parts = schema.get("allOf") or schema.get("oneOf") or schema.get("anyOf") or []
        return " | ".join(_type_text(p) for p in parts)
    if "enum" in schema:
        return "one of: " + ", ".join(repr(v) for v in schema["enum"] if v not in ("", None))
    kind = str(schema.get("type", "object"))
    if kind == "array":
        return "array of " + _type_text(schema.get("items", {}))
    if schema.get("format"):
        kind += f" ({schema['format']})"
    if schema.get("nullable"):
        kind += ", may be null"
    return kind


def _ref_name(content: dict[str, Any]) -> list[str]:
    names = []
    for media in content.values():
        schema = media.get("schema", {})
        names.append(_type_text(schema))
    return list(dict.fromkeys(names))


def _operation(url: str, method: str, op: dict[str, Any]) -> dict[str, Any]:
    """One operation of the schema: its parameters, request bodies and responses as rows."""
    body = op.get("requestBody", {}).get("content", {})
    return {
        "id": op.get("operationId", f"{method}-{url}"),
        "method": method.upper(),
        "path": url,
        "description": op.get("description", ""),
        "parameters": [
            {
                "name": p["name"],
                "where": p["in"],
                "type": _type_text(p.get("schema", {})),
                "required": p.get("required", False),
                "description": p.get("description", ""),
            }
            for p in op.get("parameters", [])
        ],
        "request": [
            {"media": media, "type": _type_text(content.get("schema", {}))} for media, content in body.items()
        ],
        "responses": [
            {"code": code, "description": r.get("description", ""), "types": _ref_name(r.get("content", {}))}
            for code, r in sorted(op.get("responses", {}).items())
        ],
    }


def _component(name: str, comp: dict[str, Any]) -> dict[str, Any]:
    """One schema component with its fields."""
    required = set(comp.get("required", []))
    return {
        "name": name,
        "description": comp.get("description", ""),
        "type": _type_text(comp) if "properties" not in comp else "object",
        "fields": [
            {
                "name": field,
                "type": _type_text(prop),
                "required": field in required,
                "read_only": prop.get("readOnly", False),
                "description": prop.get("description", ""),
            }
            for field, prop in comp.get("properties", {}).items()
        ],
    }


def docs_context(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as plain rows for the docs template: operations grouped by tag, then the components."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for url, methods in schema.get("paths", {}).items():
        for method, op in methods.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                groups.setdefault((op.get("tags") or ["other"])[0], []).append(_operation(url, method, op))
    components = [
        _component(name, comp)
        for name, comp in sorted(schema.get("components", {}).get("schemas", {}).items())
    ]
    return {
        "info": schema.get("info", {}),
        "groups": sorted(
            groups.items(), key=lambda kv: (_ORDER.index(kv[0]) if kv[0] in _ORDER else 99, kv[0])
        ),
        "components": components,
    }


_ORDER = ["studies", "items", "imports", "codebook", "labelling", "agreement", "adjudication", "exports"]
_DOCS_CACHE: dict[str, dict[str, Any]] = {}


class ApiDocs(View):
    """The API reference as a server-rendered page: no script, no CDN, so it works offline and under the
    strict CSP. Built from the same OpenAPI schema as /api/schema/ (generated once per process)."""

    def get(self, request: HttpRequest) -> HttpResponse:
        if "context" not in _DOCS_CACHE:
            generator = SchemaGenerator()  # type: ignore[no-untyped-call]
            schema = generator.get_schema(request=None, public=True)  # type: ignore[no-untyped-call]
            _DOCS_CACHE["context"] = docs_context(schema)
        return render(request, "api/docs.html", _DOCS_CACHE["context"])
