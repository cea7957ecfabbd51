"""``categories/``: arXiv's categories, and one by its code."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.exceptions import NotFound

from papers.models import Category

from ..pagination import CategoryPagination
from ..serializers.categories import CategorySerializer
from .base import ReadView


@extend_schema_view(get=extend_schema(summary="List arXiv categories"))
class CategoryListView(ReadView, generics.ListAPIView):
    """arXiv's categories (code, name, archive, group), by code."""

    serializer_class = CategorySerializer
    pagination_class = CategoryPagination
    filter_backends: list = []
    queryset = Category.objects.order_by("code")


@extend_schema_view(
    get=extend_schema(
        summary="An arXiv category",
        parameters=[
            OpenApiParameter(
                "code",
                OpenApiTypes.STR,
                OpenApiParameter.PATH,
                description="Canonical category code (cs.CL, hep-th, math-ph).",
            )
        ],
    )
)
class CategoryDetailView(ReadView, generics.RetrieveAPIView):
    """One arXiv category by its canonical code."""

    serializer_class = CategorySerializer
    filter_backends: list = []
    queryset = Category.objects.all()
    lookup_field = "code"

    def get_object(self):
        # PostgreSQL text cannot hold NUL: no code has one, and asking would be a 500.
        if "\x00" in self.kwargs[self.lookup_field]:
            raise NotFound("No category has this code.")
        return super().get_object()
