"""``papers/``: the paper list (filtered, cursor-paginated), one paper, its authors page by
page, its similar papers, and one paper as BibTeX. Thin views over ``api.selectors``."""

from __future__ import annotations

from django.db import connection
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import generics
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from papers.author_selectors import affiliations_newest_paper_ids, authors_newest_paper_ids
from papers.category_selectors import category_newest_paper_ids, category_paper_count_capped
from papers.embeddings.similar import SIMILAR_COUNT, similar_ranked
from papers.models import Authorship, Paper, PaperAffiliation
from topics.search import newest_matches_range, words_together_factor
from topics.tagging.rules import parse_query
from topicsite.planner import planner_rows, planner_table_rows

from .. import exports
from ..facets import (
    GROUP_BY_DESCRIPTION,
    GROUP_BY_KEYS,
    GROUP_BY_PARAM,
    FacetedCursorPagination,
    capped_count,
    checked_group_by,
    group_counts,
    linked_count,
    list_count,
)
from ..filters import (
    NAME_FILTERS,
    Alternatives,
    PaperFilter,
    PaperFilterBackend,
    PaperOrderingFilter,
    name_ids_matching,
    name_links,
    submitted_range,
)
from ..pagination import PageNumberPagination
from ..selectors import (
    InvalidDoi,
    PaperNotFound,
    authorships_of,
    paper_by_api_id,
    paper_by_doi,
    paper_rows,
    papers_in_order,
    rows_last_modified,
    rows_of,
)
from ..serializers.papers import PaperAuthorSerializer, PaperSerializer, SimilarPaperSerializer
from ..strict import StrictQueryParamsMixin
from .base import FIELDS_PARAMETER, ReadView, StreamAnyAccept, export_filename, streamed_response

PAPER_ID_PARAMETER = OpenApiParameter(
    "paper_id",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description="arXiv identifier in any spelling (2401.01234, 2401.01234v2, hep-th/9901001v1, "
    "arXiv:2401.01234, an abs or pdf URL, the arXiv DOI 10.48550/arXiv.2401.01234), or "
    "local:<n> for a paper not on arXiv.",
)
# The most authors (affiliations) ``papers/?author=`` (``affiliation=``) walks newest first
# one by one (an index range scan each, a page and one paper at most); a name matching more
# (a syllable, a letter) matches papers densely enough that the planner's walk down the
# newest papers finds a page sooner.
AUTHOR_WALK_MAX = 200
# How many times wider ``papers/?q=`` looks among the newest papers when the first range held
# fewer than a page (black hole at 1M papers in the bench_api corpus: 14 matches among the
# newest 1,549 papers where an even spread puts 52).
NEWEST_RANGE_WIDENING = 8
GROUP_BY_PARAMETER = OpenApiParameter(
    GROUP_BY_PARAM,
    OpenApiTypes.STR,
    enum=list(GROUP_BY_KEYS),
    description=GROUP_BY_DESCRIPTION,
)


