"""Strict query parameters: every ``/api/v1/`` view answers 400 (``invalid_parameter``) when
the query string holds a parameter the view does not read, or repeats one that may not be
repeated, instead of silently ignoring it (and answering for the whole corpus).

A view's allowed parameters are its filterset's filters (with a range widget's suffixes) ∪ its
pagination's parameters (``cursor``, ``page``, ``page_size``) ∪ ``format`` ∪ ``ordering`` when
an ordering filter is among its filter backends ∪ ``fields`` when its serializer selects fields
(``api.serializers.base.SelectableFieldsMixin``) ∪ the view's ``extra_query_params`` (a tuple
of names it reads itself). Names in ``repeatable_query_params`` may be given more than once.
The error's ``details`` name each unknown parameter (with the allowed ones) and each repeated
one. ``fields=`` is checked before the handler runs, so an empty page or a single object
answers the same 400 for a name the resource does not have (or for ``fields=`` naming none).
"""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.filters import OrderingFilter

from .serializers.base import FIELDS_PARAM, SelectableFieldsMixin

COMMON_QUERY_PARAMS = ("format",)


def _filterset_params(view) -> set[str]:
    filterset_class = getattr(view, "filterset_class", None)
    if filterset_class is None:
        return set()
    names = set()
    for name, filter_ in filterset_class.base_filters.items():
        names.add(name)
        suffixes = getattr(filter_.field_class.widget, "suffixes", None) or ()
        names.update(f"{name}_{suffix}" if suffix else name for suffix in suffixes)
    return names


def _pagination_params(view) -> set[str]:
    pagination_class = getattr(view, "pagination_class", None)
    if pagination_class is None:
        return set()
    attrs = ("cursor_query_param", "page_query_param", "page_size_query_param")
    attrs += ("limit_query_param", "offset_query_param")
    return {
        value for attr in attrs if isinstance(value := getattr(pagination_class, attr, None), str)
    }


def _reads_ordering(view) -> bool:
    backends = getattr(view, "filter_backends", None) or ()
    return any(isinstance(b, type) and issubclass(b, OrderingFilter) for b in backends)


def _selects_fields(view) -> bool:
    serializer_class = getattr(view, "serializer_class", None)
    return isinstance(serializer_class, type) and issubclass(
        serializer_class, SelectableFieldsMixin
    )


def allowed_query_params(view) -> frozenset[str]:
    """Every query parameter ``view`` reads (see the module docstring)."""
    return frozenset(
        _filterset_params(view)
        | _pagination_params(view)
        | set(COMMON_QUERY_PARAMS)
        | ({"ordering"} if _reads_ordering(view) else set())
        | ({FIELDS_PARAM} if _selects_fields(view) else set())
        | set(getattr(view, "extra_query_params", ()))
    )


def check_selected_fields(view, request) -> None:
    """Raise a 400 ``ValidationError`` when ``fields=`` names a field ``view``'s serializer
    does not have, or names none (``fields=,``); nothing without ``fields=`` or for a view
    whose serializer selects no fields."""
    if FIELDS_PARAM not in request.query_params or not _selects_fields(view):
        return
    serializer = view.get_serializer_class()(context=view.get_serializer_context())
    if serializer.get_field_names_selected() == []:
        raise exceptions.ValidationError(
            {FIELDS_PARAM: ["Name at least one field, separated by commas (e.g. id,title)."]}
        )
    serializer.selected_field_names()


def check_query_params(view, request) -> None:
    """Raise a 400 ``ValidationError`` naming each unknown or wrongly repeated parameter of
    ``request``'s query string; return ``None`` when all are fine."""
    allowed = allowed_query_params(view)
    repeatable = set(getattr(view, "repeatable_query_params", ()))
    details: dict[str, list[str]] = {}
    listed = ", ".join(sorted(allowed))
    for name, values in request.query_params.lists():
        if name not in allowed:
            details[name] = [f"Unknown parameter {name!r}; this endpoint takes: {listed}."]
        elif len(values) > 1 and name not in repeatable:
            details[name] = [f"{name!r} may be given only once; got it {len(values)} times."]
    if details:
        raise exceptions.ValidationError(details)


class StrictQueryParamsMixin:
    """Checks the query string (:func:`check_query_params`) after authentication, permission
    and throttle checks, before the handler runs."""

    extra_query_params: tuple[str, ...] = ()
    repeatable_query_params: tuple[str, ...] = ()

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        check_query_params(self, request)
        check_selected_fields(self, request)
