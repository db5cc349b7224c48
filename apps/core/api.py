"""The API base every app's API builds on: the base view, the one error shape, keyset pages, the bounded
JSON parser, yes/no query parameters and the schema hooks. It imports no app.

Errors have one shape: ``{"detail": "...", "problems": ["...", ...]}`` (problems optional); input that a
serializer refuses gives DRF's ``{"field": ["message"]}`` under ``field_errors``. Lists are keyset
("cursor") paginated: ``{"next": url|null, "previous": url|null, "results": [...]}``, the cost of a page
independent of its position in a 100,000-item study.

The access check of a study's endpoints needs accounts' Study and Membership, so it is accounts':
`apps.accounts.api.StudyAPIView` and `StudyListAPIView` build on `APIBase` here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar, NoReturn

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import connection
from django.db.models import IntegerField, QuerySet
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound, ParseError, ValidationError
from rest_framework.pagination import BasePagination, Cursor, CursorPagination
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.files import lone_surrogate

# --- errors ----------------------------------------------------------------------------------------


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state of the resource."
    default_code = "conflict"


class Refused(APIException):
    """A service refused the request: bad input that only the domain can judge (400)."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    default_code = "refused"

    def __init__(self, message: str, problems: Sequence[str] = (), status_code: int | None = None) -> None:
        super().__init__(detail=message)
        self.problems = [str(p) for p in problems]
        if status_code is not None:
            self.status_code = status_code


def refuse(exc: BaseException | str, problems: Sequence[object] = (), *, status_code: int = 400) -> NoReturn:
    """Raise the API error for a service's refusal, with the service's own message (it names the problem)."""
    message = exc if isinstance(exc, str) else (getattr(exc, "message", None) or str(exc))
    raise Refused(str(message), [str(p) for p in problems], status_code=status_code)


def _messages(detail: Any, where: str = "") -> list[str]:
    if isinstance(detail, dict):
        return [
            m
            for key, value in detail.items()
            for m in _messages(value, f"{where}.{key}" if where else str(key))
        ]
    if isinstance(detail, list):
        nested = any(isinstance(v, dict | list) for v in detail)
        return [
            m
            for i, value in enumerate(detail)
            for m in _messages(value, f"{where}[{i}]" if nested else where)
        ]
    return [f"{where}: {detail}" if where and where != "non_field_errors" else str(detail)]


def validation_body(detail: Any) -> dict[str, Any]:
    """A serializer's refusal in the shared error shape; `field_errors` keeps DRF's field → messages map."""
    problems = _messages(detail)
    body: dict[str, Any] = {
        "detail": "The request is not valid: " + "; ".join(problems[:5]),
        "problems": problems,
    }
    if isinstance(detail, dict):
        body["field_errors"] = detail
    return body


def error_body(exc: APIException) -> dict[str, Any]:
    body: dict[str, Any] = {"detail": str(exc.detail)}
    problems = getattr(exc, "problems", None)
    if problems:
        body["problems"] = problems
    return body


class ErrorSerializer(serializers.Serializer[Any]):
    """The body of every refusal: what went wrong, and the single problems when there are several."""

    detail = serializers.CharField()
    problems = serializers.ListField(child=serializers.CharField(), required=False)
    field_errors = serializers.DictField(required=False, help_text="Invalid input: field → messages.")


# --- schema: every operation documents its error responses ------------------------------------------


class TaxonomistAutoSchema(AutoSchema):
    """drf-spectacular's schema plus the error responses every endpoint may give (401, 403, 404, 400 and,
    where a view declares it, 409), so clients and the Schemathesis run know every status."""

    def get_tags(self) -> list[str]:
        """Group operations by what they are about (the docs page and Swagger-like tools show groups)."""
        parts = [p for p in self.path.strip("/").split("/") if p and not p.startswith("{")]
        parts = parts[2:] if parts[:2] == ["api", "v1"] else parts
        if parts[:1] == ["studies"] and len(parts) > 1:
            parts = parts[1:]
        if parts[-1:] == ["labels"]:
            return ["adjudication"]
        return [TAGS.get(parts[0], parts[0]) if parts else "other"]

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        codes: list[int] = [400, 401, 403, 404]
        codes.extend(getattr(self.view, "extra_error_statuses", ()))
        if self.method in ("POST", "PUT", "PATCH"):
            codes.extend((413, 415))
        for code in codes:
            if str(code) not in responses:
                responses[str(code)] = self._get_response_for_code(  # type: ignore[no-untyped-call]
                    OpenApiResponse(ErrorSerializer, description=_ERROR_TEXT.get(code, "Refused.")),
                    str(code),
                    direction=direction,
                )
        return responses