class PaperListBase(ReadView, generics.ListAPIView):
    serializer_class = PaperSerializer
    filter_backends = [PaperFilterBackend, PaperOrderingFilter]
    filterset_class = PaperFilter
    pagination_class = FacetedCursorPagination
    extra_query_params = (GROUP_BY_PARAM,)

    def list(self, request, *args, **kwargs):
        # get_queryset gives paper rows (api.selectors.paper_rows): one query for the page on
        # PostgreSQL; then the count (two at most) and the facet (one) over the same filters.
        group_by = checked_group_by(request)
        filtered = self.filter_queryset(self.get_queryset())
        page = rows_of(self.paginate_queryset(self.page_queryset(filtered)))
        self.last_modified = rows_last_modified(page)
        self.paginator.meta = self.list_meta(filtered)
        self.paginator.group_by = None if group_by is None else group_counts(filtered, group_by)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def page_queryset(self, filtered):
        """The rows the paginator cuts the page from: ``filtered`` itself, or (a subclass
        that can find the page faster) a narrower queryset holding at least the page's rows
        and the one after it, in the same order."""
        return filtered

    def list_meta(self, filtered) -> dict:
        """``meta`` of the answer (``api.facets.list_count`` of the papers of ``filtered``,
        filtered again where a filter counts faster, or is estimated better, in another form:
        ``category``, ``api.filters.PaperFilter.filter_category``). Above the exact count,
        the planner's estimate is raised for words of ``q`` that go together
        (``topics.search.words_together_factor``: ``black hole`` was estimated at 1,371 of
        its 30,558 papers), at most to every paper."""
        return list_count(
            self.count_queryset(filtered, "count"), estimate=lambda: self.estimate(filtered)
        )

    def estimate(self, filtered) -> float:
        """The planner's estimate of how many papers ``filtered`` holds, in the form it
        estimates best (:meth:`list_meta`)."""
        papers = self.count_queryset(filtered, "estimate").order_by().values("id")
        estimated = planner_rows(papers)
        if self._q_tree() is not None and connection.vendor == "postgresql":
            estimated *= self._words_together()
            estimated = min(estimated, planner_table_rows(Paper, using=papers.db))
        return estimated

    def _unfiltered(self) -> bool:
        """Whether the request filters by nothing (any order)."""
        params = self.request.query_params
        return not any(params.get(name) for name in PaperFilter.base_filters)

    def _newest_first_forwards(self) -> bool:
        """Whether the request pages newest first (``ordering`` left at ``-submitted``) and
        forwards (no ``previous`` cursor): the order the newest-first index walks give."""
        if self.request.query_params.get("ordering", "-submitted") != "-submitted":
            return False
        return not getattr(self.paginator.decode_cursor(self.request), "reverse", False)

    def _q_tree(self):
        """The request's ``q`` parsed (``topics.tagging.rules.parse_query``; the filter has
        refused one that does not parse), or None without one."""
        if not hasattr(self, "_q_tree_found"):
            q = (self.request.query_params.get("q") or "").strip()
            self._q_tree_found = parse_query(q) if q else None
        return self._q_tree_found

    def _words_together(self) -> float:
        """``topics.search.words_together_factor`` of ``q``, asked once for the page and the
        count of a request (a few ``EXPLAIN`` s)."""
        if not hasattr(self, "_words_together_found"):
            self._words_together_found = words_together_factor(self._q_tree())
        return self._words_together_found

    def count_queryset(self, filtered, purpose: str = "count"):
        """``filtered`` (the list's papers), or the same papers filtered for ``purpose``
        (``PaperFilter.purpose``: ``"count"`` or ``"estimate"``) when the request filters by
        ``category``."""
        if not self.request.query_params.get("category"):
            return filtered
        filterset = self.filterset_class(
            self.request.query_params, queryset=self.get_queryset(), request=self.request
        )
        filterset.purpose = purpose
        if not filterset.is_valid():  # the page's filtering already answered a 400
            return filtered
        return filterset.qs


# The filters a category list may carry and still be walked (PaperListView._walked_categories).
CATEGORY_WALK_DATES = ("submitted", "submitted_after", "submitted_before")