TAGS = {
    "me": "studies",
    "members": "studies",
    "rounds": "labelling",
    "assignments": "labelling",
    "annotations": "labelling",
    "my": "labelling",
    "status": "adjudication",
    "disagreements": "adjudication",
    "decisions": "adjudication",
}

_ERROR_TEXT = {
    400: "Bad input: `detail` (and `problems`) say what, or DRF's field → messages.",
    401: "No valid session or token (send `Authorization: Token tx_…`).",
    403: "A member, but the role may not do this (e.g. an annotator on a lead endpoint).",
    404: "No such object among those the caller may see (non-members get 404 for a study).",
    409: "Conflict with the current state (e.g. someone else decided the item first).",
    413: "The request body is larger than the server's limit (`DATA_UPLOAD_MAX_MEMORY_SIZE`, 10 MB).",
    415: "Unsupported media type: send JSON (or multipart for uploads).",
}


# --- pagination ------------------------------------------------------------------------------------


class KeysetPagination(CursorPagination):
    """Cursor pages over a unique ordering (default ``id``; a view sets `cursor_ordering`, and for a key it
    computes, `cursor_position_pattern`, the regular expression a position must match).

    A cursor is opaque to clients but readable by anyone (base64 of ``o=…&r=…&p=…``), so a forged one is
    refused with a 400 before it reaches a query: undecodable, or a position that is not a value of the
    ordering column (a word where an id goes, an integer out of the column's range).
    """

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    ordering = "id"
    invalid_cursor_message = (
        "The page cursor is not valid: follow the `next` or `previous` link as given, "
        "or start again without `cursor`."
    )

    def get_ordering(self, request: Request, queryset: Any, view: Any) -> tuple[str, ...]:
        ordering = getattr(view, "cursor_ordering", None) or self.ordering
        return (ordering,) if isinstance(ordering, str) else tuple(ordering)

    def decode_cursor(self, request: Request) -> Cursor | None:
        try:
            return super().decode_cursor(request)
        except NotFound as exc:  # DRF answers a bad cursor with 404, as if the list did not exist
            raise Refused(self.invalid_cursor_message) from exc

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any] | None:
        cursor = self.decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            column = self.get_ordering(request, queryset, view)[0].lstrip("-")
            pattern = getattr(view, "cursor_position_pattern", None)  # a computed key's shape
            if not _is_value_of(queryset, column, str(cursor.position)) or (
                pattern is not None and not re.fullmatch(pattern, str(cursor.position))
            ):
                raise Refused(self.invalid_cursor_message)
        return super().paginate_queryset(queryset, request, view)


def _is_value_of(queryset: QuerySet[Any], column: str, position: str) -> bool:
    """Whether `position` (a cursor's text) is a value the ordering `column` can hold."""
    field = queryset.all().query.resolve_ref(column).output_field
    try:
        value = field.to_python(position)
    except (DjangoValidationError, ValueError, TypeError):
        return False
    if isinstance(field, IntegerField):
        low, high = connection.ops.integer_field_range(field.get_internal_type())
        return bool((low is None or value >= low) and (high is None or value <= high))
    return True


# --- request bodies and query parameters ----------------------------------------------------------