@extend_schema_view(
    get=extend_schema(
        summary="List papers",
        description="Papers, newest submitted first, filtered and cursor-paginated: follow "
        "`next` until it is null. Stable while new papers arrive. `meta.count` counts the "
        "filtered papers; `group_by` gives facets.",
        parameters=[FIELDS_PARAMETER, GROUP_BY_PARAMETER],
    )
)
class PaperListView(PaperListBase):
    def get_queryset(self):
        return paper_rows()

    def _name_filter(self) -> tuple[str, Alternatives] | None:
        """``(name, value)`` when the request's only filter is one text filter on names
        (``author`` or ``affiliation``, :data:`api.filters.NAME_FILTERS`) without ``!``; else
        None. Its value was already checked by the filter backend."""
        if not hasattr(self, "_name_filter_found"):
            params = self.request.query_params
            used = [name for name in PaperFilter.base_filters if params.get(name)]
            found = None
            if len(used) == 1 and used[0] in NAME_FILTERS:
                value = PaperFilter.base_filters[used[0]].field.clean(params[used[0]])
                if value is not None and not value.negated:
                    found = (used[0], value)
            self._name_filter_found = found
        return self._name_filter_found

    def _walked_names(self) -> list[int] | None:
        """The ids of the authors ``author=`` (the affiliations ``affiliation=``) matches when
        the page can come from their newest-first index walks: the filter alone, newest
        first, forwards, at most :data:`AUTHOR_WALK_MAX` of them (one query to find them);
        else None."""
        if not hasattr(self, "_walked_names_found"):
            found = None
            name = self._name_filter()
            # The ordering first: a cursor is read in the ordering it was made for.
            if name is not None and self._newest_first_forwards():
                ids = name_ids_matching(*name, limit=AUTHOR_WALK_MAX + 1)
                found = ids if len(ids) <= AUTHOR_WALK_MAX else None
            self._walked_names_found = found
        return self._walked_names_found

    def _walked_categories(self) -> dict | None:
        """``{"category_ids", "since", "until"}`` (``papers.category_selectors``' arguments)
        when the request filters by ``category`` without ``!`` and otherwise by submitted
        dates only (``submitted``, ``submitted_after``, ``submitted_before``), on
        PostgreSQL; else None (also for a date range past the calendar's ends, which the
        ORM's filters answer). The values were already checked by the filter backend."""
        if not hasattr(self, "_walked_categories_found"):
            self._walked_categories_found = None
            params = self.request.query_params
            used = {name for name in PaperFilter.base_filters if params.get(name)}
            if (
                connection.vendor == "postgresql"
                and "category" in used
                and used <= {"category", *CATEGORY_WALK_DATES}
            ):
                filterset = self.filterset_class(params, request=self.request)
                # Valid (the filter backend answered a 400 otherwise); a blank value, such as
                # a category of spaces, cleans to None and filters nothing.
                cleaned = filterset.form.cleaned_data if filterset.is_valid() else {}
                if cleaned.get("category") is not None and not cleaned["category"].negated:
                    try:
                        since, until = submitted_range(cleaned)
                    except OverflowError:
                        pass
                    else:
                        self._walked_categories_found = {
                            "category_ids": [c.pk for c in cleaned["category"].values],
                            "since": since,
                            "until": until,
                        }
        return self._walked_categories_found

    def filter_purpose(self) -> str:
        """What the filtered papers are read for (``PaperFilter.purpose``): ``"unread"`` when
        a category walk gives the page and the count (:meth:`page_queryset`,
        :meth:`list_meta`) and no facet is asked for, so the category filter costs no
        estimate of its forms; else ``"page"``."""
        walked = self._walked_categories() is not None and self._newest_first_forwards()
        if walked and self.request.query_params.get(GROUP_BY_PARAM) is None:
            return "unread"
        return "page"

    def page_queryset(self, filtered):
        """``author=`` (``affiliation=``) alone, newest first, forwards, few matching names:
        the page and the paper after it from ``papers.author_selectors``'
        ``authors_newest_paper_ids`` (``affiliations_newest_paper_ids``) after the cursor's
        position (one index range scan per name, ``page_size + 1`` rows each at most,
        instead of fetching every paper of the names to sort them), then read by id.
        ``category=`` (with submitted dates or alone) newest first, forwards: the same from
        ``papers.category_selectors.category_newest_paper_ids`` (two index range scans per
        category). ``q=`` newest first, forwards: see :meth:`_newest_matches`. Otherwise
        ``filtered``."""
        categories = self._walked_categories()
        if categories is not None and self._newest_first_forwards():
            ids = category_newest_paper_ids(
                **categories,
                limit=self.paginator.get_page_size(self.request) + 1,
                before=self.paginator.newest_before(self.request),
            )
            return paper_rows().filter(id__in=ids)
        name_ids = self._walked_names()
        if name_ids is None:
            return self._newest_matches(filtered)
        limit = self.paginator.get_page_size(self.request) + 1
        before = self.paginator.newest_before(self.request)
        if self._name_filter()[0] == "author":
            ids = authors_newest_paper_ids(author_ids=name_ids, limit=limit, before=before)
        else:
            ids = affiliations_newest_paper_ids(
                affiliation_ids=name_ids, limit=limit, before=before
            )
        return paper_rows().filter(id__in=ids)

    def _newest_matches(self, filtered):
        """``q=`` newest first, forwards, on PostgreSQL: the page and the paper after it looked
        for among the newest papers after the cursor's position first, when
        ``topics.search.newest_matches_range`` says a date floor there is cheaper than every
        match (two queries: the floor's date, the ids; two more when the range, widened
        :data:`NEWEST_RANGE_WIDENING` times, must be read again), then read by id;
        ``filtered`` when even that range holds fewer, or otherwise. PostgreSQL's own plan
        read every match of words that go together (``black hole``: 30,000 at 1M papers,
        138 ms) to keep a page."""
        tree = self._q_tree()
        if tree is None or connection.vendor != "postgresql" or not self._newest_first_forwards():
            return filtered
        limit = self.paginator.get_page_size(self.request) + 1
        recent = newest_matches_range(filtered, limit, tree, self._words_together())
        if recent is None:
            return filtered
        after = self.paginator.newest_after(self.request)
        # Matches are not spread evenly over time (the newest weeks hold fewer): a range
        # short of a page is widened once before every match is read.
        for widened in (recent, recent * NEWEST_RANGE_WIDENING):
            since = (
                Paper.objects.filter(after)
                .order_by("-submitted", "-id")
                .values_list("submitted", flat=True)[widened : widened + 1]
                .first()
            )
            if since is None:  # fewer papers than the range: read them all
                return filtered
            ids = list(
                filtered.filter(after, submitted__gte=since)
                .order_by("-submitted", "-id")
                .values_list("id", flat=True)[:limit]
            )
            if len(ids) == limit:
                return paper_rows().filter(id__in=ids)
        return filtered

    def list_meta(self, filtered) -> dict:
        """A name filter alone: counted from its authorships or paper affiliations
        (``api.facets.linked_count``). ``category=`` with submitted dates or alone: counted
        from the categories' index ranges (``papers.category_selectors``), up to the exact
        limit; above it the planner's estimate (:meth:`estimate`). Else the count of
        ``filtered``."""
        categories = self._walked_categories()
        if categories is not None:
            return capped_count(
                lambda cap: category_paper_count_capped(**categories, cap=cap),
                lambda: self.estimate(filtered),
            )
        name = self._name_filter()
        if name is None:
            return super().list_meta(filtered)
        name_ids = self._walked_names()
        if name_ids is None:
            links = name_links(*name)
        elif name[0] == "author":
            links = Authorship.objects.filter(author_id__in=name_ids)
        else:
            links = PaperAffiliation.objects.filter(affiliation_id__in=name_ids)
        return linked_count(filtered, links)


@extend_schema(
    summary="A paper",
    parameters=[PAPER_ID_PARAMETER, FIELDS_PARAMETER],
    responses={200: PaperSerializer},
)
class PaperDetailView(ReadView):
    """One paper by its arXiv identifier (any version: 2401.01234v2 resolves to the paper;
    old-style ids like hep-th/9901001 too), or ``local:<n>`` for a paper from outside arXiv.
    Answers 304 to a matching If-None-Match."""

    serializer_class = PaperSerializer

    def get(self, request, paper_id):
        try:
            paper = paper_by_api_id(paper_id, paper_rows())
        except PaperNotFound as error:
            raise NotFound(str(error)) from None
        (row,) = rows_of([paper])
        self.last_modified = row["last_modified"]
        return Response(self.get_serializer(row).data)


@extend_schema(
    summary="A paper by DOI",
    description="The paper with this DOI, as OpenAlex's /works/doi:…: `doi` is bare "
    "(10.1103/PhysRevD.93.016005), `doi:…` or a doi.org URL, in any case. The arXiv DOI "
    "(10.48550/arXiv.<arXiv id>) resolves to that arXiv paper; any other DOI is looked up "
    "among the papers' journal DOIs (the lowest id first when several carry it). A malformed "
    "DOI is a 400 naming `doi`, an unknown one a 404.",
    parameters=[
        OpenApiParameter(
            "doi",
            OpenApiTypes.STR,
            OpenApiParameter.PATH,
            description="A DOI: 10.<registrant>/<suffix>, optionally doi: or https://doi.org/ "
            "before it.",
        ),
        FIELDS_PARAMETER,
    ],
    responses={200: PaperSerializer},
)
class PaperByDoiView(ReadView):
    serializer_class = PaperSerializer

    def get(self, request, doi):
        try:
            paper = paper_by_doi(doi, paper_rows())
        except InvalidDoi as error:
            raise ValidationError({"doi": [str(error)]}) from None
        except PaperNotFound as error:
            raise NotFound(str(error)) from None
        (row,) = rows_of([paper])
        self.last_modified = row["last_modified"]
        return Response(self.get_serializer(row).data)