MAX_JSON_DEPTH = 64  # the deepest codebook file (a 20-level category tree) nests 45 deep


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, refusing (400) a body nested deeper than `MAX_JSON_DEPTH` before any handler
    walks it: a few kilobytes of ``[[[[…`` would otherwise end in a RecursionError (500). A text holding
    half of a UTF-16 surrogate pair (``"\\ud83d"``: JSON.stringify writes a string cut in the middle of an
    emoji so) is refused too, naming where: no UTF-8 column can hold it, and a codebook's names, which
    no text field's check sees, failed the write with a 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            data = None
        else:
            if _depth(data) <= MAX_JSON_DEPTH:
                if (half := lone_surrogate(data)) is not None:
                    where, char = half
                    raise ParseError(
                        f"JSON parse error - {where or 'the body'}: half of a UTF-16 surrogate pair "
                        f"(U+{ord(char):04X}); the text was cut in the middle of a character."
                    )
                return data
        raise ParseError(f"JSON parse error - the body is nested deeper than {MAX_JSON_DEPTH} levels.")


def _depth(data: Any) -> int:
    """How deep lists and objects nest in parsed JSON (a scalar: 0), without recursion."""
    deepest = 0
    stack = [(data, 1)]
    while stack:
        value, level = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level <= MAX_JSON_DEPTH:  # deeper than the limit is refused whatever lies below
            stack.extend((child, level + 1) for child in children)
    return deepest


class QueryFlag(serializers.BooleanField):
    """A yes/no query parameter, the one parser of them all: ``true``/``false`` (also ``1``/``0``,
    ``yes``/``no``, ``on``/``off``, any case). Any other value, the empty one included, is a 400 naming
    it, never read as ``false``: ``?dry_run=maybe`` must not write."""

    default_error_messages = {"invalid": "Must be true or false, not {input!r}."}

    def get_value(self, dictionary: Any) -> Any:
        if self.field_name in dictionary:  # present but empty is refused, not taken as absent
            return dictionary[self.field_name]
        return super().get_value(dictionary)


def query_flag(request: Request, name: str, *, default: bool = False) -> bool:
    """The yes/no query parameter `name` (see `QueryFlag`); `default` when absent."""
    if name not in request.query_params:
        return default
    try:
        return bool(QueryFlag().run_validation(request.query_params[name]))
    except ValidationError as exc:
        raise ValidationError({name: exc.detail}) from exc


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


def _as_api_error(exc: Exception) -> Exception:
    """Django's refusals of a request's body, raised while DRF reads it, as API errors (JSON, not the
    HTML error page): too large (413), too many fields or files (400)."""
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return PayloadTooLarge(
            f"The request body is larger than the limit of {limit // (1024 * 1024)} MB ({limit} bytes): "
            "send files as multipart uploads, or in smaller parts."
        )
    if isinstance(exc, SuspiciousOperation):
        return ParseError(f"The request was refused: {exc}")
    return exc


# --- the base views --------------------------------------------------------------------------------


class APIBase(APIView):
    """The base of every API view: signed in (401/403 otherwise), keyset pages, bounded JSON bodies, the
    one error shape and the schema's error responses.

    Authentication is REST_FRAMEWORK's ``DEFAULT_AUTHENTICATION_CLASSES`` (config/settings.py, dotted paths,
    so core names no app): the token first, so an anonymous request gets 401 with
    ``WWW-Authenticate: Token``, then the session (DRF enforces CSRF on a session-authenticated unsafe
    request). Views inside a study build on accounts' `StudyAPIView`, which adds the access check."""

    permission_classes = [IsAuthenticated]
    pagination_class: type[BasePagination] | None = KeysetPagination
    parser_classes = [BoundedJSONParser, FormParser, MultiPartParser]
    schema = TaxonomistAutoSchema()
    extra_error_statuses: ClassVar[tuple[int, ...]] = ()

    def handle_exception(self, exc: Exception) -> Response:
        exc = _as_api_error(exc)
        response = super().handle_exception(exc)
        if isinstance(exc, ValidationError):
            response.data = validation_body(exc.detail)
        elif isinstance(exc, APIException) and isinstance(exc.detail, str | serializers.ErrorDetail):
            response.data = error_body(exc)
        return response


@csrf_exempt  # it changes nothing; a POST to a mistyped path gets the JSON 404, not the CSRF page
def api_not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Any /api/v1/ path that matches no endpoint: a JSON 404 like every other API error, not a page."""
    return JsonResponse({"detail": f"No API endpoint at {request.path}."}, status=404)