@extend_schema(
    summary="Similar papers",
    description=f"The {SIMILAR_COUNT} papers nearest in meaning to this one (cosine similarity "
    "of their sentence embeddings, best first, as `score`), neither withdrawn nor deleted, the "
    "paper itself left out. `results` is empty while the paper has no embedding yet.",
    parameters=[PAPER_ID_PARAMETER, FIELDS_PARAMETER],
    responses={
        200: inline_serializer(
            "SimilarPapers", fields={"results": SimilarPaperSerializer(many=True)}
        )
    },
)
class PaperSimilarView(ReadView):
    serializer_class = SimilarPaperSerializer

    def get(self, request, paper_id):
        try:
            paper = paper_by_api_id(paper_id, Paper.objects.all())
        except PaperNotFound as error:
            raise NotFound(str(error)) from None
        rows = papers_in_order(similar_ranked(paper.pk))
        self.last_modified = rows_last_modified(rows)
        return Response({"results": self.get_serializer(rows, many=True).data})


@extend_schema(summary="A paper's authors", parameters=[PAPER_ID_PARAMETER])
class PaperAuthorsView(ReadView, generics.ListAPIView):
    """Every author of a paper in order, with their affiliations, page by page (``page``,
    ``page_size`` up to 100): a paper response lists only its first authors."""

    serializer_class = PaperAuthorSerializer
    pagination_class = PageNumberPagination

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular building the schema
            return Authorship.objects.none()
        try:
            paper = paper_by_api_id(self.kwargs["paper_id"], Paper.objects.all())
        except PaperNotFound as error:
            raise NotFound(str(error)) from None
        self.last_modified = paper.updated_at
        return authorships_of(paper)


@extend_schema(
    summary="A paper as BibTeX",
    parameters=[PAPER_ID_PARAMETER],
    responses={(200, "application/x-bibtex"): OpenApiTypes.STR},
)
class PaperBibtexView(StrictQueryParamsMixin, generics.GenericAPIView):
    content_negotiation_class = StreamAnyAccept

    def get(self, request, paper_id):
        try:
            paper = paper_by_api_id(paper_id)
        except PaperNotFound as error:
            raise NotFound(str(error)) from None
        return streamed_response(
            exports.bibtex_lines([paper]),
            content_type=exports.BIBTEX_CONTENT_TYPE,
            filename=export_filename(paper.arxiv_id or f"local-{paper.pk}") + ".bib",
        )


AFTER_PARAM = "after"


@extend_schema(
    summary="Every paper as JSON lines (bulk export, resumable)",
    description="The whole corpus, or the papers the filters of `/papers/` select, streamed as "
    "JSON lines: one paper per line, as `/papers/{paper_id}/` shows it (topics included), in "
    "the order the site stored them, withdrawn and deleted papers included and marked so. "
    "Nothing to page through: one request streams everything.\n\n"
    "**Resuming.** An interrupted download ends in a line without its newline: drop it, and "
    "ask again with `after` set to the `id` of the last complete line; the new download "
    "starts with the paper stored after that one. Asking with the `id` of the last line of a "
    "finished download gives only the papers stored since (an incremental update); "
    "`updated_after` also brings back older papers that changed. `ordering` is refused: the "
    "stored order is what makes resuming exact.",
    parameters=[
        OpenApiParameter(
            AFTER_PARAM,
            OpenApiTypes.STR,
            description="The `id` of the last paper already received (any spelling "
            "`/papers/{paper_id}/` takes). An id no paper has is a 400 naming `after`.",
        )
    ],
    responses={(200, "application/jsonl"): OpenApiTypes.STR},
)
class PaperBulkExportView(StrictQueryParamsMixin, generics.GenericAPIView):
    content_negotiation_class = StreamAnyAccept
    filter_backends = [DjangoFilterBackend]
    filterset_class = PaperFilter
    pagination_class = None
    extra_query_params = (AFTER_PARAM,)

    def get_queryset(self):
        return paper_rows()

    def get(self, request):
        # No ordering parameter (api.strict refuses one): the export is in stored order, which
        # ``after`` resumes.
        after = None
        if AFTER_PARAM in request.query_params:
            try:
                after = paper_by_api_id(
                    request.query_params[AFTER_PARAM], queryset=Paper.objects.only("pk")
                ).pk
            except PaperNotFound as error:
                raise ValidationError({AFTER_PARAM: [str(error)]}) from None
        rows = self.filter_queryset(self.get_queryset())
        context = {**self.get_serializer_context(), "select_fields": False}
        return streamed_response(
            exports.bulk_jsonl_lines(
                rows, after=after, serializer_class=PaperSerializer, context=context
            ),
            content_type=exports.JSONL_CONTENT_TYPE,
            filename="papers.jsonl",
        )
